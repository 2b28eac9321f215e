/**
 * A server tool's JSON Schema 2020-12 reaches the model as the server wrote it: a loopback
 * Streamable HTTP server (the SDK's low-level `Server`, which sends a schema untouched) lists a
 * tool whose `inputSchema` uses the 2020-12 vocabulary, and a session on the scripted model
 * records the tool definitions the model was sent.
 */
import { assert, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as http from "node:http"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Agent, Session } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { McpServer } from "../src/index.ts"

/** Every 2020-12 keyword a client could strip on its way to the model (SEP-1613, SEP-2106). */
const schema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  $id: "https://example.test/schemas/order",
  type: "object",
  $defs: {
    address: { $anchor: "addressDef", type: "object", properties: { street: { type: "string" }, city: { type: "string" } } },
    sku: { type: "string", pattern: "^[A-Z]{3}-\\d+$" }
  },
  properties: {
    name: { type: "string", minLength: 1 },
    address: { $ref: "#/$defs/address" },
    line: { type: "array", prefixItems: [{ $ref: "#/$defs/sku" }, { type: "integer", minimum: 1 }], items: false },
    tags: { type: "array", items: { type: "string" }, contains: { const: "urgent" }, minContains: 0, uniqueItems: true },
    contactMethod: { type: "string", enum: ["phone", "email"] },
    phone: { type: "string" },
    email: { type: "string", format: "email" },
    extra: { type: "object", propertyNames: { pattern: "^x-" }, patternProperties: { "^x-": { type: "string" } } }
  },
  required: ["name"],
  dependentRequired: { phone: ["contactMethod"] },
  dependentSchemas: { email: { properties: { contactMethod: { const: "email" } } } },
  allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
  if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
  then: { required: ["phone"] },
  else: { required: ["email"] },
  unevaluatedProperties: false
}

const server = Effect.acquireRelease(
  Effect.callback<http.Server>((resume) => {
    const httpServer = http.createServer((req, res) => {
      const mcp = new Server({ name: "orders", version: "1.0.0" }, { capabilities: { tools: {} } })
      mcp.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: "place_order", description: "Places an order", inputSchema: schema }] }))
      mcp.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: "text", text: "placed" }] }))
      const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true })
      void mcp.connect(transport).then(() => transport.handleRequest(req, res))
    })
    httpServer.listen(0, "127.0.0.1", () => resume(Effect.succeed(httpServer)))
  }),
  (httpServer) => Effect.callback<void>((resume) => {
    httpServer.closeAllConnections()
    httpServer.close(() => resume(Effect.void))
  })
)

it.live("a tool's 2020-12 schema reaches the model whole: $schema, $defs, prefixItems, dependentRequired, if/then/else, unevaluatedProperties", () =>
  Effect.gen(function*() {
    const listening = yield* server
    const { port } = listening.address() as { port: number }
    const orders = McpServer.http({ name: "orders", url: `http://127.0.0.1:${port}/mcp` })
    const agent = Agent.make({ name: "clerk", model: "test:x", mcpServers: [orders] })
    const session = yield* Session.start(agent)
    yield* Stream.runDrain(session.stream("order"))
    const requests = yield* (yield* TestModel.TestModel).requests
    const sent = requests[0]!.tools.find((tool) => tool.name === "orders.place_order")
    assert.deepStrictEqual(sent?.parameters, schema)
  }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.text("done")])), Effect.provide(Condukt.layer)))

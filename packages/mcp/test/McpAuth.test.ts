import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import { McpServer as SdkServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { Secret } from "@condukt/core"
import { ScriptedProcesses, TestModel } from "@condukt/testing"
import { McpAuth, McpClient, McpError, McpServer } from "../src/index.ts"
import { results, runWith } from "./support.ts"

/** A loopback Streamable HTTP server (stateless) that accepts only the tokens in `accept`, and a token endpoint. */
const protectedServer = Effect.acquireRelease(
  Effect.callback<{ url: string; seen: Array<string>; issued: Array<string>; accept: Set<string>; server: http.Server }>((resume) => {
    const seen: Array<string> = []
    const issued: Array<string> = []
    const accept = new Set<string>()
    const server = http.createServer((req, res) => {
      if (req.url === "/token") {
        const token = `token-${issued.length + 1}`
        issued.push(req.headers.authorization ?? "")
        accept.add(token)
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ access_token: token, token_type: "Bearer" }))
        return
      }
      const token = (req.headers.authorization ?? "").replace(/^Bearer /, "")
      seen.push(token)
      if (!accept.has(token)) {
        res.writeHead(401).end()
        return
      }
      const mcp = new SdkServer({ name: "protected", version: "1.0.0" })
      mcp.registerTool("whoami", { description: "Who the caller is" }, () => ({ content: [{ type: "text", text: `caller with ${token}` }] }))
      const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true })
      void mcp.connect(transport).then(() => transport.handleRequest(req, res))
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as { port: number }
      resume(Effect.succeed({ url: `http://127.0.0.1:${address.port}`, seen, issued, accept, server }))
    })
  }),
  ({ server }) => Effect.callback<void>((resume) => {
    server.closeAllConnections()
    server.close(() => resume(Effect.void))
  })
)

describe("McpAuth", () => {
  it.live("bearer: the server sees the token from a secret ref", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      srv.accept.add("s3cret-token")
      const { events } = yield* runWith(
        [McpServer.http({ name: "p", url: `${srv.url}/mcp`, auth: McpAuth.bearer(Secret.static("s3cret-token")) })],
        [TestModel.toolCall("p.whoami", {}), TestModel.text("done")]
      )
      // The token is the server's credential: echoed back, it is redacted.
      assert.deepStrictEqual(results(events), [{ name: "p.whoami", content: "caller with [REDACTED:p.bearer_token]", isError: false }])
      assert.isTrue(srv.seen.length > 0 && srv.seen.every((token) => token === "s3cret-token"))
    }).pipe(Effect.scoped))

  it.live("client credentials: a token fetched once, cached, fetched again once on a 401", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      const auth = McpAuth.clientCredentials({ tokenUrl: `${srv.url}/token`, clientId: "app", clientSecret: "shh", scope: "tools" })
      const { events } = yield* runWith([McpServer.http({ name: "p", url: `${srv.url}/mcp`, auth })], [
        TestModel.toolCall("p.whoami", {}),
        TestModel.text("done")
      ])
      // The access token is a credential of the server's too.
      assert.deepStrictEqual(results(events), [{ name: "p.whoami", content: "caller with [REDACTED:p.access_token]", isError: false }])
      // One token for the handshake, the listing and the call; HTTP Basic client authentication.
      assert.deepStrictEqual(srv.issued, [`Basic ${Buffer.from("app:shh").toString("base64")}`])
    }).pipe(Effect.scoped))

  it.live("client credentials: a revoked token is replaced once and the request sent again", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      const auth = McpAuth.clientCredentials({ tokenUrl: `${srv.url}/token`, clientId: "app", clientSecret: "shh" })
      const { session } = yield* runWith([McpServer.http({ name: "p", url: `${srv.url}/mcp`, auth })], [
        TestModel.text("connected"),
        TestModel.toolCall("p.whoami", {}),
        TestModel.text("done")
      ])
      srv.accept.delete("token-1")
      const second = yield* session.run("again")
      assert.deepStrictEqual(
        second.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])),
        ["caller with [REDACTED:p.access_token_2]"]
      )
      assert.strictEqual(srv.issued.length, 2)
    }).pipe(Effect.scoped))

  it.live("client credentials: a token endpoint that refuses fails the connection with TokenRequestFailed", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      // The MCP endpoint answers 401 to the token request (its Basic credentials are no token).
      const tokenUrl = `${srv.url}/mcp`
      const auth = McpAuth.clientCredentials({ tokenUrl, clientId: "app", clientSecret: "shh" })
      const declaration = McpServer.http({ name: "p", url: `${srv.url}/mcp`, auth }).declaration
      const error = yield* Effect.flip(Effect.scoped(McpClient.connect(declaration, {}, () => Effect.void)))
      assert.deepStrictEqual(error, new McpError.McpError({ server: "p", reason: new McpError.TokenRequestFailed({ tokenUrl, description: "HTTP 401" }) }))
      assert.strictEqual(error.message, `token request to ${tokenUrl} failed: HTTP 401`)
    }).pipe(Effect.scoped, Effect.provide(ScriptedProcesses.layer({}))))
})

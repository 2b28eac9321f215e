/**
 * Every wire, one agent holding every kind of tool — no parameters, optional keys only, a union of
 * Structs, a Record, a structured-result tool code may call, the tools of a real MCP server over
 * stdio, and Read — run on each vendor's loopback server: both requests of the run (the tools, then
 * the picture Read returned) keep every rule `requestRules` reads from the vendors' SDK types and
 * docs, and the picture reaches the model as an image in the vendor's own form.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer, Schema } from "effect"
import * as path from "node:path"
import * as Agent from "@condukt/core/Agent"
import * as Tool from "@condukt/core/Tool"
import * as Tools from "@condukt/core/Tools"
import { McpServer } from "@condukt/mcp"
import * as Condukt from "@condukt/node/Condukt"
import type * as Provider from "../src/Provider.ts"
import * as Anthropic from "../src/Anthropic.ts"
import * as Google from "../src/Google.ts"
import * as OpenAi from "../src/OpenAi.ts"
import * as OpenAiResponses from "../src/OpenAiResponses.ts"
import * as Runs from "./agentRuns.ts"
import * as Loopback from "./loopback.ts"
import * as Rules from "./requestRules.ts"

const KEY = "sk-wire-test-5e8c1a"
const PNG = Loopback.fixture("pixel.png.base64").trim()
const BYTES = Uint8Array.from(atob(PNG), (c) => c.charCodeAt(0))
const CAPTION = `Image pixel.png (image/png, ${BYTES.length} bytes)`
const DATA_URL = `data:image/png;base64,${PNG}`

const Clock = Tool.make("clock", { description: "The time", parameters: Schema.Struct({}), call: () => Effect.succeed("12:00") })
const List = Tool.make("list", {
  description: "Lists a directory",
  parameters: Schema.Struct({ dir: Schema.optionalKey(Schema.String), depth: Schema.optionalKey(Schema.Int) }),
  call: () => Effect.succeed("")
})
const Shape = Tool.make("shape", {
  description: "Draws a shape",
  parameters: Schema.Union([
    Schema.Struct({ kind: Schema.Literal("circle"), radius: Schema.Int }),
    Schema.Struct({ kind: Schema.Literal("square"), side: Schema.Int })
  ]),
  call: () => Effect.succeed("drawn")
})
const Label = Tool.make("label", {
  description: "Sets labels",
  parameters: Schema.Record(Schema.String, Schema.String),
  call: () => Effect.succeed("set")
})
const Rows = Tool.make("rows", {
  description: "Counts rows",
  parameters: Schema.Struct({ table: Schema.String }),
  allowedCallers: ["human", "code_execution"],
  resultType: "structured",
  call: ({ table }) => Effect.succeed(Tool.structured(`${table}: 3`, { rows: 3 }))
})
const fixtureServer = McpServer.stdio({
  name: "fx",
  command: process.execPath,
  args: [path.resolve(import.meta.dirname, "../../mcp/test/fixtures/server.ts")]
})

const agent = (model: string) =>
  Agent.make({ name: "wire", model, tools: [Tools.Read, Clock, List, Shape, Label, Rows], mcpServers: [fixtureServer] })

/** What the model is given: our tools, then the server's (`fx.<name>`, sent as `fx_<name>`). */
const TOOL_NAMES = ["Read", "clock", "list", "shape", "label", "rows", "fx_pid", "fx_echo", "fx_hang", "fx_fail", "fx_sample", "fx_ask", "fx_cancelled"]

interface Wire {
  readonly name: string
  readonly model: string
  readonly layer: (server: Loopback.Server) => Layer.Layer<never>
  readonly rules: (body: Record<string, unknown>) => Array<string>
  readonly names: (body: any) => ReadonlyArray<string>
  /** The first reply: one call of Read on pixel.png, id `call_img`. */
  readonly readCall: string
  readonly final: string
  /** Where the second request carries the picture, and how. */
  readonly image: (body: any) => unknown
  readonly expected: unknown
}

const provider = <O extends Provider.Options>(make: (options?: O) => Layer.Layer<never, never, any>) => Loopback.provider(make, KEY)

const anthropicCall = [
  `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-6","usage":{"input_tokens":9,"output_tokens":1}}}\n\n`,
  `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"call_img","name":"Read","input":{}}}\n\n`,
  `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"path\\":\\"pixel.png\\"}"}}\n\n`,
  `event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n`,
  `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}\n\n`,
  `event: message_stop\ndata: {"type":"message_stop"}\n\n`
].join("")

const chatCall = [
  `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_img","type":"function","function":{"name":"Read","arguments":"{\\"path\\":\\"pixel.png\\"}"}}]},"finish_reason":null}]}\n\n`,
  `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n`,
  `data: [DONE]\n\n`
].join("")

const chatImage = {
  role: "user",
  content: [{ type: "text", text: "The images Read returned (call call_img):" }, { type: "image_url", image_url: { url: DATA_URL } }]
}

const chatWire = (name: string, model: string, layer: Wire["layer"]): Wire => ({
  name,
  model,
  layer,
  rules: Rules.openAiChat,
  names: (body) => body.tools.map((tool: any) => tool.function.name),
  readCall: chatCall,
  final: Loopback.fixture("openai-final.sse"),
  image: (body) => body.messages.slice(-2),
  expected: [{ role: "tool", tool_call_id: "call_img", content: CAPTION }, chatImage]
})

const wires: ReadonlyArray<Wire> = [
  {
    name: "Anthropic Messages",
    model: "anthropic:claude-sonnet-4-6",
    layer: provider(Anthropic.layer),
    rules: Rules.anthropic,
    names: (body) => body.tools.flatMap((tool: any) => ("input_schema" in tool ? [tool.name] : [])),
    readCall: anthropicCall,
    final: Loopback.fixture("anthropic-final.sse"),
    image: (body) => body.messages.at(-1),
    expected: {
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: "call_img",
        content: [{ type: "text", text: CAPTION }, { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }]
      }]
    }
  },
  chatWire("OpenAI Chat Completions, strict", "openai:gpt-4.1-mini", provider(OpenAi.layer)),
  chatWire("OpenAI-compatible Chat Completions, not strict", "groq:llama-3.3-70b", provider((options) => OpenAi.layerCompatible("groq", options))),
  {
    name: "OpenAI Responses",
    model: "openai-responses:gpt-5-mini",
    layer: provider(OpenAiResponses.layer),
    rules: Rules.openAiResponses,
    names: (body) => body.tools.flatMap((tool: any) => (tool.type === "function" ? [tool.name] : [])),
    readCall: [
      `event: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"id":"fc_0","type":"function_call","status":"completed","arguments":"{\\"path\\":\\"pixel.png\\"}","call_id":"call_img","name":"Read"}}\n\n`,
      `event: response.completed\ndata: {"type":"response.completed","sequence_number":2,"response":{"usage":{"input_tokens":9,"output_tokens":5}}}\n\n`
    ].join(""),
    final: Loopback.fixture("openai-responses-final.sse"),
    image: (body) => body.input.slice(-2),
    expected: [
      { type: "function_call_output", call_id: "call_img", output: CAPTION },
      {
        role: "user",
        content: [
          { type: "input_text", text: "The images Read returned (call call_img):" },
          { type: "input_image", detail: "auto", image_url: DATA_URL }
        ]
      }
    ]
  },
  {
    name: "Gemini",
    model: "google:gemini-2.5-flash",
    layer: provider(Google.layer),
    rules: Rules.google,
    names: (body) => body.tools[0].functionDeclarations.map((declaration: any) => declaration.name),
    readCall:
      `data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"call_img","name":"Read","args":{"path":"pixel.png"}}}],"role":"model"},"finishReason":"STOP","index":0}],"responseId":"r1"}\n\n`,
    final: Loopback.fixture("google-final.sse"),
    image: (body) => body.contents.at(-1),
    expected: {
      role: "user",
      parts: [
        { functionResponse: { id: "call_img", name: "Read", response: { output: CAPTION } } },
        { inlineData: { mimeType: "image/png", data: PNG } }
      ]
    }
  }
]

describe("every wire, every kind of tool", () => {
  for (const wire of wires) {
    it.live(`${wire.name}: both requests keep the vendor's rules, and Read's picture reaches the model as an image`, () =>
      Effect.gen(function*() {
        const cwd = yield* Loopback.tempFiles({ "pixel.png": BYTES })
        const server = yield* Loopback.start([Loopback.sse(wire.readCall), Loopback.sse(wire.final)])
        const events = yield* Runs.streamed(agent(wire.model), wire.layer(server), cwd, "What is in pixel.png?")
        assert.deepStrictEqual(events.filter((e) => e._tag === "Error"), [])
        const [first, second] = server.requests
        assert.deepStrictEqual(wire.names(first!.body), TOOL_NAMES)
        assert.deepStrictEqual([wire.rules(first!.body), wire.rules(second!.body)], [[], []])
        assert.deepStrictEqual(wire.image(second!.body), wire.expected)
      }).pipe(Effect.provide(Condukt.layer)))
  }
})

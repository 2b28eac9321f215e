import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Condukt from "@condukt/node/Condukt"
import * as History from "@condukt/core/History"
import * as Message from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as Anthropic from "../src/Anthropic.ts"
import * as Tools from "@condukt/core/Tools"
import * as Runs from "./agentRuns.ts"
import * as Gateway from "./gateway.ts"
import * as Loopback from "./loopback.ts"

const KEY = "sk-ant-test-7f3a9c1e5b"
const MODEL = "anthropic:claude-sonnet-4-6"
/** A 1×1 PNG, base64. */
const PNG = Loopback.fixture("pixel.png.base64")

const layer = Loopback.provider(Anthropic.layer, KEY)

const request = (messages: ReadonlyArray<Message.Message> = [Message.user("Hi")]): Model.Request => ({
  ...Loopback.request(),
  messages: History.fromIterable(messages)
})

/** Streams one request through the provider against `server`; the parts or the error. */
const parts = (server: Loopback.Server, req: Model.Request = request()) => Loopback.parts(MODEL, layer(server), req)

describe("Anthropic", () => {
  it.live("decodes a streamed answer into text deltas, usage with cache tokens, and the stop reason", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("anthropic-text.sse"))])
      const out = yield* parts(server)
      assert.deepStrictEqual(out, [
        { _tag: "TextDelta", text: "Hello" },
        { _tag: "TextDelta", text: ", world." },
        { _tag: "Usage", inputTokens: 25, outputTokens: 15, cacheReadTokens: 12, cacheWriteTokens: 7 },
        { _tag: "Finish", reason: "stop" }
      ])
      const [received] = server.requests
      assert.strictEqual(received!.path, "/v1/messages")
      assert.strictEqual(received!.headers["x-api-key"], KEY)
      assert.strictEqual(received!.headers["anthropic-version"], "2023-06-01")
      assert.strictEqual(received!.headers["anthropic-beta"], undefined)
      assert.deepStrictEqual(received!.body, {
        model: "claude-sonnet-4-6",
        max_tokens: 8192,
        stream: true,
        system: "Be brief.",
        messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }]
      })
    }))

  it.live("sends the shared options: tool choice, thinking budget, top_p, stop sequences", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("anthropic-text.sse"))])
      yield* parts(
        server,
        Loopback.request({ temperature: 1, topP: 0.9, stopSequences: ["END"], toolChoice: { tool: "Read" }, reasoning: { effort: "low" } })
      )
      const body = server.requests[0]!.body
      assert.deepStrictEqual(
        [body.max_tokens, body.thinking, body.tool_choice, body.temperature, body.top_p, body.stop_sequences],
        [2048 + 8192, { type: "enabled", budget_tokens: 2048 }, { type: "tool", name: "Read" }, 1, 0.9, ["END"]]
      )
    }))

  it.live("drives a full agent run: thinking, two parallel tool calls in fragments, results sent back, final text", () =>
    Effect.gen(function*() {
      const { events, server } = yield* Runs.events(Runs.reader(MODEL, "You read files."), layer, [
        Loopback.sse(Loopback.fixture("anthropic-tools.sse")),
        Loopback.sse(Loopback.fixture("anthropic-final.sse"))
      ], "What do a.txt and b.txt say?")
      const result = events.filter((e) => e._tag === "ToolResult")
      assert.deepStrictEqual(result.map((e) => [e.callId, e.isError]), [
        ["toolu_01T1x1fJ34qAmk2tNTrN7Up6", false],
        ["toolu_02Bq7kLw2cUu5Hn3xYz8aQpR", false]
      ])
      assert.strictEqual(Runs.joined(events, "ThinkingDelta"), "The user wants both files. I can read them in parallel.")
      assert.strictEqual(Runs.joined(events, "TextDelta"), "I'll read both files.a.txt says alpha; b.txt says beta.")
      assert.deepStrictEqual(
        events.filter((e) => e._tag === "TurnEnd").map((e) => [e.usage.inputTokens, e.usage.outputTokens]),
        [[472, 89], [630, 12]]
      )
      const second = server.requests[1]!.body
      assert.strictEqual(second.system, "You read files.")
      assert.deepStrictEqual(second.tools, [{ name: "Read", description: Tools.Read.description, input_schema: Tools.Read.parameters }])
      assert.deepStrictEqual(second.messages, [
        { role: "user", content: [{ type: "text", text: "What do a.txt and b.txt say?" }] },
        {
          role: "assistant",
          content: [
            {
              type: "thinking",
              thinking: "The user wants both files. I can read them in parallel.",
              signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
            },
            { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP" },
            { type: "text", text: "I'll read both files." },
            { type: "tool_use", id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "Read", input: { path: "a.txt" } },
            { type: "tool_use", id: "toolu_02Bq7kLw2cUu5Hn3xYz8aQpR", name: "Read", input: { path: "b.txt" } }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", content: result[0]!.content },
            { type: "tool_result", tool_use_id: "toolu_02Bq7kLw2cUu5Hn3xYz8aQpR", content: result[1]!.content }
          ]
        }
      ])
      assert.include(result[0]!.content, "alpha")
      assert.include(result[1]!.content, "beta")
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("sends images of a prompt and of a tool result as base64 image blocks", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("anthropic-text.sse"))])
      const image = Message.imagePart("image/png", PNG)
      yield* parts(server, request([
        Message.user("What is in this picture?", [image]),
        Message.assistant([Message.toolCallPart({ id: "toolu_1", name: "Read", input: { path: "b.png" } })]),
        Message.toolResult({ callId: "toolu_1", name: "Read", content: "b.png, 1×1 pixels", isError: false, images: [image] })
      ]))
      const source = { type: "base64", media_type: "image/png", data: PNG }
      assert.deepStrictEqual(server.requests[0]!.body.messages, [
        { role: "user", content: [{ type: "image", source }, { type: "text", text: "What is in this picture?" }] },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "Read", input: { path: "b.png" } }] },
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: [{ type: "text", text: "b.png, 1×1 pixels" }, { type: "image", source }]
          }]
        }
      ])
    }))

  describe("programmatic tool calling", () => {
    const runWith = (replies: ReadonlyArray<Loopback.Reply>) =>
      Runs.run(Runs.analyst(MODEL), layer, replies, "How many users?").pipe(Effect.provide(Condukt.layer))

    it.live("sends allowed_callers with the newest code-execution tool and no beta header; a call from code gets the data as JSON and goes back with its caller as it came", () =>
      Effect.gen(function*() {
        const { result, server } = yield* runWith([
          Loopback.sse(Loopback.fixture("anthropic-programmatic.sse")),
          Loopback.sse(Loopback.fixture("anthropic-final.sse"))
        ])
        const [first, second] = server.requests
        assert.strictEqual(first!.headers["anthropic-beta"], undefined)
        assert.deepStrictEqual(first!.body.tools, [
          {
            name: "count_rows",
            description: "Counts the rows of a table",
            input_schema: Runs.CountRows.parameters,
            allowed_callers: ["code_execution_20260521"]
          },
          { type: "code_execution_20260521", name: "code_execution" }
        ])
        assert.deepStrictEqual(result.messages[1], Message.toolResult({
          callId: "toolu_03Cc9dEe",
          name: "count_rows",
          content: `{"table":"users","rows":3}`,
          isError: false
        }))
        assert.strictEqual(second!.body.container, "container_011CRjsdVbKkRcNiN9TMbzWy")
        assert.deepStrictEqual(second!.body.messages.slice(1), [
          {
            role: "assistant",
            content: [
              {
                type: "server_tool_use",
                id: "srvtoolu_01A2b3C4d5E6",
                name: "code_execution",
                input: { code: `rows = await count_rows({"table": "users"})\nprint(rows)` }
              },
              {
                type: "tool_use",
                id: "toolu_03Cc9dEe",
                name: "count_rows",
                input: { table: "users" },
                caller: { type: "code_execution_20250825", tool_id: "srvtoolu_01A2b3C4d5E6" }
              }
            ]
          },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_03Cc9dEe", content: `{"table":"users","rows":3}` }] }
        ])
      }))

    it.live("uses an older code-execution version when the layer picks it", () =>
      Effect.gen(function*() {
        const { server } = yield* Runs.run(
          Runs.analyst(MODEL),
          (server) => layer(server, { codeExecution: "code_execution_20250825" }),
          [Loopback.sse(Loopback.fixture("anthropic-final.sse"))],
          "How many users?"
        ).pipe(Effect.provide(Condukt.layer))
        const first = server.requests[0]!
        assert.strictEqual(first.headers["anthropic-beta"], undefined)
        assert.deepStrictEqual(first.body.tools.map((tool: { allowed_callers?: unknown; type?: unknown }) => tool.allowed_callers ?? tool.type), [
          ["code_execution_20250825"],
          "code_execution_20250825"
        ])
      }))

    it.live("sends a call from code back with the caller the reply gave (its version), not one of our own", () =>
      Effect.gen(function*() {
        const reply = Loopback.fixture("anthropic-programmatic.sse").replace("code_execution_20250825", "code_execution_20260120")
        const { server } = yield* runWith([Loopback.sse(reply), Loopback.sse(Loopback.fixture("anthropic-final.sse"))])
        const call = server.requests[1]!.body.messages[1].content[1]
        assert.deepStrictEqual(call.caller, { type: "code_execution_20260120", tool_id: "srvtoolu_01A2b3C4d5E6" })
      }))

    it.live("refuses a direct call to a tool that allows only code execution", () =>
      Effect.gen(function*() {
        const { result, server } = yield* runWith([
          Loopback.sse(Loopback.fixture("anthropic-direct-call.sse")),
          Loopback.sse(Loopback.fixture("anthropic-final.sse"))
        ])
        assert.deepStrictEqual(result.messages[1], Message.toolResult({
          callId: "toolu_04Dd",
          name: "count_rows",
          content: "Tool count_rows cannot be called directly: call it from code execution",
          isError: true
        }))
        assert.deepStrictEqual(server.requests[1]!.body.messages.at(-1).content, [{
          type: "tool_result",
          tool_use_id: "toolu_04Dd",
          content: "Tool count_rows cannot be called directly: call it from code execution",
          is_error: true
        }])
      }))
  })
})

Gateway.suite({
  provider: "anthropic",
  model: MODEL,
  layer: Anthropic.layer,
  keyVariable: "ANTHROPIC_API_KEY",
  errorEvent: (message) => ({
    sse: `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "api_error", message } })}\n\n`,
    expected: `anthropic: ${message}`
  }),
  head: [
    `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-6","usage":{"input_tokens":9,"output_tokens":1}}}\n\n`,
    `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n`
  ].join(""),
  delta: (n) => `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word ${n} "}}\n\n`,
  toolCalls: (count) =>
    Array.from({ length: count }, (_, i) =>
      [
        `event: content_block_start\ndata: {"type":"content_block_start","index":${i},"content_block":{"type":"tool_use","id":"toolu_${i}","name":"Read","input":{}}}\n\n`,
        `event: content_block_delta\ndata: {"type":"content_block_delta","index":${i},"delta":{"type":"input_json_delta","partial_json":"{\\"path\\":\\"a.txt\\"}"}}\n\n`,
        `event: content_block_stop\ndata: {"type":"content_block_stop","index":${i}}\n\n`
      ].join("")).join("")
})

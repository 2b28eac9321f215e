import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Condukt from "@condukt/node/Condukt"
import * as History from "@condukt/core/History"
import * as Message from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as OpenAi from "../src/OpenAi.ts"
import * as Tools from "@condukt/core/Tools"
import * as Runs from "./agentRuns.ts"
import * as Gateway from "./gateway.ts"
import * as Loopback from "./loopback.ts"

const KEY = "sk-proj-test-4c2e8a"
const MODEL = "openai:gpt-4.1-mini"
/** A 1×1 PNG, base64. */
const PNG = Loopback.fixture("pixel.png.base64")

const openai = Loopback.provider(OpenAi.layer, KEY)

const { parts, request } = Loopback

describe("OpenAi", () => {
  it.live("decodes a streamed answer and sends the documented request", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("openai-text.sse"))])
      const out = yield* parts(MODEL, openai(server), request({ maxTokens: 100, toolChoice: "required", reasoning: { budgetTokens: 3000 } }))
      assert.deepStrictEqual(out, [
        { _tag: "TextDelta", text: "Hello" },
        { _tag: "TextDelta", text: ", world." },
        { _tag: "Usage", inputTokens: 19, outputTokens: 10 },
        { _tag: "Finish", reason: "stop" }
      ])
      const [received] = server.requests
      assert.strictEqual(received!.path, "/chat/completions")
      assert.strictEqual(received!.headers.authorization, `Bearer ${KEY}`)
      assert.deepStrictEqual(received!.body, {
        model: "gpt-4.1-mini",
        messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
        stream: true,
        stream_options: { include_usage: true },
        tool_choice: "required",
        max_completion_tokens: 100,
        reasoning_effort: "low"
      })
    }))

  it.live("sends images as data URLs: a prompt's in its content, a turn's tool results' in one user message after them", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("openai-text.sse"))])
      const image = Message.imagePart("image/png", PNG)
      const call = (id: string, path: string) => Message.toolCallPart({ id, name: "Read", input: { path } })
      yield* parts(MODEL, openai(server), {
        ...request(),
        messages: History.fromIterable([
          Message.user("What is in this picture?", [image]),
          Message.assistant([call("call_1", "a.png"), call("call_2", "a.txt")]),
          Message.toolResult({ callId: "call_1", name: "Read", content: "a.png, 1×1 pixels", isError: false, images: [image] }),
          Message.toolResult({ callId: "call_2", name: "Read", content: "alpha", isError: false }),
          Message.user("And now?")
        ])
      })
      const url = { url: `data:image/png;base64,${PNG}` }
      assert.deepStrictEqual(server.requests[0]!.body.messages.slice(1), [
        { role: "user", content: [{ type: "text", text: "What is in this picture?" }, { type: "image_url", image_url: url }] },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "Read", arguments: "{\"path\":\"a.png\"}" } },
            { id: "call_2", type: "function", function: { name: "Read", arguments: "{\"path\":\"a.txt\"}" } }
          ]
        },
        { role: "tool", tool_call_id: "call_1", content: "a.png, 1×1 pixels" },
        { role: "tool", tool_call_id: "call_2", content: "alpha" },
        {
          role: "user",
          content: [{ type: "text", text: "The images Read returned (call call_1):" }, { type: "image_url", image_url: url }]
        },
        { role: "user", content: "And now?" }
      ])
    }))

  it.live("drives a full agent run: two interleaved tool calls in pieces, strict nulls removed, results sent back", () =>
    Effect.gen(function*() {
      const { events, server } = yield* Runs.events(Runs.reader(MODEL, "You read files."), openai, [
        Loopback.sse(Loopback.fixture("openai-tools.sse")),
        Loopback.sse(Loopback.fixture("openai-final.sse"))
      ], "What do a.txt and b.txt say?")
      assert.deepStrictEqual(Runs.toolCalls(events), [
        ["call_DdmO9pD3xa9XTPNJ32zg2hcA", { path: "a.txt" }],
        ["call_8YkQm2VtWc4zRbLn0sJp1TfE", { path: "b.txt", limit: 10 }]
      ])
      const results = events.filter((e) => e._tag === "ToolResult")
      assert.deepStrictEqual(results.map((e) => e.isError), [false, false])
      assert.deepStrictEqual(
        Runs.turnTokens(events),
        [[56, 48, 64], [260, 11, undefined]]
      )
      const [first, second] = server.requests
      const strict = first!.body.tools[0]
      assert.deepStrictEqual(strict.function.strict, true)
      assert.deepStrictEqual(strict.function.parameters.required, ["path", "offset", "limit"])
      assert.strictEqual(strict.function.parameters.additionalProperties, false)
      assert.deepStrictEqual(strict.function.parameters.properties.offset.anyOf[1], { type: "null" })
      assert.deepStrictEqual(second!.body.messages, [
        { role: "system", content: "You read files." },
        { role: "user", content: "What do a.txt and b.txt say?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_DdmO9pD3xa9XTPNJ32zg2hcA", type: "function", function: { name: "Read", arguments: `{"path":"a.txt"}` } },
            { id: "call_8YkQm2VtWc4zRbLn0sJp1TfE", type: "function", function: { name: "Read", arguments: `{"path":"b.txt","limit":10}` } }
          ]
        },
        { role: "tool", tool_call_id: "call_DdmO9pD3xa9XTPNJ32zg2hcA", content: results[0]!.content },
        { role: "tool", tool_call_id: "call_8YkQm2VtWc4zRbLn0sJp1TfE", content: results[1]!.content }
      ])
      assert.strictEqual(Runs.joined(events, "TextDelta"), "a.txt says alpha; b.txt says beta.")
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("decodes DeepSeek's reasoning_content as thinking, counts cache hits, and sends max_tokens unstrict", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("deepseek-reasoning.sse"))])
      const layer = OpenAi.layerCompatible("deepseek", { apiKey: Redacted.make(KEY), baseUrl: server.url }).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )
      const out = yield* parts("deepseek:deepseek-reasoner", layer, {
        ...request({ maxTokens: 50 }),
        tools: [{ name: "Read", description: "Reads", parameters: Tools.Read.parameters }]
      })
      assert.deepStrictEqual(out, [
        { _tag: "ThinkingDelta", text: "9.11 and 9.8: " },
        { _tag: "ThinkingDelta", text: "compare the tenths, 1 < 8." },
        { _tag: "TextDelta", text: "9.8 is larger." },
        { _tag: "Usage", inputTokens: 18, outputTokens: 40 },
        { _tag: "Finish", reason: "stop" }
      ])
      const body = server.requests[0]!.body
      assert.deepStrictEqual([body.max_tokens, body.tools[0].function], [50, { name: "Read", description: "Reads", parameters: Tools.Read.parameters }])
    }))

  it.live("DeepSeek, which takes no image parts, gets a notice where a prompt's and a tool result's images were", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("deepseek-reasoning.sse"))])
      const layer = OpenAi.layerCompatible("deepseek", { apiKey: Redacted.make(KEY), baseUrl: server.url }).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )
      const image = Message.imagePart("image/png", PNG)
      yield* parts("deepseek:deepseek-chat", layer, {
        ...request(),
        messages: History.fromIterable([
          Message.user("What is in this picture?", [image]),
          Message.assistant([Message.toolCallPart({ id: "call_1", name: "Read", input: { path: "b.png" } })]),
          Message.toolResult({ callId: "call_1", name: "Read", content: "Image b.png (image/png, 68 bytes)", isError: false, images: [image] })
        ])
      })
      assert.deepStrictEqual(server.requests[0]!.body.messages.filter((m: { role: string }) => m.role !== "assistant"), [
        { role: "system", content: "Be brief." },
        { role: "user", content: "What is in this picture?\n\n(1 image not shown: this model's provider cannot be sent images)" },
        {
          role: "tool",
          tool_call_id: "call_1",
          content: "Image b.png (image/png, 68 bytes)\n\n(1 image not shown: this model's provider cannot be sent images)"
        }
      ])
    }))

  it.live("an Ollama preset needs no key and sends a placeholder, which is no secret", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("openai-text.sse"))])
      const layer = OpenAi.layerCompatible("ollama", { baseUrl: server.url }).pipe(Layer.provide(NodeHttpClient.layerUndici))
      const out = yield* parts("ollama:llama3.2", layer)
      assert.strictEqual(out.length, 4)
      assert.strictEqual(server.requests[0]!.headers.authorization, "Bearer ollama")
      const model = yield* Model.resolve("ollama:llama3.2").pipe(Effect.provide(layer))
      assert.deepStrictEqual(model.secrets, {})
    }))

  it.live("a malformed tool-call argument reaches the model as an error result, and the run goes on", () =>
    Effect.gen(function*() {
      const broken = Loopback.fixture("openai-tools.sse").replace(`"arguments":"{\\"pa"`, `"arguments":"{pa"`)
      const { result } = yield* Runs.run(Runs.reader(MODEL), openai, [
        Loopback.sse(broken),
        Loopback.sse(Loopback.fixture("openai-final.sse"))
      ], "Read them")
      const first = result.messages[1]
      assert.deepStrictEqual(first?._tag === "ToolResultMessage" && [first.isError, first.content], [
        true,
        "Invalid arguments for tool Read: Expected object"
      ])
      assert.strictEqual(result.text, "a.txt says alpha; b.txt says beta.")
    }).pipe(Effect.provide(Condukt.layer)))
})

/** The Chat Completions wire, for `provider` registered by `layer`. */
const chatWire = (provider: string, layer: Gateway.Wire["layer"], keyVariable: string): Gateway.Wire => ({
  provider,
  model: `${provider}:some-model`,
  layer,
  keyVariable,
  errorEvent: (message) => ({
    sse: `data: ${JSON.stringify({ error: { message, type: "server_error" } })}\n\n`,
    expected: `${provider}: ${message}`
  }),
  head: `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n`,
  delta: (n) =>
    `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"word ${n} "},"finish_reason":null}]}\n\n`,
  toolCalls: (count) =>
    Array.from({ length: count }, (_, i) =>
      `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":${i},"id":"call_${i}","type":"function","function":{"name":"Read","arguments":"{\\"path\\":\\"a.txt\\"}"}}]},"finish_reason":null}]}\n\n`
    ).join("") +
    `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n`
})

Gateway.suite(chatWire("openai", OpenAi.layer, "OPENAI_API_KEY"))
Gateway.suite(chatWire("groq", (options) => OpenAi.layerCompatible("groq", options), "GROQ_API_KEY"))

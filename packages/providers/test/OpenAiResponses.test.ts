import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Stream } from "effect"
import * as Condukt from "@condukt/node/Condukt"
import * as History from "@condukt/core/History"
import * as Message from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as OpenAi from "../src/OpenAi.ts"
import * as OpenAiResponses from "../src/OpenAiResponses.ts"
import * as Runs from "./agentRuns.ts"
import * as Gateway from "./gateway.ts"
import * as Loopback from "./loopback.ts"

const KEY = "sk-proj-responses-9d1f"
const MODEL = "openai-responses:gpt-5-mini"
/** A 1×1 PNG, base64. */
const PNG = Loopback.fixture("pixel.png.base64")

const responses = Loopback.provider(OpenAiResponses.layer, KEY)

const { parts, request } = Loopback

const TEXT: Array<Model.Part> = [
  { _tag: "TextDelta", text: "Hello" },
  { _tag: "TextDelta", text: ", world." },
  { _tag: "Usage", inputTokens: 19, outputTokens: 10 },
  { _tag: "Finish", reason: "stop" }
]

describe("OpenAiResponses", () => {
  it.live("sends images as input_image data URLs: a prompt's in its content, a turn's tool results' in one user message after them", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("openai-responses-text.sse"))])
      const image = Message.imagePart("image/png", PNG)
      yield* parts(MODEL, responses(server), {
        ...request(),
        messages: History.fromIterable([
          Message.user("What is in this picture?", [image]),
          Message.assistant([Message.toolCallPart({ id: "call_1", name: "Read", input: { path: "a.png" } })]),
          Message.toolResult({ callId: "call_1", name: "Read", content: "a.png, 1×1 pixels", isError: false, images: [image] })
        ])
      })
      const url = `data:image/png;base64,${PNG}`
      assert.deepStrictEqual(server.requests[0]!.body.input, [
        { role: "user", content: [{ type: "input_text", text: "What is in this picture?" }, { type: "input_image", detail: "auto", image_url: url }] },
        { type: "function_call", call_id: "call_1", name: "Read", arguments: "{\"path\":\"a.png\"}" },
        { type: "function_call_output", call_id: "call_1", output: "a.png, 1×1 pixels" },
        {
          role: "user",
          content: [{ type: "input_text", text: "The images Read returned (call call_1):" }, { type: "input_image", detail: "auto", image_url: url }]
        }
      ])
    }))

  it.live("decodes a streamed answer and sends the documented request", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("openai-responses-text.sse"))])
      const out = yield* parts(
        MODEL,
        responses(server),
        request({ maxTokens: 100, toolChoice: { tool: "Read" }, topP: 0.5, stopSequences: ["END"], reasoning: { budgetTokens: 3000 } })
      )
      assert.deepStrictEqual(out, TEXT)
      const [received] = server.requests
      assert.strictEqual(received!.path, "/responses")
      assert.strictEqual(received!.headers.authorization, `Bearer ${KEY}`)
      assert.deepStrictEqual(received!.body, {
        model: "gpt-5-mini",
        instructions: "Be brief.",
        input: [{ role: "user", content: "Hi" }],
        stream: true,
        tool_choice: { type: "function", name: "Read" },
        max_output_tokens: 100,
        top_p: 0.5,
        reasoning: { effort: "low", summary: "auto" }
      })
    }))

  it.live("drives a full agent run: a reasoning summary, two tool calls in fragments, the reasoning item and results sent back", () =>
    Effect.gen(function*() {
      const { events, server } = yield* Runs.events(Runs.reader(MODEL, "You read files."), responses, [
        Loopback.sse(Loopback.fixture("openai-responses-tools.sse")),
        Loopback.sse(Loopback.fixture("openai-responses-final.sse"))
      ], "What do a.txt and b.txt say?")
      assert.strictEqual(
        Runs.joined(events, "ThinkingDelta"),
        "**Reading both files**\n\nThe user wants a.txt and b.txt; I can read them in parallel."
      )
      assert.deepStrictEqual(Runs.toolCalls(events), [
        ["call_Qx1mB7rZ4kT9wLp2nV8sY3cD", { path: "a.txt" }],
        ["call_Hn5vK2dJ8qR1tXz6mB4wP9eL", { path: "b.txt", limit: 10 }]
      ])
      const results = events.filter((e) => e._tag === "ToolResult")
      assert.deepStrictEqual(results.map((e) => e.isError), [false, false])
      assert.deepStrictEqual(
        Runs.turnTokens(events),
        [[56, 48, 64], [260, 11, undefined]]
      )
      const [first, second] = server.requests
      assert.strictEqual(first!.body.instructions, "You read files.")
      const [read] = first!.body.tools
      assert.deepStrictEqual([read.type, read.name, read.strict, read.parameters.required, read.parameters.additionalProperties], [
        "function",
        "Read",
        true,
        ["path", "offset", "limit"],
        false
      ])
      assert.deepStrictEqual(read.parameters.properties.offset.anyOf[1], { type: "null" })
      assert.deepStrictEqual(second!.body.input, [
        { role: "user", content: "What do a.txt and b.txt say?" },
        {
          type: "reasoning",
          id: "rs_68af0b13a1b28194a0c9d8e7f6b5a4c30d1e2f3a4b5c6d7e",
          summary: [{ type: "summary_text", text: "**Reading both files**\n\nThe user wants a.txt and b.txt; I can read them in parallel." }],
          encrypted_content: "gAAAAABor8sTx3k9VqP2mN1b0Yc7Z4hF6wLdE5rS8tUvQ"
        },
        { type: "function_call", call_id: "call_Qx1mB7rZ4kT9wLp2nV8sY3cD", name: "Read", arguments: `{"path":"a.txt"}` },
        { type: "function_call", call_id: "call_Hn5vK2dJ8qR1tXz6mB4wP9eL", name: "Read", arguments: `{"path":"b.txt","limit":10}` },
        { type: "function_call_output", call_id: "call_Qx1mB7rZ4kT9wLp2nV8sY3cD", output: results[0]!.content },
        { type: "function_call_output", call_id: "call_Hn5vK2dJ8qR1tXz6mB4wP9eL", output: results[1]!.content }
      ])
      assert.include(results[0]!.content, "alpha")
      assert.include(results[1]!.content, "beta")
      assert.strictEqual(Runs.joined(events, "TextDelta"), "a.txt says alpha; b.txt says beta.")
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("a malformed tool-call argument reaches the model as an error result, and the run goes on", () =>
    Effect.gen(function*() {
      const broken = Loopback.fixture("openai-responses-tools.sse").replace(`"delta":"{\\"pa"`, `"delta":"{pa"`)
      const { result } = yield* Runs.run(Runs.reader(MODEL), responses, [
        Loopback.sse(broken),
        Loopback.sse(Loopback.fixture("openai-responses-final.sse"))
      ], "Read them")
      const first = result.messages[1]
      assert.deepStrictEqual(first?._tag === "ToolResultMessage" && [first.isError, first.content], [
        true,
        "Invalid arguments for tool Read: Expected object"
      ])
      assert.strictEqual(result.text, "a.txt says alpha; b.txt says beta.")
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("the OpenAI provider speaks the Responses API with api: responses", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("openai-responses-text.sse"))])
      const layer = Loopback.provider(OpenAi.layer, KEY)(server, { api: "responses" })
      assert.deepStrictEqual(yield* parts("openai:gpt-5-mini", layer), TEXT)
      assert.strictEqual(server.requests[0]!.path, "/responses")
    }))

  it.live("Condukt.layer registers openai-responses:, reading OPENAI_API_KEY and OPENAI_BASE_URL", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("openai-responses-text.sse"))])
      const out = yield* Effect.gen(function*() {
        const service = yield* Model.resolve(MODEL)
        return yield* Stream.runCollect(service.stream(request()))
      }).pipe(
        Effect.provide(Condukt.layer),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { OPENAI_API_KEY: "sk-env-key", OPENAI_BASE_URL: server.url } })))
      )
      assert.deepStrictEqual(out, TEXT)
      assert.deepStrictEqual([server.requests[0]!.path, server.requests[0]!.headers.authorization], ["/responses", "Bearer sk-env-key"])
    }))

  it.effect("a missing key names OPENAI_API_KEY, the variable the prefix shares with openai:", () =>
    Effect.gen(function*() {
      const error = yield* Loopback.missingKey(MODEL, OpenAiResponses.layer())
      assert.strictEqual(error.message, "openai-responses: no API key: set OPENAI_API_KEY or pass apiKey to the provider's layer")
    }))

  it.live("response.failed, an error event and an incomplete response each give their documented outcome", () =>
    Effect.gen(function*() {
      const failed = `event: response.failed\ndata: {"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"The model failed to generate a response."}}}\n\n`
      const error = `event: error\ndata: {"type":"error","code":"rate_limit_exceeded","message":"Rate limit reached for gpt-5-mini.","param":null}\n\n`
      const incomplete = `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","output_index":0,"delta":"Hel"}\n\n` +
        `event: response.incomplete\ndata: {"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":5,"output_tokens":3}}}\n\n`
      const server = yield* Loopback.start([Loopback.sse(failed), Loopback.sse(error), Loopback.sse(incomplete)])
      const layer = responses(server, { retry: false })
      const first = yield* Effect.flip(parts(MODEL, layer))
      assert.strictEqual(first.message, "openai-responses: The model failed to generate a response.")
      assert.strictEqual(first.isRetryable, true)
      const second = yield* Effect.flip(parts(MODEL, layer))
      assert.strictEqual(second.message, "openai-responses: rate limited: Rate limit reached for gpt-5-mini.")
      assert.deepStrictEqual(yield* parts(MODEL, layer), [
        { _tag: "TextDelta", text: "Hel" },
        { _tag: "Usage", inputTokens: 5, outputTokens: 3 },
        { _tag: "Finish", reason: "length" }
      ])
    }))

  describe("programmatic tool calling", () => {
    const runWith = (first: string) =>
      Runs.run(Runs.analyst(MODEL), responses, [Loopback.sse(first), Loopback.sse(Loopback.fixture("openai-responses-final.sse"))], "How many users?")
        .pipe(Effect.provide(Condukt.layer))

    it.live("sends allowed_callers and the programmatic tool; a call from a program gets the data as JSON and goes back with its caller", () =>
      Effect.gen(function*() {
        const { result, server } = yield* runWith(Loopback.fixture("openai-responses-programmatic.sse"))
        const [first, second] = server.requests
        assert.deepStrictEqual(first!.body.tools.map((t: { type: string; allowed_callers?: unknown }) => [t.type, t.allowed_callers]), [
          ["function", ["programmatic"]],
          ["programmatic_tool_calling", undefined]
        ])
        const caller = { type: "program", caller_id: "prog_call_7Tz3" }
        assert.deepStrictEqual(second!.body.input.slice(1), [
          {
            id: "prog_68af0c02e3f48194f6a7b8c9d0e1f2a3",
            type: "program",
            call_id: "prog_call_7Tz3",
            code: "const rows = await tools.count_rows({table: \"users\"});\ntext(JSON.stringify(rows));",
            fingerprint: "fp_2c9e4b7a1d0f"
          },
          { type: "function_call", call_id: "call_Pr0gR4mm4t1c", name: "count_rows", arguments: `{"table":"users"}`, caller },
          { type: "function_call_output", call_id: "call_Pr0gR4mm4t1c", output: `{"table":"users","rows":3}`, caller }
        ])
        assert.strictEqual(result.text, "a.txt says alpha; b.txt says beta.")
      }))

    it.live("refuses a direct call to a tool that allows only programs", () =>
      Effect.gen(function*() {
        const direct = Loopback.fixture("openai-responses-programmatic.sse").replaceAll(`,"caller":{"type":"program","caller_id":"prog_call_7Tz3"}`, "")
        const { result } = yield* runWith(direct)
        assert.deepStrictEqual(result.messages[1], Message.toolResult({
          callId: "call_Pr0gR4mm4t1c",
          name: "count_rows",
          content: "Tool count_rows cannot be called directly: call it from code execution",
          isError: true
        }))
      }))
  })
})

Gateway.suite({
  provider: "openai-responses",
  model: MODEL,
  layer: OpenAiResponses.layer,
  keyVariable: "OPENAI_API_KEY",
  errorEvent: (message) => ({
    sse: `event: error\ndata: ${JSON.stringify({ type: "error", code: "server_error", message, param: null, sequence_number: 1 })}\n\n`,
    expected: `openai-responses: ${message}`
  }),
  head: `event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}\n\n`,
  delta: (n) =>
    `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":${n + 1},"item_id":"msg_1","output_index":0,"content_index":0,"delta":"word ${n} "}\n\n`,
  toolCalls: (count) =>
    Array.from({ length: count }, (_, i) =>
      `event: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":${i + 1},"output_index":${i},"item":{"id":"fc_${i}","type":"function_call","status":"completed","arguments":"{\\"path\\":\\"a.txt\\"}","call_id":"call_${i}","name":"Read"}}\n\n`
    ).join("")
})

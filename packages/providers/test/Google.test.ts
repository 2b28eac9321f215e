import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Layer, Redacted } from "effect"
import * as Condukt from "@condukt/node/Condukt"
import * as History from "@condukt/core/History"
import * as Message from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as Google from "../src/Google.ts"
import * as Tools from "@condukt/core/Tools"
import * as Runs from "./agentRuns.ts"
import * as Gateway from "./gateway.ts"
import * as Loopback from "./loopback.ts"

const KEY = "AIzaSy-test-3b8e1f"
const MODEL = "google:gemini-2.5-flash"
/** A 1×1 PNG, base64. */
const PNG = Loopback.fixture("pixel.png.base64")

const google = Loopback.provider(Google.layer, KEY)

const { request } = Loopback
const parts = (layer: Layer.Layer<never>, req: Model.Request = request()) => Loopback.parts(MODEL, layer, req)

const TEXT: Array<Model.Part> = [
  { _tag: "TextDelta", text: "Hello" },
  { _tag: "TextDelta", text: ", world." },
  { _tag: "Usage", inputTokens: 8, outputTokens: 4 },
  { _tag: "Finish", reason: "stop" }
]

describe("Google", () => {
  it.live("decodes a streamed answer and sends the documented request", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("google-text.sse"))])
      const out = yield* parts(
        google(server),
        request({ maxTokens: 100, temperature: 0.2, topP: 0.9, stopSequences: ["END"], toolChoice: { tool: "Read" }, reasoning: { effort: "low" } })
      )
      assert.deepStrictEqual(out, TEXT)
      const [received] = server.requests
      assert.strictEqual(received!.path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
      assert.strictEqual(received!.headers["x-goog-api-key"], KEY)
      assert.deepStrictEqual(received!.body, {
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
        systemInstruction: { parts: [{ text: "Be brief." }] },
        toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["Read"] } },
        generationConfig: {
          maxOutputTokens: 100,
          temperature: 0.2,
          topP: 0.9,
          stopSequences: ["END"],
          thinkingConfig: { thinkingBudget: 2048, includeThoughts: true }
        }
      })
    }))

  it.live("sends images as inline data: a prompt's before its text, a turn's tool results' after its function responses", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("google-text.sse"))])
      const image = Message.imagePart("image/png", PNG)
      const call = (id: string, path: string) => Message.toolCallPart({ id, name: "Read", input: { path } })
      yield* parts(google(server), {
        ...request(),
        messages: History.fromIterable([
          Message.user("What is in this picture?", [image]),
          Message.assistant([call("call_1", "a.png"), call("call_2", "a.txt")]),
          Message.toolResult({ callId: "call_1", name: "Read", content: "a.png, 1×1 pixels", isError: false, images: [image] }),
          Message.toolResult({ callId: "call_2", name: "Read", content: "alpha", isError: false })
        ])
      })
      const inlineData = { inlineData: { mimeType: "image/png", data: PNG } }
      assert.deepStrictEqual(server.requests[0]!.body.contents, [
        { role: "user", parts: [inlineData, { text: "What is in this picture?" }] },
        {
          role: "model",
          parts: [
            { functionCall: { id: "call_1", name: "Read", args: { path: "a.png" } } },
            { functionCall: { id: "call_2", name: "Read", args: { path: "a.txt" } } }
          ]
        },
        {
          role: "user",
          parts: [
            { functionResponse: { id: "call_1", name: "Read", response: { output: "a.png, 1×1 pixels" } } },
            { functionResponse: { id: "call_2", name: "Read", response: { output: "alpha" } } },
            inlineData
          ]
        }
      ])
    }))

  it.live("drives a full agent run: thoughts, two whole function calls given ids, signatures and responses sent back", () =>
    Effect.gen(function*() {
      const { events, server } = yield* Runs.events(Runs.reader(MODEL, "You read files."), google, [
        Loopback.sse(Loopback.fixture("google-tools.sse")),
        Loopback.sse(Loopback.fixture("google-final.sse"))
      ], "What do a.txt and b.txt say?")
      assert.strictEqual(
        Runs.joined(events, "ThinkingDelta"),
        "**Reading both files**\nThe user wants a.txt and b.txt; I can read them in parallel."
      )
      assert.deepStrictEqual(Runs.toolCalls(events), [
        ["gemini_xN4waOqGL8Dh7M8P0uTn2A0_0", { path: "a.txt" }],
        ["gemini_xN4waOqGL8Dh7M8P0uTn2A0_1", { path: "b.txt", limit: 10 }]
      ])
      const results = events.filter((e) => e._tag === "ToolResult")
      assert.deepStrictEqual(results.map((e) => e.isError), [false, false])
      assert.deepStrictEqual(
        Runs.turnTokens(events),
        [[76, 88, 64], [260, 11, undefined]]
      )
      const [first, second] = server.requests
      assert.deepStrictEqual(first!.body.tools, [{
        functionDeclarations: [{ name: "Read", description: Tools.Read.description, parametersJsonSchema: Tools.Read.parameters }]
      }])
      assert.deepStrictEqual(second!.body.contents, [
        { role: "user", parts: [{ text: "What do a.txt and b.txt say?" }] },
        {
          role: "model",
          parts: [
            { functionCall: { name: "Read", args: { path: "a.txt" } }, thoughtSignature: "CiQB0e2Kb3xGm9tQpLwZ7yVq1sN4cR8dF2hJ6kU0aE5oI3wT" },
            { functionCall: { name: "Read", args: { path: "b.txt", limit: 10 } } }
          ]
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "Read", response: { output: results[0]!.content } } },
            { functionResponse: { name: "Read", response: { output: results[1]!.content } } }
          ]
        }
      ])
      assert.include(results[0]!.content, "alpha")
      assert.include(results[1]!.content, "beta")
      assert.strictEqual(Runs.joined(events, "TextDelta"), "a.txt says alpha; b.txt says beta.")
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("arguments that are not an object reach the model as an error result sent back under error, and the run goes on", () =>
    Effect.gen(function*() {
      const broken = Loopback.fixture("google-tools.sse").replace(`"args":{"path":"a.txt"}`, `"args":"{pa"`)
      const { result, server } = yield* Runs.run(Runs.reader(MODEL), google, [
        Loopback.sse(broken),
        Loopback.sse(Loopback.fixture("google-final.sse"))
      ], "Read them")
      const first = result.messages[1]
      assert.deepStrictEqual(first?._tag === "ToolResultMessage" && [first.isError, first.content], [
        true,
        "Invalid arguments for tool Read: Expected object"
      ])
      assert.deepStrictEqual(server.requests[1]!.body.contents[2].parts[0], {
        functionResponse: { name: "Read", response: { error: "Invalid arguments for tool Read: Expected object" } }
      })
      assert.strictEqual(result.text, "a.txt says alpha; b.txt says beta.")
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("errors are classified: 429 retried, 401 once, an error chunk, a safety stop, a stream cut short", () =>
    Effect.gen(function*() {
      const limited = `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`
      const refused = `{"error":{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}}`
      const midStream = `data: {"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}\r\n\r\n`
      const safety = `data: {"candidates":[{"content":{"parts":[{"text":"I can"}],"role":"model"},"finishReason":"SAFETY","index":0}]}\r\n\r\n`
      const cut = `data: {"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}]}\r\n\r\n`
      const server = yield* Loopback.start([
        Loopback.body(429, limited, { "retry-after": "0" }),
        Loopback.sse(Loopback.fixture("google-text.sse")),
        Loopback.body(401, refused),
        Loopback.sse(midStream),
        Loopback.sse(safety),
        Loopback.sse(cut)
      ])
      assert.deepStrictEqual(yield* parts(google(server)), [{
        _tag: "Retry",
        attempt: 2,
        reason: "google: rate limited (HTTP 429): Resource has been exhausted (e.g. check quota).; retry after 0",
        delay: Duration.millis(0)
      }, ...TEXT])
      const unauthorized = yield* Effect.flip(parts(google(server)))
      assert.strictEqual(unauthorized.message, "google: the API key was refused (HTTP 401): API key not valid. Please pass a valid API key.")
      const once = google(server, { retry: false })
      const internal = yield* Effect.flip(parts(once))
      assert.deepStrictEqual([internal.message, internal.isRetryable], ["HTTP 500: google: An internal error has occurred.", true])
      assert.deepStrictEqual(yield* parts(once), [{ _tag: "TextDelta", text: "I can" }, { _tag: "Finish", reason: "content-filter" }])
      const short = yield* Effect.flip(parts(once))
      assert.strictEqual(short.message, "google: network error: the stream ended before the reply was complete")
      assert.strictEqual(server.requests.length, 6)
    }))

  it.live("Condukt.layer registers google:, reading GEMINI_API_KEY when GOOGLE_API_KEY is unset, and GOOGLE_BASE_URL", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("google-text.sse"))])
      const out = yield* parts(Condukt.layer).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { GEMINI_API_KEY: "gemini-env-key", GOOGLE_BASE_URL: server.url } })))
      )
      assert.deepStrictEqual(out, TEXT)
      assert.strictEqual(server.requests[0]!.headers["x-goog-api-key"], "gemini-env-key")
      const secrets = yield* Model.resolve(MODEL).pipe(
        Effect.map((model) => Object.entries(model.secrets ?? {}).map(([name, value]) => [name, Redacted.value(value)])),
        Effect.provide(Condukt.layer),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { GEMINI_API_KEY: "gemini-env-key" } })))
      )
      assert.deepStrictEqual(secrets, [["GEMINI_API_KEY", "gemini-env-key"]])
    }))

  it.effect("a missing key names both variables", () =>
    Effect.gen(function*() {
      const error = yield* Loopback.missingKey(MODEL, Google.layer())
      assert.strictEqual(error.message, "google: no API key: set GOOGLE_API_KEY (or GEMINI_API_KEY) or pass apiKey to the provider's layer")
    }))
})

Gateway.suite({
  provider: "google",
  model: MODEL,
  layer: Google.layer,
  keyVariable: "GOOGLE_API_KEY",
  errorEvent: (message) => ({
    sse: `data: ${JSON.stringify({ error: { code: 500, message, status: "INTERNAL" } })}\n\n`,
    expected: `HTTP 500: google: ${message}`
  }),
  head: `data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}],"responseId":"r1"}\n\n`,
  delta: (n) => `data: {"candidates":[{"content":{"parts":[{"text":"word ${n} "}],"role":"model"},"index":0}],"responseId":"r1"}\n\n`,
  toolCalls: (count) =>
    Array.from({ length: count }, (_, i) =>
      `data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"call_${i}","name":"Read","args":{"path":"a.txt"}}}],"role":"model"},"index":0}],"responseId":"r1"}\n\n`
    ).join("")
})

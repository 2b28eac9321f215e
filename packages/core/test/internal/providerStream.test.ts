/**
 * The shared streaming machinery (retries, classification, idle timeout, cancellation), driven
 * through the Anthropic provider against a loopback server.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Deferred, Duration, Effect, Fiber, Formatter, Layer, Logger, Redacted, Stream, Tracer } from "effect"
import * as History from "../../src/History.ts"
import * as Message from "../../src/Message.ts"
import * as Model from "../../src/Model.ts"
import * as Anthropic from "../../src/providers/Anthropic.ts"
import type * as Provider from "../../src/providers/Provider.ts"
import * as Loopback from "../providers/loopback.ts"
import { recordingTracer } from "../support/recordingTracer.ts"

const KEY = "sk-ant-test-7f3a9c1e5b"
const MODEL = "anthropic:claude-sonnet-4-6"
const TEXT = Loopback.fixture("anthropic-text.sse")
/** The text transcript up to and including its first text delta. */
const FIRST_CHUNK = TEXT.slice(0, TEXT.indexOf("event: content_block_delta", TEXT.indexOf("text_delta")))
const ANSWER: ReadonlyArray<Model.Part> = [
  { _tag: "TextDelta", text: "Hello" },
  { _tag: "TextDelta", text: ", world." },
  { _tag: "Usage", inputTokens: 25, outputTokens: 15, cacheReadTokens: 12, cacheWriteTokens: 7 },
  { _tag: "Finish", reason: "stop" }
]

const request: Model.Request = { system: undefined, messages: History.fromIterable([Message.user("Hi")]), tools: [] }

const provider = (server: Loopback.Server, options: Provider.Options = {}) =>
  Anthropic.layer({ apiKey: Redacted.make(KEY), baseUrl: server.url, retry: { baseDelay: "1 millis", maxDelay: "1 millis" }, ...options })
    .pipe(Layer.provide(NodeHttpClient.layerUndici))

/** The parts streamed before the end, and the error the stream ended with, if any. */
const run = (server: Loopback.Server, options: Provider.Options = {}) =>
  Effect.gen(function*() {
    const model = yield* Model.resolve(MODEL)
    const seen: Array<Model.Part> = []
    const exit = yield* Effect.exit(Stream.runForEach(model.stream(request), (part) => Effect.sync(() => seen.push(part))))
    return { seen, error: exit._tag === "Failure" ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined }
  }).pipe(Effect.provide(provider(server, options)))

const noKey = (error: unknown) => {
  assert.notInclude(JSON.stringify(error), KEY)
  assert.notInclude(String(error), KEY)
  assert.notInclude((error as Error).message, KEY)
}

describe("providerStream", () => {
  it.live("retries a 429 after its retry-after, then streams the answer", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.body(429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, { "retry-after": "0" }),
        Loopback.sse(TEXT)
      ])
      const { error, seen } = yield* run(server)
      assert.deepStrictEqual([seen, error, server.requests.length], [ANSWER, undefined, 2])
    }))

  it.live("a 429 that cannot be retried keeps the provider's message and its retry-after", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.body(429, `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit exceeded"}}`, { "retry-after": "2" })
      ])
      const { error } = yield* run(server, { retry: false })
      assert.instanceOf(error, Model.ModelError)
      assert.strictEqual(error.message, "anthropic: rate limited (HTTP 429): Rate limit exceeded; retry after 2s")
      assert.deepStrictEqual([error.isRetryable, error.retryAfter, server.requests.length], [true, Duration.seconds(2), 1])
      noKey(error)
    }))

  it.live("retries 529 and 503 overloads, then streams the answer", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.body(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
        Loopback.body(503, "upstream connect error"),
        Loopback.sse(TEXT)
      ])
      const { error, seen } = yield* run(server)
      assert.deepStrictEqual([seen, error, server.requests.length], [ANSWER, undefined, 3])
    }))

  it.live("gives up after the last attempt with the last overload", () =>
    Effect.gen(function*() {
      const overloaded = Loopback.body(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
      const server = yield* Loopback.start([overloaded, overloaded, overloaded])
      const { error } = yield* run(server)
      assert.strictEqual(error?.message, "anthropic: overloaded (HTTP 529): Overloaded")
      assert.strictEqual(server.requests.length, 3)
    }))

  it.live("never retries a 401, and the key appears nowhere in the error", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.body(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`),
        Loopback.sse(TEXT)
      ])
      const { error } = yield* run(server)
      assert.instanceOf(error, Model.ModelError)
      assert.strictEqual(error.reason._tag, "Unauthorized")
      assert.strictEqual(error.message, "anthropic: the API key was refused (HTTP 401): invalid x-api-key")
      assert.strictEqual(server.requests.length, 1)
      noKey(error)
    }))

  it.live("classifies a too-long prompt as ContextOverflow, not retried", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.body(400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`)
      ])
      const { error } = yield* run(server)
      assert.strictEqual(error?.reason._tag, "ContextOverflow")
      assert.strictEqual(server.requests.length, 1)
    }))

  it.live("retries a connection reset before the first chunk", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.reset, Loopback.sse(TEXT)])
      const { error, seen } = yield* run(server)
      assert.deepStrictEqual([seen, error, server.requests.length], [ANSWER, undefined, 2])
    }))

  it.live("a reset after the first part fails with Network and is not retried", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(FIRST_CHUNK + "event: content_block_delta\n", "reset"), Loopback.sse(TEXT)])
      const { error, seen } = yield* run(server)
      assert.deepStrictEqual(seen, [{ _tag: "TextDelta", text: "Hello" }])
      assert.strictEqual(error?.reason._tag, "Network")
      assert.strictEqual(server.requests.length, 1)
    }))

  it.live("retries an overloaded error event that comes before any part", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.sse(
          TEXT.slice(0, TEXT.indexOf("event: content_block_start")) +
            `event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n`
        ),
        Loopback.sse(TEXT)
      ])
      const { error, seen } = yield* run(server)
      assert.deepStrictEqual([seen, error, server.requests.length], [ANSWER, undefined, 2])
    }))

  it.live("fails on malformed SSE data with ProviderFailed", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.sse(`event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_del\n\n`)
      ])
      const { error } = yield* run(server)
      assert.strictEqual(error?.message, "anthropic: the stream sent an event that is not JSON")
      assert.strictEqual(server.requests.length, 1)
    }))

  it.live("a stream that stops before message_stop fails with Network", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(FIRST_CHUNK)])
      const { error } = yield* run(server)
      assert.strictEqual(error?.message, "anthropic: network error: the stream ended before the reply was complete")
    }))

  it.live("a stalled stream fails with Timeout after the idle timeout and closes the connection", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(FIRST_CHUNK, "stall")])
      const { error, seen } = yield* run(server, { idleTimeout: "300 millis" })
      assert.deepStrictEqual(seen, [{ _tag: "TextDelta", text: "Hello" }])
      assert.strictEqual(error?.message, "anthropic: timed out: no data for 300ms (the idle timeout)")
      yield* Deferred.await(server.closed(0))
    }))

  it.live("interrupting the stream aborts the HTTP request: the server sees the connection close", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(FIRST_CHUNK, "stall")])
      const first = yield* Deferred.make<void>()
      const fiber = yield* Effect.gen(function*() {
        const model = yield* Model.resolve(MODEL)
        yield* Stream.runForEach(model.stream(request), () => Deferred.succeed(first, undefined))
      }).pipe(Effect.provide(provider(server)), Effect.forkChild({ startImmediately: true }))
      yield* Deferred.await(first)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(server.closed(0))
    }))

  it.effect("a missing key fails when the model is resolved, naming the variable", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Model.resolve(MODEL))
      assert.strictEqual(error.message, "anthropic: no API key: set ANTHROPIC_API_KEY or pass apiKey to the provider's layer")
    }).pipe(
      Effect.provide(Anthropic.layer().pipe(Layer.provide(NodeHttpClient.layerUndici))),
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} })))
    ))

  it.live("the API key reaches no span, span event or log line, through a retry and a refusal", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const logs: Array<string> = []
      const logger = Logger.make((options) => {
        logs.push(`${Formatter.format(options.message)} ${Cause.pretty(options.cause)}`)
      })
      const server = yield* Loopback.start([
        Loopback.body(429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, { "retry-after": "0" }),
        Loopback.sse(TEXT),
        Loopback.body(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
      ])
      const traced = <A, E>(effect: Effect.Effect<A, E>) =>
        effect.pipe(Effect.provideService(Tracer.Tracer, tracer), Effect.provide(Logger.layer([logger])), Effect.withLogSpan("test"))
      const first = yield* traced(run(server).pipe(Effect.tap(({ error }) => Effect.logWarning("first", error))))
      const second = yield* traced(run(server).pipe(Effect.tap(({ error }) => Effect.logError("second", error))))
      assert.isUndefined(first.error)
      assert.isDefined(second.error)
      const recorded = JSON.stringify(spans.map((span) => ({
        name: span.name,
        attributes: [...(span._attributes ?? new Map()).entries()],
        events: span._events ?? [],
        status: span.status
      })), (_, value) => (typeof value === "bigint" ? String(value) : value))
      assert.includeMembers(spans.map((span) => span.name), ["Model.resolve"])
      assert.notInclude(recorded, KEY)
      assert.isAbove(logs.length, 0)
      assert.notInclude(logs.join("\n"), KEY)
      assert.strictEqual(server.requests[0]!.headers["x-api-key"], KEY)
    }))
})

/**
 * The shared streaming machinery (retries, classification, idle timeout, cancellation, the bounds
 * on one reply, the check that a 200 is an event stream, the redaction of what a server echoes),
 * driven through the Anthropic provider against a loopback server. What every wire does behind a
 * hostile gateway is `providers/gateway.ts`, run by each vendor's test.
 */
import { Spans } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Duration, Effect, Fiber, Formatter, Logger, Redacted, Schedule, Stream, Tracer } from "effect"
import * as Condukt from "@condukt/node/Condukt"
import * as History from "@condukt/core/History"
import * as Message from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as ModelError from "@condukt/core/ModelError"
import * as Anthropic from "../../src/Anthropic.ts"
import type * as Provider from "../../src/Provider.ts"
import * as Runs from "../agentRuns.ts"
import * as Loopback from "../loopback.ts"

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

const provider = Loopback.provider(Anthropic.layer, KEY)

/** The parts streamed before the end, and the error the stream ended with, if any. */
const run = (server: Loopback.Server, options: Provider.Options = {}) =>
  Effect.gen(function*() {
    const model = yield* Model.resolve(MODEL)
    const seen: Array<Model.Part> = []
    const exit = yield* Effect.exit(Stream.runForEach(model.stream(request), (part) => Effect.sync(() => seen.push(part))))
    return {
      seen,
      error: exit._tag === "Failure" ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined,
      secrets: Object.entries(model.secrets ?? {}).map(([name, value]) => [name, Redacted.value(value)])
    }
  }).pipe(Effect.provide(provider(server, options)))

/** SSE events opening a reply, up to a tool_use block left open. */
const OPEN_TOOL = [
  `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-6","usage":{"input_tokens":9,"output_tokens":1}}}\n\n`,
  `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01","name":"Read","input":{}}}\n\n`
].join("")

/** The retries a stream announced, without their delays (those of the backoff have jitter), and the reply's parts. */
const split = (seen: ReadonlyArray<Model.Part>) => ({
  retries: seen.flatMap((part) => (part._tag === "Retry" ? [[part.attempt, part.reason]] : [])),
  reply: seen.filter((part) => part._tag !== "Retry")
})

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
      assert.deepStrictEqual([seen, error, server.requests.length], [[{
        _tag: "Retry",
        attempt: 2,
        reason: "anthropic: rate limited (HTTP 429): Number of request tokens has exceeded your per-minute rate limit; retry after 0",
        delay: Duration.millis(0)
      }, ...ANSWER], undefined, 2])
    }))

  it.live("a 429 that cannot be retried keeps the provider's message and its retry-after", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.body(429, `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit exceeded"}}`, { "retry-after": "2" })
      ])
      const { error } = yield* run(server, { retry: false })
      assert.instanceOf(error, ModelError.ModelError)
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
      assert.deepStrictEqual([split(seen), error, server.requests.length], [{
        retries: [[2, "anthropic: overloaded (HTTP 529): Overloaded"], [3, "anthropic: overloaded (HTTP 503): upstream connect error"]],
        reply: ANSWER
      }, undefined, 3])
    }))

  it.live("gives up after the last attempt with the last overload", () =>
    Effect.gen(function*() {
      const overloaded = Loopback.body(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
      const server = yield* Loopback.start([overloaded, overloaded, overloaded])
      const { error } = yield* run(server)
      assert.strictEqual(error?.message, "anthropic: overloaded (HTTP 529): Overloaded")
      assert.strictEqual(server.requests.length, 3)
    }))

  it.live("a program's own Schedule replaces the policy: its attempts, its delays", () =>
    Effect.gen(function*() {
      const overloaded = Loopback.body(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
      const server = yield* Loopback.start([overloaded, overloaded, Loopback.sse(TEXT)])
      const { error, seen } = yield* run(server, { retry: Schedule.recurs(1) })
      assert.deepStrictEqual([seen, error?.message, server.requests.length], [
        [{ _tag: "Retry", attempt: 2, reason: "anthropic: overloaded (HTTP 529): Overloaded", delay: Duration.zero }],
        "anthropic: overloaded (HTTP 529): Overloaded",
        2
      ])
      const once = yield* Loopback.start([overloaded, Loopback.sse(TEXT)])
      const refused = yield* run(once, { retry: Schedule.recurs(0) })
      assert.deepStrictEqual([refused.seen, refused.error?.message, once.requests.length], [[], "anthropic: overloaded (HTTP 529): Overloaded", 1])
    }))

  it.live("never retries a 401, and the key appears nowhere in the error", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.body(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`),
        Loopback.sse(TEXT)
      ])
      const { error } = yield* run(server)
      assert.instanceOf(error, ModelError.ModelError)
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
      assert.deepStrictEqual([split(seen), error, server.requests.length], [{
        retries: [[2, `anthropic: network error: POST ${server.url}/v1/messages: UND_ERR_SOCKET: other side closed`]],
        reply: ANSWER
      }, undefined, 2])
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
      assert.deepStrictEqual([split(seen), error, server.requests.length], [{ retries: [[2, "anthropic: overloaded: Overloaded"]], reply: ANSWER }, undefined, 2])
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
      const seen: Array<Model.Part> = []
      const fiber = yield* Effect.gen(function*() {
        const model = yield* Model.resolve(MODEL)
        yield* Stream.runForEach(model.stream(request), (part) => Effect.andThen(Effect.sync(() => seen.push(part)), Deferred.succeed(first, undefined)))
      }).pipe(Effect.provide(provider(server)), Effect.forkChild({ startImmediately: true }))
      yield* Deferred.await(first)
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      // The stream ended interrupted, after the one part the server sent, and was not retried.
      assert.deepStrictEqual([exit._tag === "Failure" && Cause.hasInterruptsOnly(exit.cause), seen, server.requests.length], [
        true,
        [{ _tag: "TextDelta", text: "Hello" }],
        1
      ])
      yield* Deferred.await(server.closed(0))
    }))

  it.effect("a missing key fails when the model is resolved, naming the variable", () =>
    Effect.gen(function*() {
      const error = yield* Loopback.missingKey(MODEL, Anthropic.layer())
      assert.strictEqual(error.message, "anthropic: no API key: set ANTHROPIC_API_KEY or pass apiKey to the provider's layer")
    }))

  it.live("the API key reaches no span, span event or log line, through a retry and a refusal", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* Spans.make
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

  it.live("tool arguments streamed forever, never completing a part, are cut at maxReplyBytes", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.endless(OPEN_TOOL, () => `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"aaaaaaaaaaaaaaaa"}}\n\n`)
      ])
      const { error, seen } = yield* run(server, { maxReplyBytes: 256 * 1024 })
      assert.deepStrictEqual(seen, [])
      assert.strictEqual(error?.message, "anthropic: the reply passed 262144 bytes (the maxReplyBytes bound; raise it in the provider layer's options)")
      assert.deepStrictEqual([error?.isRetryable, server.requests.length], [false, 1])
      yield* Deferred.await(server.closed(0))
    }))

  it.live("tool calls streamed forever are cut at maxToolCalls", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.endless(OPEN_TOOL.slice(0, OPEN_TOOL.indexOf("event: content_block_start")), (n) =>
          [
            `event: content_block_start\ndata: {"type":"content_block_start","index":${n},"content_block":{"type":"tool_use","id":"toolu_${n}","name":"Read","input":{}}}\n\n`,
            `event: content_block_stop\ndata: {"type":"content_block_stop","index":${n}}\n\n`
          ].join(""))
      ])
      const { error } = yield* run(server)
      assert.strictEqual(error?.message, "anthropic: the reply made more than 1000 tool calls (the maxToolCalls bound; raise it in the provider layer's options)")
      yield* Deferred.await(server.closed(0))
    }))

  it.live("the stream timeout bounds the whole request, retries included", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.body(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
        Loopback.endless(OPEN_TOOL, () => `event: ping\ndata: {"type":"ping"}\n\n`, 5)
      ])
      const { error, seen } = yield* run(server, { streamTimeout: "300 millis" })
      assert.deepStrictEqual(split(seen), { retries: [[2, "anthropic: overloaded (HTTP 529): Overloaded"]], reply: [] })
      assert.strictEqual(
        error?.message,
        "anthropic: timed out: the reply took longer than 300ms (the streamTimeout bound; raise it in the provider layer's options)"
      )
      assert.strictEqual(server.requests.length, 2)
      yield* Deferred.await(server.closed(1))
    }))

  it.live("a stream opening with comments and blank lines is an event stream", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sseChunks(["\r\n", ": OPENROUTER PROCESSING\n\n", TEXT])])
      const { error, seen } = yield* run(server)
      assert.deepStrictEqual([seen, error], [ANSWER, undefined])
    }))

  it.live("a page served as text/event-stream is still no model stream; a long first line is quoted in part", () =>
    Effect.gen(function*() {
      const title = "x".repeat(300)
      const server = yield* Loopback.start([Loopback.body(200, `<html><title>${title}</title></html>`, { "content-type": "text/event-stream" })])
      const { error } = yield* run(server)
      assert.strictEqual(
        error?.message,
        `anthropic: the server at ${server.url} answered with text/event-stream, not a model stream (is baseUrl right?): <html><title>${"x".repeat(187)}…`
      )
      assert.strictEqual(server.requests.length, 1)
    }))

  it.live("a key in the base URL's query never reaches the error naming the server", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.body(200, "<html>proxy</html>", { "content-type": "text/html" })])
      const { error } = yield* run(server, { baseUrl: `${server.url}/gemini?key=${KEY}` })
      assert.strictEqual(
        error?.message,
        `anthropic: the server at ${server.url}/gemini answered with text/html, not a model stream (is baseUrl right?): <html>proxy</html>`
      )
      noKey(error)
    }))

  it.live("a long refusal is redacted before it is cut (no key keeps its head) and its control characters are shown as �", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.body(500, `${"e".repeat(980)}\u001b[31m ${KEY} and more`)])
      const { error } = yield* run(server, { retry: false })
      assert.strictEqual(error?.message, `HTTP 500: anthropic: ${"e".repeat(980)}\uFFFD[31m [RE…`)
    }))

  it.live("credential headers are secrets too, redacted without their scheme, under their names", () =>
    Effect.gen(function*() {
      const token = "gw-token-31c9a7e05b"
      const bearer = "proxy-bearer-8e2d4f6a"
      const server = yield* Loopback.start([
        Loopback.body(401, JSON.stringify({ error: { message: `token ${token} and bearer ${bearer} refused; KEY ${KEY}` } }))
      ])
      const { error, secrets } = yield* run(server, {
        headers: { "x-gateway-token": token, authorization: `Bearer ${bearer}`, "x-request-source": "tests" }
      })
      assert.deepStrictEqual(secrets, [["X_GATEWAY_TOKEN", token], ["AUTHORIZATION", bearer], ["ANTHROPIC_API_KEY", KEY]])
      assert.strictEqual(
        error?.message,
        "anthropic: the API key was refused (HTTP 401): token [REDACTED:X_GATEWAY_TOKEN] and bearer [REDACTED:AUTHORIZATION] refused; KEY [REDACTED:ANTHROPIC_API_KEY]"
      )
      assert.strictEqual(server.requests[0]!.headers["x-gateway-token"], token)
    }))

  it.live("a key echoed by a gateway reaches neither a session's Error event, its run's error nor the run's spans", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* Spans.make
      const echo = Loopback.body(500, JSON.stringify({ error: { message: `upstream refused key ${KEY}` } }))
      const expected = "HTTP 500: anthropic: upstream refused key [REDACTED:ANTHROPIC_API_KEY]"
      const noRetry = (server: Loopback.Server) => provider(server, { retry: false })
      const { events } = yield* Runs.events(Runs.reader(MODEL), noRetry, [echo], "Hi").pipe(Effect.provideService(Tracer.Tracer, tracer))
      const result = yield* Effect.flip(Runs.run(Runs.reader(MODEL), noRetry, [echo], "Hi"))
      assert.deepStrictEqual(events.flatMap((e) => (e._tag === "Error" ? [e.message] : [])), [expected])
      assert.strictEqual(result.message, expected)
      noKey(result)
      const run = spans.find((span) => span.name === "invoke_agent reader")
      assert.isDefined(run)
      const recorded = JSON.stringify(spans.map((span) => ({
        name: span.name,
        attributes: [...(span._attributes ?? new Map()).entries()],
        events: span._events ?? [],
        status: span.status
      })), (_, value) => (typeof value === "bigint" ? String(value) : value instanceof Error ? String(value) : value))
      assert.include(recorded, "[REDACTED:ANTHROPIC_API_KEY]")
      assert.notInclude(recorded, KEY)
    }).pipe(Effect.provide(Condukt.layer)))
})

describe("providerStream: where a failure happened, and each retry told", () => {
  it.live("a network error names the base URL and path it went to", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.reset])
      const { error } = yield* run(server, { baseUrl: `${server.url}/gateway`, retry: false })
      assert.strictEqual(error?.message, `anthropic: network error: POST ${server.url}/gateway/v1/messages: UND_ERR_SOCKET: other side closed`)
    }))

  it.live("a 404 names the base URL and path, and asks whether baseUrl and the model are right", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([
        Loopback.body(404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-sonnet-4-6"}}`)
      ])
      const { error } = yield* run(server, { baseUrl: `${server.url}/gateway` })
      assert.strictEqual(
        error?.message,
        `anthropic: the request was refused (HTTP 404): model: claude-sonnet-4-6 (POST ${server.url}/gateway/v1/messages: is baseUrl right, and the model one this server has?)`
      )
      assert.deepStrictEqual([error?.isRetryable, server.requests.length], [false, 1])
    }))

  it.live("each retry is a ModelRetry event of the session, before the reply's text, and an event on the request's span", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* Spans.make
      const limited = Loopback.body(429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, { "retry-after": "0" })
      const { events } = yield* Runs.events(Runs.reader(MODEL), provider, [limited, Loopback.sse(TEXT)], "Hi").pipe(
        Effect.provideService(Tracer.Tracer, tracer)
      )
      const reason = "anthropic: rate limited (HTTP 429): slow down; retry after 0"
      assert.deepStrictEqual(events.filter((e) => e._tag !== "AgentStart" && e._tag !== "AgentEnd").map((e) => e._tag), [
        "TurnStart",
        "ModelRetry",
        "TextDelta",
        "TextDelta",
        "TurnEnd"
      ])
      const retry = events.find((e) => e._tag === "ModelRetry")
      assert.deepStrictEqual(retry?._tag === "ModelRetry" ? [retry.attempt, retry.reason, retry.delay] : [], [2, reason, Duration.millis(0)])
      const retried = spans.flatMap((span) => (span._events ?? []).filter(([name]) => name === "ModelRetry").map(([, , attributes]) => [span.name, attributes]))
      assert.deepStrictEqual(retried, [["chat claude-sonnet-4-6", { attempt: 2, reason, delay: "0" }]])
    }).pipe(Effect.provide(Condukt.layer)))
})

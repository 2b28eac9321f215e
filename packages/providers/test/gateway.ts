/**
 * What a hostile or misconfigured gateway does to a provider, as one suite each vendor's test
 * runs over its own wire format: a 401, a 500 and a stream `error` event echoing the key (the
 * error holds `[REDACTED:<variable>]`, never the key), a 200 that is an HTML page or JSON (fails
 * at once, not retried, naming what came), a reply streaming deltas forever (cut by
 * `maxReplyBytes`, or by `streamTimeout` when it drips), and a reply with too many tool calls.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, type Layer, Redacted, Stream } from "effect"
import type { HttpClient } from "effect/http"
import * as Model from "@condukt/core/Model"
import * as ModelError from "@condukt/core/ModelError"
import type * as Provider from "../src/Provider.ts"
import * as Loopback from "./loopback.ts"

/** A vendor's wire, as the suite needs it. */
export interface Wire {
  /** The registry prefix (`anthropic`, `groq`). */
  readonly provider: string
  readonly model: string
  readonly layer: (options?: Provider.Options) => Layer.Layer<never, never, HttpClient.HttpClient>
  /** The variable the key stands for, the name it is redacted under. */
  readonly keyVariable: string
  /** A 200 stream whose `error` event says `message`, and the error's text for it. */
  readonly errorEvent: (message: string) => { readonly sse: string; readonly expected: string }
  /** What opens a reply, before its first delta. */
  readonly head: string
  /** One event carrying a text delta. */
  readonly delta: (n: number) => string
  /** A whole reply making `count` tool calls. */
  readonly toolCalls: (count: number) => string
}

/** Not shaped like any vendor's key: only the model's own secrets can redact it. */
export const KEY = "gw-echoed-key-5d9c2b7e41"

/** The parts streamed before the end, the error the stream ended with, and the model's secrets. */
export const outcome = (wire: Wire, server: Loopback.Server, options: Provider.Options = {}) =>
  Effect.gen(function*() {
    const model = yield* Model.resolve(wire.model)
    const seen: Array<Model.Part> = []
    const exit = yield* Effect.exit(Stream.runForEach(model.stream(Loopback.request()), (part) => Effect.sync(() => seen.push(part))))
    const error = exit._tag === "Failure" ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
    return { seen, error, secrets: model.secrets }
  }).pipe(Effect.provide(Loopback.provider(wire.layer, KEY)(server, options)))

/** The error's message, after checking the key is nowhere in it, its fields or its rendering. */
export const clean = (error: ModelError.ModelError | undefined): string => {
  assert.instanceOf(error, ModelError.ModelError)
  assert.notInclude(JSON.stringify(error), KEY)
  assert.notInclude(String(error), KEY)
  assert.notInclude(JSON.stringify(error.reason), KEY)
  return error.message
}

/** The suite, over `wire`. */
export const suite = (wire: Wire) =>
  describe(`${wire.provider} behind a hostile gateway`, () => {
    const redacted = `[REDACTED:${wire.keyVariable}]`

    it.live("the model's secrets are its key under its variable's name", () =>
      Effect.gen(function*() {
        const server = yield* Loopback.start([])
        const { secrets } = yield* outcome(wire, server)
        assert.deepStrictEqual(Object.entries(secrets ?? {}).map(([name, value]) => [name, Redacted.value(value)]), [[
          wire.keyVariable,
          KEY
        ]])
      }))

    it.live("a 401 whose body echoes the key fails with the key redacted", () =>
      Effect.gen(function*() {
        const server = yield* Loopback.start([Loopback.body(401, JSON.stringify({ error: { message: `Invalid key ${KEY}` } }))])
        const { error } = yield* outcome(wire, server)
        assert.strictEqual(clean(error), `${wire.provider}: the API key was refused (HTTP 401): Invalid key ${redacted}`)
      }))

    it.live("a 500 whose body echoes the key fails with the key redacted", () =>
      Effect.gen(function*() {
        const server = yield* Loopback.start([Loopback.body(500, `upstream refused ${KEY}\n<trace>`)])
        const { error } = yield* outcome(wire, server, { retry: false })
        assert.strictEqual(clean(error), `HTTP 500: ${wire.provider}: upstream refused ${redacted}`)
      }))

    it.live("a stream error event echoing the key fails with the key redacted", () =>
      Effect.gen(function*() {
        const { expected, sse } = wire.errorEvent(`the gateway saw ${KEY}`)
        const server = yield* Loopback.start([Loopback.sse(wire.head + sse)])
        const { error } = yield* outcome(wire, server, { retry: false })
        assert.strictEqual(clean(error), expected.replace(KEY, redacted))
      }))

    it.live("an HTML page with status 200 fails at once, not retried, naming the server and the page's first line", () =>
      Effect.gen(function*() {
        const page = `<!DOCTYPE html><title>Sign in (${KEY})</title>\n<body>Log in to the proxy</body>\n`
        const server = yield* Loopback.start([
          Loopback.body(200, page, { "content-type": "text/html; charset=utf-8" }),
          Loopback.sse(wire.head + wire.delta(0))
        ])
        const { error, seen } = yield* outcome(wire, server)
        assert.strictEqual(
          clean(error),
          `${wire.provider}: the server at ${server.url} answered with text/html, not a model stream (is baseUrl right?): <!DOCTYPE html><title>Sign in (${redacted})</title>`
        )
        assert.deepStrictEqual([seen, error?.isRetryable, server.requests.length], [[], false, 1])
      }))

    it.live("JSON with status 200 where a stream was asked fails at once, not retried", () =>
      Effect.gen(function*() {
        const server = yield* Loopback.start([Loopback.body(200, `{"id":"x","choices":[]}`), Loopback.sse(wire.head + wire.delta(0))])
        const { error } = yield* outcome(wire, server)
        assert.strictEqual(
          clean(error),
          `${wire.provider}: the server at ${server.url} answered with application/json, not a model stream (is baseUrl right?): {"id":"x","choices":[]}`
        )
        assert.strictEqual(server.requests.length, 1)
      }))

    it.live("a reply streaming deltas forever is cut at maxReplyBytes, and its connection closed", () =>
      Effect.gen(function*() {
        const server = yield* Loopback.start([Loopback.endless(wire.head, wire.delta)])
        const { error } = yield* outcome(wire, server, { maxReplyBytes: 64 * 1024 })
        assert.strictEqual(
          clean(error),
          `${wire.provider}: the reply passed 65536 bytes (the maxReplyBytes bound; raise it in the provider layer's options)`
        )
        assert.deepStrictEqual([error?.isRetryable, server.requests.length], [false, 1])
        yield* Deferred.await(server.closed(0))
      }))

    it.live("a reply dripping deltas forever is cut at streamTimeout, and its connection closed", () =>
      Effect.gen(function*() {
        const server = yield* Loopback.start([Loopback.endless(wire.head, wire.delta, 5)])
        const { error } = yield* outcome(wire, server, { streamTimeout: "200 millis" })
        assert.strictEqual(
          clean(error),
          `${wire.provider}: timed out: the reply took longer than 200ms (the streamTimeout bound; raise it in the provider layer's options)`
        )
        assert.strictEqual(server.requests.length, 1)
        yield* Deferred.await(server.closed(0))
      }))

    it.live("a reply making more tool calls than maxToolCalls fails, not retried", () =>
      Effect.gen(function*() {
        const server = yield* Loopback.start([Loopback.sse(wire.toolCalls(6), "stall")])
        const { error, seen } = yield* outcome(wire, server, { maxToolCalls: 5 })
        assert.strictEqual(
          clean(error),
          `${wire.provider}: the reply made more than 5 tool calls (the maxToolCalls bound; raise it in the provider layer's options)`
        )
        assert.deepStrictEqual([seen.filter((part) => part._tag === "ToolCall").length <= 5, server.requests.length], [true, 1])
      }))
  })

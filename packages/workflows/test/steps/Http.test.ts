/** The `http` step against hostile loopback servers: floods, silence, drips, nobody listening. */
import { Condukt } from "@condukt/node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { Workflow } from "../../src/index.ts"
import { flood, freePort, serve } from "../support.ts"

const fetchStep = (attributes: string) => `
workflow "fetch" {
  input "url" {
    type = "string"
  }
  http "get" {
    method = "GET"
    url = input.url
    ${attributes}
  }
  output = task.get.body
}`

const run = (source: string, url: string) =>
  Effect.flatMap(Workflow.parse(source, "fetch.hcl"), (document) => Workflow.run(document, { inputs: { url } }))

const failure = (source: string, url: string) => Effect.map(Effect.flip(run(source, url)), (error) => [error.reason, error.message] as const)

describe("Http step", () => {
  it.live("a body past max_body_bytes fails the step, declared or streamed; a larger cap takes it whole", () =>
    Effect.gen(function*() {
      const streamed = yield* serve(flood(3_000_000, false))
      const declared = yield* serve(flood(3_000_000, true))
      const capped = fetchStep("max_body_bytes = 1048576")
      const expected = (url: string) =>
        ["OutputTooLarge", `step get: GET ${url} answered with a body larger than 1048576 bytes (max_body_bytes); raise max_body_bytes on the step to accept it`] as const
      assert.deepStrictEqual(yield* failure(capped, streamed.url), expected(streamed.url))
      assert.deepStrictEqual(yield* failure(capped, declared.url), expected(declared.url))
      const whole = yield* run(fetchStep("max_body_bytes = 3000000"), streamed.url)
      assert.strictEqual((whole.output as string).length, 3_000_000)
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a server that never answers fails the step at its timeout", () =>
    Effect.gen(function*() {
      const asked = yield* Deferred.make<void>()
      const silent = yield* serve(() => Deferred.doneUnsafe(asked, Effect.void))
      assert.deepStrictEqual(yield* failure(fetchStep("timeout = 0.5"), silent.url), [
        "TimedOut",
        `step get: no complete answer from GET ${silent.url} within 0.5s (timeout); set timeout = <seconds> on the step to wait longer`
      ])
      yield* Deferred.await(asked)
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a server that drips its body a byte at a time fails the step at its timeout", () =>
    Effect.gen(function*() {
      const dripping = yield* serve((_, response) => {
        response.writeHead(200, { "content-type": "text/plain" })
        const drip = setInterval(() => response.write("x"), 20)
        response.on("close", () => clearInterval(drip))
      })
      assert.deepStrictEqual(yield* failure(fetchStep("timeout = 0.5"), dripping.url), [
        "TimedOut",
        `step get: no complete answer from GET ${dripping.url} within 0.5s (timeout); set timeout = <seconds> on the step to wait longer`
      ])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a refused connection and an unknown host are named as such", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const url = `http://127.0.0.1:${port}/data`
      assert.deepStrictEqual(yield* failure(fetchStep(""), url), ["HttpFailed", `step get: GET ${url} failed: connection refused by 127.0.0.1:${port}`])
      const unknown = "http://nonexistent.invalid/data"
      assert.deepStrictEqual(yield* failure(fetchStep(""), unknown), [
        "HttpFailed",
        `step get: GET ${unknown} failed: cannot resolve the host nonexistent.invalid (DNS: ENOTFOUND)`
      ])
    }).pipe(Effect.provide(Condukt.layer)))

  it.effect("timeout and max_body_bytes must be positive", () =>
    Effect.gen(function*() {
      const invalid = (attributes: string) =>
        Effect.map(Effect.flip(Workflow.parse(fetchStep(attributes), "fetch.hcl")), (error) => [error.reason, error.message] as const)
      assert.deepStrictEqual(yield* invalid("timeout = 0"), [
        "InvalidValue",
        "fetch.hcl: workflow.steps.get.timeout: 0 is not allowed; use a positive number (seconds)"
      ])
      assert.deepStrictEqual(yield* invalid("max_body_bytes = 1.5"), [
        "InvalidValue",
        "fetch.hcl: workflow.steps.get.max_body_bytes: 1.5 is not allowed; use a positive integer (bytes)"
      ])
    }))
})

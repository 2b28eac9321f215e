import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Random, Schedule, Stream } from "effect"
import * as History from "../src/History.ts"
import * as Message from "../src/Message.ts"
import type * as Model from "../src/Model.ts"
import * as ModelError from "../src/ModelError.ts"
import * as ModelRetry from "../src/ModelRetry.ts"

const request: Model.Request = { system: undefined, messages: History.fromIterable([Message.user("Hi")]), tools: [] }

const ANSWER: ReadonlyArray<Model.Part> = [{ _tag: "TextDelta", text: "Hello." }, { _tag: "Finish", reason: "stop" }]

const limited = (retryAfter?: Duration.Duration) =>
  new ModelError.ModelError({
    model: "acme:large-1",
    reason: new ModelError.RateLimited({ provider: "acme", status: 429, description: "slow down", retryAfter })
  })
const refused = new ModelError.ModelError({
  model: "acme:large-1",
  reason: new ModelError.Unauthorized({ provider: "acme", status: 401, description: "bad key" })
})

/**
 * A model whose request n (from 0) answers with `script[n]`: a failure, or parts then maybe a
 * failure; past the script, the answer. `requests` counts what it was asked.
 */
const scripted = (script: ReadonlyArray<ModelError.ModelError | readonly [ReadonlyArray<Model.Part>, ModelError.ModelError]>) => {
  const state = { requests: 0 }
  const model: Model.Service = {
    name: "acme:large-1",
    stream: () =>
      Stream.unwrap(Effect.sync(() => {
        const step = script[state.requests++]
        if (step === undefined) return Stream.fromIterable(ANSWER)
        return step instanceof ModelError.ModelError ? Stream.fail(step) : Stream.concat(Stream.fromIterable(step[0]), Stream.fail(step[1]))
      }))
  }
  return { model, state }
}

/** The parts a model streamed for `request`, and the failure it ended with. */
const outcome = (model: Model.Service) =>
  Effect.gen(function*() {
    const seen: Array<Model.Part> = []
    const exit = yield* Effect.exit(Stream.runForEach(model.stream(request), (part) => Effect.sync(() => seen.push(part))))
    return { seen, error: exit._tag === "Failure" ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined }
  })

/** The Retry part before attempt `attempt`, waiting `delay` after a rate limit (that asked for `asked`). */
const retry = (attempt: number, delay: Duration.Duration, asked = "; retry after 0"): Model.Part => ({
  _tag: "Retry",
  attempt,
  reason: `acme: rate limited (HTTP 429): slow down${asked}`,
  delay
})

/** A `Random` whose every draw is `value`: the policy's jitter, fixed. */
const fixedRandom = (value: number): Random.Random => ({ nextDoubleUnsafe: () => value, nextIntUnsafe: () => 0 })

describe("ModelRetry", () => {
  it.effect("retries a retryable failure after the provider's retry-after, announcing it with a Retry part, then streams the answer", () =>
    Effect.gen(function*() {
      const { model, state } = scripted([limited(Duration.zero)])
      const { seen, error } = yield* outcome(ModelRetry.retrying(model, ModelRetry.policy()))
      assert.deepStrictEqual([seen, error, state.requests], [[retry(2, Duration.zero), ...ANSWER], undefined, 2])
    }))

  it.effect("never retries a failure that is not retryable, nor one after the reply's first part", () =>
    Effect.gen(function*() {
      const unauthorized = scripted([refused])
      const first = yield* outcome(ModelRetry.retrying(unauthorized.model, ModelRetry.policy()))
      assert.deepStrictEqual([first.seen, first.error, unauthorized.state.requests], [[], refused, 1])

      const midway = scripted([[[{ _tag: "TextDelta", text: "Hel" }], limited(Duration.zero)]])
      const second = yield* outcome(ModelRetry.retrying(midway.model, ModelRetry.policy()))
      assert.deepStrictEqual([second.seen, second.error, midway.state.requests], [[{ _tag: "TextDelta", text: "Hel" }], limited(Duration.zero), 1])
    }))

  it.effect("the policy gives up after maxAttempts with the last failure, and never waits for a retry-after past maxRetryAfter", () =>
    Effect.gen(function*() {
      const always = scripted([limited(Duration.zero), limited(Duration.zero), limited(Duration.zero), limited(Duration.zero)])
      const three = yield* outcome(ModelRetry.retrying(always.model, ModelRetry.policy()))
      assert.deepStrictEqual([three.seen, three.error, always.state.requests], [
        [retry(2, Duration.zero), retry(3, Duration.zero)],
        limited(Duration.zero),
        3
      ])

      const long = scripted([limited(Duration.minutes(2))])
      const once = yield* outcome(ModelRetry.retrying(long.model, ModelRetry.policy()))
      assert.deepStrictEqual([once.seen, once.error, long.state.requests], [[], limited(Duration.minutes(2)), 1])
    }))

  it.effect("the policy backs off exponentially up to maxDelay, with up to half again as jitter", () =>
    Effect.gen(function*() {
      const step = yield* Schedule.toStep(ModelRetry.policy({ maxAttempts: 5, baseDelay: "100 millis", maxDelay: "300 millis" }))
      const delays: Array<number> = []
      for (let n = 0; n < 3; n++) delays.push(Duration.toMillis((yield* step(0, limited()))[1]))
      assert.deepStrictEqual(delays, [150, 300, 450])
    }).pipe(Effect.provideService(Random.Random, fixedRandom(1))))

  it.effect("a program's own schedule decides the attempts: recurs(0) tries once, recurs(3) four times", () =>
    Effect.gen(function*() {
      const none = scripted([limited(Duration.zero)])
      const once = yield* outcome(ModelRetry.retrying(none.model, Schedule.recurs(0)))
      assert.deepStrictEqual([once.seen, once.error, none.state.requests], [[], limited(Duration.zero), 1])

      const three = scripted([limited(), limited(), limited()])
      const four = yield* outcome(ModelRetry.retrying(three.model, Schedule.recurs(3)))
      assert.deepStrictEqual([four.seen, four.error, three.state.requests], [[
        retry(2, Duration.zero, ""),
        retry(3, Duration.zero, ""),
        retry(4, Duration.zero, ""),
        ...ANSWER
      ], undefined, 4])
    }))

  it.effect("each request runs the schedule from its start", () =>
    Effect.gen(function*() {
      const { model, state } = scripted([limited(Duration.zero), limited(Duration.zero)])
      const retried = ModelRetry.retrying(model, Schedule.recurs(1))
      const first = yield* outcome(retried)
      const second = yield* outcome(retried)
      assert.deepStrictEqual([first.error, second.seen, state.requests], [limited(Duration.zero), ANSWER, 3])
    }))
})

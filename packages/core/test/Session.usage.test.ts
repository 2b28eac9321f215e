/**
 * A session's usage and cost: each TurnEnd's `usage` has the shape of the run's, which is their
 * sum; the program's price table (`Usage.Prices`, no price built in) gives each run a `cost` and
 * the session its running total, a failed run's tokens included; a model the table does not name
 * has no cost.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as Usage from "../src/Usage.ts"

const agent = Agent.make({ name: "a", model: "test:x" })

// TestModel counts 10 input and 5 output tokens per complete reply; the first reply also read 40
// from the cache, the third breaks off after counting 7 and 1.
const replies = [
  { parts: [...TestModel.text("one").parts, { _tag: "Usage" as const, inputTokens: 0, outputTokens: 0, cacheReadTokens: 40 }] },
  TestModel.text("two"),
  TestModel.error("overloaded", { before: { parts: [{ _tag: "Usage", inputTokens: 7, outputTokens: 1 }, ...TestModel.text("thr").parts] } })
]

const prices = Layer.succeed(Usage.Prices, {
  "test:scripted": { inputPerMillion: 2_000_000, outputPerMillion: 10_000_000, cacheReadPerMillion: 500_000 }
})

describe("Session usage and cost", () => {
  it.effect("a run's usage is the sum of its TurnEnd usages, its cost at the program's price, and the session's the total of every reply", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const events = Array.from(yield* Stream.runCollect(session.stream("first")))
      const turnEnds = events.flatMap((e) => (e._tag === "TurnEnd" ? [e.usage] : []))
      assert.deepStrictEqual(turnEnds, [{ inputTokens: 10, outputTokens: 5, cacheReadTokens: 40 }])
      const second = yield* session.run("second")
      assert.deepStrictEqual([second.usage, second.cost], [{ inputTokens: 10, outputTokens: 5 }, 10 * 2 + 5 * 10])
      // The third run fails midway; the tokens its reply counted were still spent.
      yield* Effect.flip(session.run("third"))
      assert.deepStrictEqual(yield* session.usage, { inputTokens: 27, outputTokens: 11, cacheReadTokens: 40 })
      assert.strictEqual(yield* session.cost, 27 * 2 + 11 * 10 + 40 * 0.5)
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop(), prices))))

  it.effect("without a price for the session's model, runs and the session have usage and no cost", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const result = yield* session.run("first")
      assert.deepStrictEqual(result.usage, { inputTokens: 10, outputTokens: 5, cacheReadTokens: 40 })
      assert.isFalse("cost" in result)
      assert.strictEqual(yield* session.cost, undefined)
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer(replies),
      Sandbox.layerNoop(),
      Layer.succeed(Usage.Prices, { "anthropic:claude-sonnet-4-6": { inputPerMillion: 3, outputPerMillion: 15 } })
    ))))
})

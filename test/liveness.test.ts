/** The liveness probe itself: it sees a blocked event loop, and a well-behaved effect passes it. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { probe } from "./support/liveness.ts"

describe("liveness probe", () => {
  it.live("reports a bystander session's runs and a short gap while an effect sleeps", () =>
    Effect.gen(function*() {
      const { maxGapMs, result, trivialRuns } = yield* probe(Effect.as(Effect.sleep("200 millis"), "slept"))
      assert.strictEqual(result, "slept")
      assert.isAbove(trivialRuns, 0)
      assert.isBelow(maxGapMs, 2000)
    }))

  it.live("sees the event loop blocked by a synchronous loop", () =>
    Effect.gen(function*() {
      const { maxGapMs } = yield* probe(Effect.sleep("50 millis").pipe(Effect.andThen(Effect.sync(() => {
        const end = performance.now() + 300
        while (performance.now() < end) { /* blocks the loop */ }
      }))))
      assert.isAbove(maxGapMs, 250)
    }))
})

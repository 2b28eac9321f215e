/**
 * CallDeadline on the TestClock: a timer passes after its running time, and time spent in `hold`
 * (alone, overlapping, or still going when the first sleep ends) is not counted.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as CallDeadline from "../src/CallDeadline.ts"

/** Holds `timer`'s clock until the returned `end` runs. */
const holding = (timer: CallDeadline.Timer) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<void>()
    const fiber = yield* Effect.forkChild(timer.deadline.hold(Deferred.await(done)), { startImmediately: true })
    return Effect.andThen(Deferred.succeed(done, undefined), Fiber.join(fiber))
  })

describe("CallDeadline", () => {
  it.effect("without a hold, passes after its time, as a sleep would", () =>
    Effect.gen(function*() {
      const passed = yield* Effect.forkChild(CallDeadline.make(1000).passed, { startImmediately: true })
      yield* TestClock.adjust("999 millis")
      assert.isUndefined(passed.pollUnsafe())
      yield* TestClock.adjust("1 milli")
      yield* Fiber.join(passed)
    }))

  it.effect("a hold inside the time pushes the end back by its length", () =>
    Effect.gen(function*() {
      const timer = CallDeadline.make(1000)
      const passed = yield* Effect.forkChild(timer.passed, { startImmediately: true })
      yield* TestClock.adjust("200 millis")
      const end = yield* holding(timer)
      yield* TestClock.adjust("500 millis")
      yield* end
      yield* TestClock.adjust("799 millis")
      assert.isUndefined(passed.pollUnsafe())
      yield* TestClock.adjust("500 millis")
      assert.isDefined(passed.pollUnsafe())
    }))

  it.effect("a hold still going when the time is up keeps the timer waiting; it ends with what was left", () =>
    Effect.gen(function*() {
      const timer = CallDeadline.make(1000)
      const passed = yield* Effect.forkChild(timer.passed, { startImmediately: true })
      yield* TestClock.adjust("400 millis")
      const end = yield* holding(timer)
      yield* TestClock.adjust("1 hour")
      assert.isUndefined(passed.pollUnsafe())
      yield* end
      yield* TestClock.adjust("599 millis")
      assert.isUndefined(passed.pollUnsafe())
      yield* TestClock.adjust("1 milli")
      yield* Fiber.join(passed)
    }))

  it.effect("overlapping holds stop the clock once, from the first start to the last end", () =>
    Effect.gen(function*() {
      const timer = CallDeadline.make(1000)
      const passed = yield* Effect.forkChild(timer.passed, { startImmediately: true })
      const first = yield* holding(timer)
      yield* TestClock.adjust("300 millis")
      const second = yield* holding(timer)
      yield* TestClock.adjust("300 millis")
      yield* first
      yield* TestClock.adjust("300 millis")
      yield* second
      yield* TestClock.adjust("999 millis")
      assert.isUndefined(passed.pollUnsafe())
      yield* TestClock.adjust("1 milli")
      yield* Fiber.join(passed)
    }))

  it.effect("outside a tool call, hold runs the wait as it is", () =>
    Effect.gen(function*() {
      const deadline = yield* CallDeadline.CallDeadline
      assert.strictEqual(yield* deadline.hold(Effect.succeed("waited")), "waited")
    }))
})

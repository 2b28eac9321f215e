/**
 * CallDeadline on the TestClock: a timer cuts the call it runs after its running time, and time
 * spent in `hold` (alone, overlapping, or still going when the time would be up) is not counted.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as CallDeadline from "../src/CallDeadline.ts"

/** Holds `timer`'s clock until the returned `end` runs. */
const holding = (timer: CallDeadline.Timer) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<void>()
    const fiber = yield* Effect.forkChild(timer.deadline.hold(Deferred.await(done)), { startImmediately: true })
    return Effect.andThen(Deferred.succeed(done, undefined), Fiber.join(fiber))
  })

/** A call that never ends by itself, run against `timer` in a fiber of its own, as the executor runs one. */
const calling = (timer: CallDeadline.Timer) =>
  Effect.gen(function*() {
    const call = yield* Effect.forkChild(Effect.provideService(Effect.never, CallDeadline.CallDeadline, timer.deadline), { startImmediately: true })
    yield* timer.arm(call)
    return call
  })

/** The call was cut by its deadline. */
const cut = (timer: CallDeadline.Timer, call: Fiber.Fiber<never>) =>
  Effect.map(Fiber.await(call), (exit) => {
    assert.isTrue(Exit.hasInterrupts(exit))
    assert.isTrue(timer.expired)
  })

describe("CallDeadline", () => {
  it.effect("without a hold, cuts the call after its time, as a timeout would", () =>
    Effect.gen(function*() {
      const timer = CallDeadline.make(1000)
      const passed = yield* calling(timer)
      yield* TestClock.adjust("999 millis")
      assert.isUndefined(passed.pollUnsafe())
      assert.isFalse(timer.expired)
      yield* TestClock.adjust("1 milli")
      yield* cut(timer, passed)
    }))

  it.effect("a call that ends in time is not cut, and its timer stops with it", () =>
    Effect.gen(function*() {
      const timer = CallDeadline.make(1000)
      const done = yield* Deferred.make<void>()
      const call = yield* Effect.forkChild(Deferred.await(done), { startImmediately: true })
      yield* timer.arm(call)
      yield* TestClock.adjust("999 millis")
      yield* Deferred.succeed(done, undefined)
      yield* Fiber.join(call)
      yield* TestClock.adjust("1 hour")
      assert.isFalse(timer.expired)
    }))

  it.effect("a hold inside the time pushes the end back by its length", () =>
    Effect.gen(function*() {
      const timer = CallDeadline.make(1000)
      const passed = yield* calling(timer)
      yield* TestClock.adjust("200 millis")
      const end = yield* holding(timer)
      yield* TestClock.adjust("500 millis")
      yield* end
      yield* TestClock.adjust("799 millis")
      assert.isUndefined(passed.pollUnsafe())
      yield* TestClock.adjust("500 millis")
      yield* cut(timer, passed)
    }))

  it.effect("a hold still going when the time is up keeps the timer waiting; it ends with what was left", () =>
    Effect.gen(function*() {
      const timer = CallDeadline.make(1000)
      const passed = yield* calling(timer)
      yield* TestClock.adjust("400 millis")
      const end = yield* holding(timer)
      yield* TestClock.adjust("1 hour")
      assert.isUndefined(passed.pollUnsafe())
      yield* end
      yield* TestClock.adjust("599 millis")
      assert.isUndefined(passed.pollUnsafe())
      yield* TestClock.adjust("1 milli")
      yield* cut(timer, passed)
    }))

  it.effect("overlapping holds stop the clock once, from the first start to the last end", () =>
    Effect.gen(function*() {
      const timer = CallDeadline.make(1000)
      const passed = yield* calling(timer)
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
      yield* cut(timer, passed)
    }))

  it.effect("pause stops the clock until the effect it returns runs", () =>
    Effect.gen(function*() {
      const timer = CallDeadline.make(1000)
      const passed = yield* calling(timer)
      yield* TestClock.adjust("300 millis")
      const resume = timer.deadline.pause(300)
      yield* TestClock.adjust("1 hour")
      assert.isFalse(timer.expired)
      yield* resume
      yield* TestClock.adjust("699 millis")
      assert.isUndefined(passed.pollUnsafe())
      yield* TestClock.adjust("1 milli")
      yield* cut(timer, passed)
    }))

  it.effect("outside a tool call, hold runs the wait as it is", () =>
    Effect.gen(function*() {
      const deadline = yield* CallDeadline.CallDeadline
      assert.strictEqual(yield* deadline.hold(Effect.succeed("waited")), "waited")
    }))
})

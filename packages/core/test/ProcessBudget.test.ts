/**
 * ProcessBudget on fibers and the TestClock: the bound, first-come-first-served order, the wait's
 * own bound, the wait stopping the call's clock, and interruption. Real processes under a budget are in
 * sandbox/Local.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as CallDeadline from "../src/CallDeadline.ts"
import * as ProcessBudget from "../src/ProcessBudget.ts"

/** Holds one permit until `release` is completed; `held` completes once it has the permit. */
const hold = (budget: ProcessBudget.Service) =>
  Effect.gen(function*() {
    const held = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const fiber = yield* Effect.forkChild(
      budget.withPermit(Deferred.succeed(held, undefined).pipe(Effect.andThen(Deferred.await(release)))),
      { startImmediately: true }
    )
    yield* Deferred.await(held)
    return { fiber, release: Deferred.succeed(release, undefined) }
  })

describe("ProcessBudget", () => {
  it.effect("defaults to a few permits per core, and at least one", () =>
    Effect.gen(function*() {
      const cores = Math.max(1, navigator.hardwareConcurrency)
      assert.strictEqual((yield* ProcessBudget.make()).max, ProcessBudget.DEFAULT_PER_CORE * cores)
      assert.strictEqual((yield* ProcessBudget.make({ max: 0 })).max, 1)
      assert.strictEqual((yield* ProcessBudget.make({ max: 2.7 })).max, 2)
    }))

  it.effect("serves waiters in arrival order once permits come back", () =>
    Effect.gen(function*() {
      const budget = yield* ProcessBudget.make({ max: 1 })
      const holder = yield* hold(budget)
      const order: Array<string> = []
      const waiters = yield* Effect.forEach(["a", "b", "c"], (name) =>
        Effect.forkChild(budget.withPermit(Effect.sync(() => order.push(name))), { startImmediately: true }))
      assert.deepStrictEqual(order, [])
      yield* holder.release
      yield* Effect.forEach(waiters, Fiber.join)
      assert.deepStrictEqual(order, ["a", "b", "c"])
    }))

  it.effect("never runs more than max at once", () =>
    Effect.gen(function*() {
      const budget = yield* ProcessBudget.make({ max: 2 })
      const first = yield* hold(budget)
      const second = yield* hold(budget)
      const third = yield* Effect.forkChild(budget.withPermit(Effect.succeed("ran")), { startImmediately: true })
      assert.isUndefined(third.pollUnsafe())
      yield* first.release
      assert.strictEqual(yield* Fiber.join(third), "ran")
      yield* second.release
    }))

  it.effect("the wait stops the calling tool call's clock; the command then has all of its time", () =>
    Effect.gen(function*() {
      const budget = yield* ProcessBudget.make({ max: 1 })
      const holder = yield* hold(budget)
      const timer = CallDeadline.make(3000)
      const ran = yield* Deferred.make<void>()
      // The call: its wait for a permit, then a command that runs until its deadline.
      const call = yield* Effect.forkChild(
        Effect.andThen(budget.withPermit(Deferred.succeed(ran, undefined)), Effect.never).pipe(
          Effect.provideService(CallDeadline.CallDeadline, timer.deadline)
        ),
        { startImmediately: true }
      )
      yield* timer.arm(call)
      yield* TestClock.adjust("1 minute")
      assert.isFalse(timer.expired)
      yield* holder.release
      yield* Deferred.await(ran)
      yield* TestClock.adjust("2999 millis")
      assert.isFalse(timer.expired)
      yield* TestClock.adjust("1 milli")
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(call)))
      assert.isTrue(timer.expired)
    }))

  it.effect("fails with PermitTimeout when nothing comes free in time, and leaks no permit", () =>
    Effect.gen(function*() {
      const budget = yield* ProcessBudget.make({ max: 1, maxWait: "1 second" })
      assert.strictEqual(budget.maxWaitMs, 1000)
      const holder = yield* hold(budget)
      const waiter = yield* Effect.forkChild(budget.withPermit(Effect.succeed("ran")), { startImmediately: true })
      yield* TestClock.adjust("1 second")
      const error = yield* Effect.flip(Fiber.join(waiter))
      assert.strictEqual(
        error.message,
        "Cannot run the command: the host's limit of 1 running commands stayed reached for 1 seconds; try again later"
      )
      yield* holder.release
      assert.strictEqual(yield* budget.withPermit(Effect.succeed("next")), "next")
    }))

  it.effect("each waiter is refused at its own deadline, by one timer; a queue emptied and refilled times out again", () =>
    Effect.gen(function*() {
      const budget = yield* ProcessBudget.make({ max: 1, maxWait: "1 second" })
      const holder = yield* hold(budget)
      const wait = () => Effect.forkChild(Effect.exit(budget.withPermit(Effect.succeed("ran"))), { startImmediately: true })
      const first = yield* wait()
      yield* TestClock.adjust("400 millis")
      const second = yield* wait()
      const gone = yield* wait()
      yield* TestClock.adjust("600 millis")
      // The first one's second has passed; the second one has 400 ms left.
      assert.isTrue(Exit.isFailure(yield* Fiber.join(first)))
      assert.isUndefined(second.pollUnsafe())
      // A waiter leaving does not disturb the timer of those behind it.
      yield* Fiber.interrupt(gone)
      yield* TestClock.adjust("399 millis")
      assert.isUndefined(second.pollUnsafe())
      yield* TestClock.adjust("1 milli")
      assert.isTrue(Exit.isFailure(yield* Fiber.join(second)))
      // The queue is empty: its timer has stopped. A new waiter starts one, refused a second later.
      const third = yield* wait()
      yield* TestClock.adjust("999 millis")
      assert.isUndefined(third.pollUnsafe())
      yield* holder.release
      assert.deepStrictEqual(yield* Fiber.join(third), Exit.succeed("ran"))
      const fourth = yield* Effect.forkChild(Effect.exit(budget.withPermit(Effect.never)), { startImmediately: true })
      const fifth = yield* wait()
      yield* TestClock.adjust("1 second")
      assert.isTrue(Exit.isFailure(yield* Fiber.join(fifth)))
      yield* Fiber.interrupt(fourth)
    }))

  it.effect("an interrupted waiter leaves the queue; a failing holder returns its permit", () =>
    Effect.gen(function*() {
      const budget = yield* ProcessBudget.make({ max: 1 })
      const holder = yield* hold(budget)
      const gone = yield* Effect.forkChild(budget.withPermit(Effect.succeed("gone")), { startImmediately: true })
      const next = yield* Effect.forkChild(budget.withPermit(Effect.fail("boom")), { startImmediately: true })
      yield* Fiber.interrupt(gone)
      yield* holder.release
      assert.isTrue(Exit.isFailure(yield* Fiber.await(next)))
      assert.strictEqual(yield* budget.withPermit(Effect.succeed("free")), "free")
    }))

  it.effect("a waiter interrupted in the middle of the queue leaves it; the others keep their order", () =>
    Effect.gen(function*() {
      const budget = yield* ProcessBudget.make({ max: 1 })
      const holder = yield* hold(budget)
      const order: Array<string> = []
      const run = (name: string) =>
        Effect.forkChild(budget.withPermit(Effect.sync(() => order.push(name))), { startImmediately: true })
      const first = yield* run("a")
      const middle = yield* run("b")
      const last = yield* run("c")
      yield* Fiber.interrupt(middle)
      yield* holder.release
      yield* Fiber.join(first)
      yield* Fiber.join(last)
      assert.deepStrictEqual(order, ["a", "c"])
    }))

  it.effect("waits ten minutes by default before refusing", () =>
    Effect.gen(function*() {
      const budget = yield* ProcessBudget.make({ max: 1 })
      assert.strictEqual(budget.maxWaitMs, 600_000)
      const holder = yield* hold(budget)
      const waiter = yield* Effect.forkChild(budget.withPermit(Effect.succeed("ran")), { startImmediately: true })
      yield* TestClock.adjust("599999 millis")
      assert.isUndefined(waiter.pollUnsafe())
      yield* TestClock.adjust("1 milli")
      assert.strictEqual((yield* Effect.flip(Fiber.join(waiter))).message, 
        "Cannot run the command: the host's limit of 1 running commands stayed reached for 600 seconds; try again later")
      yield* holder.release
    }))

  it.effect("a permit handed to a waiter as it is interrupted passes to the next one", () =>
    Effect.gen(function*() {
      const budget = yield* ProcessBudget.make({ max: 1 })
      const holder = yield* hold(budget)
      const gone = yield* Effect.forkChild(budget.withPermit(Effect.never), { startImmediately: true })
      const next = yield* Effect.forkChild(budget.withPermit(Effect.succeed("next")), { startImmediately: true })
      // The release hands the permit to `gone`, which is interrupted before or after it runs.
      yield* holder.release
      yield* Fiber.interrupt(gone)
      assert.strictEqual(yield* Fiber.join(next), "next")
      assert.strictEqual(yield* budget.withPermit(Effect.succeed("free")), "free")
    }))

  it.effect("serves a thousand waiters in arrival order, never more than max at once", () =>
    Effect.gen(function*() {
      const budget = yield* ProcessBudget.make({ max: 3 })
      const order: Array<number> = []
      let running = 0
      let peak = 0
      const fibers = yield* Effect.forEach(Array.from({ length: 1000 }, (_, i) => i), (i) =>
        Effect.forkChild(
          budget.withPermit(Effect.gen(function*() {
              running++
              peak = Math.max(peak, running)
              order.push(i)
              // Hands control to the other fibers while the permit is held, so they pile up.
              yield* Effect.yieldNow
              running--
            })),
          { startImmediately: true }
        ))
      yield* Effect.forEach(fibers, Fiber.join)
      assert.strictEqual(peak, 3)
      assert.deepStrictEqual(order, Array.from({ length: 1000 }, (_, i) => i))
      assert.strictEqual(yield* budget.withPermit(Effect.succeed("free")), "free")
    }))
})

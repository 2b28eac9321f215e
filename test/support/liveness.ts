/**
 * Liveness probe for hostile-input tests: runs a hostile effect while the process goes on living.
 *
 * While the effect runs, a 25 ms interval timer records the longest gap between its ticks (a
 * blocked event loop shows as a long gap) and the peak RSS, and a second session in the same
 * process keeps completing trivial runs (a tool call, then a text reply). The probe returns only
 * once the effect has ended and that session has completed at least one run since the effect
 * started, so a frozen process times the test out instead of passing it.
 */
import { Agent, Model, Sandbox, Session, Tool } from "@condukt/core"
import { TestModel } from "@condukt/testing"
import { Deferred, Effect, Fiber, Ref, Schema } from "effect"

export interface Liveness<A> {
  readonly result: A
  /** The longest gap between two ticks of a 25 ms interval timer, in ms. */
  readonly maxGapMs: number
  /** The highest resident set size seen while the effect ran, in bytes. */
  readonly peakRssBytes: number
  /** Runs the second session completed while the effect ran. */
  readonly trivialRuns: number
}

const TICK_MS = 25

const Echo = Tool.make("echo", {
  description: "Echoes its text",
  parameters: Schema.Struct({ text: Schema.String }),
  call: ({ text }) => Effect.succeed(text)
})

/** Each run of the bystander is one tool call and two requests. */
const pingModel = TestModel.callThenAnswer("echo", { text: "pong" }, "done")

const ticker = Effect.acquireRelease(
  Effect.sync(() => {
    const stats = { maxGapMs: 0, peakRssBytes: process.memoryUsage.rss() }
    let last = performance.now()
    // Also called once at the end: a block that ends the effect shows before the next tick would.
    const sample = () => {
      const now = performance.now()
      stats.maxGapMs = Math.max(stats.maxGapMs, now - last)
      stats.peakRssBytes = Math.max(stats.peakRssBytes, process.memoryUsage.rss())
      last = now
      return stats
    }
    const timer = setInterval(sample, TICK_MS)
    return { sample, timer }
  }),
  ({ timer }) => Effect.sync(() => clearInterval(timer))
)

/**
 * Runs `hostile` while measuring the event loop, RSS and a second session's progress.
 */
export const probe = <A, E, R>(hostile: Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const session = yield* Session.start(Agent.make({ name: "bystander", model: "probe:ping", tools: [Echo] }), {
      sandbox: Sandbox.layerNoop()
    }).pipe(Effect.provideService(Model.Model, pingModel))
    const runs = yield* Ref.make(0)
    const ran = yield* Deferred.make<void>()
    const bystander = yield* Effect.forkScoped(
      Effect.forever(session.run("ping").pipe(Effect.andThen(Ref.update(runs, (n) => n + 1)), Effect.andThen(Deferred.succeed(ran, undefined))))
    )
    const { sample } = yield* ticker
    const [result] = yield* Effect.all([
      hostile,
      // At least one run completes while the hostile effect is under way or just after it.
      Deferred.await(ran)
    ], { concurrency: 2 })
    const { maxGapMs, peakRssBytes } = sample()
    const trivialRuns = yield* Ref.get(runs)
    yield* Fiber.interrupt(bystander)
    return { result, maxGapMs, peakRssBytes, trivialRuns } satisfies Liveness<A>
  }))

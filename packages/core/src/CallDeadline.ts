/**
 * CallDeadline — the executor's clock for the tool call a fiber runs, which a wait for a shared
 * resource can stop.
 *
 * The executor cuts every call at a deadline (its default, the agent's `toolTimeout`, or a tool's
 * own timeout plus a margin). Time a call spends waiting its turn for something the whole program
 * shares — a permit of the `ProcessBudget` — is not the call's running time: under load a Bash call
 * with `timeout: 120` may queue for minutes and must still get its 120 seconds once its process
 * starts. Such a wait runs inside `hold`, and the clock stands still while it lasts; the wait is
 * bounded by whoever owns the resource (the budget's `maxWait`), not by the call.
 *
 * A fiber outside any tool call sees a deadline whose `hold` does nothing.
 */
import { Clock, Context, Effect, type Fiber } from "effect"

/** @since 0.1.0 @category models */
export interface CallDeadline {
  /** Runs `wait` with the call's clock stopped: the time it takes is not counted against the call. */
  readonly hold: <A, E, R>(wait: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * `hold` for a wait that settles itself (the budget's, which has its own end for every way a
   * wait ends): stops the clock at `now`, by the calling fiber's clock; the effect it returns, run
   * once whatever ends the wait, starts it again.
   */
  readonly pause: (now: number) => Effect.Effect<void>
}

const none: CallDeadline = { hold: (wait) => wait, pause: () => Effect.void }

/**
 * The deadline of the tool call the current fiber runs (the executor provides it to each call).
 *
 * @since 0.1.0
 * @category references
 */
export const CallDeadline = Context.Reference<CallDeadline>("@condukt/core/CallDeadline", { defaultValue: () => none })

/** @since 0.1.0 @category models */
export interface Timer {
  /** What the call's fiber is given as its `CallDeadline`. */
  readonly deadline: CallDeadline
  /**
   * Starts the timer on the fiber running the call (forked with `deadline` in its context): once
   * `ms` milliseconds of running time have passed (the time spent in `hold` not counted), that
   * fiber is interrupted and `expired` turns true. The timer stops when the fiber ends.
   */
  readonly arm: (call: Fiber.Fiber<unknown, unknown>) => Effect.Effect<void>
  /** Whether the time ran out (the call's fiber was interrupted for it). */
  readonly expired: boolean
}

/**
 * A timer of `ms` milliseconds of running time. While the call runs it is one sleep, in a fiber of
 * its own that interrupts the call's when it ends; a hold stops that fiber, and its end starts
 * another for the time left, so a call waiting its turn has no timer at all (10,000 sessions whose
 * Bash calls queue for a permit hold that much less each: bench/session-heap.ts). The executor
 * arms it only for a call still running after its first synchronous steps: one that answers at
 * once never starts a timer (as `Effect.timeoutOption` never forks its sleep then).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (ms: number): Timer => new Alarm(ms)

/**
 * The timer as one object: its state in fields and its steps on the prototype, not a closure each
 * (a call waiting for a permit holds its timer: 10,000 of them notice nine closures each).
 */
class Alarm implements Timer, CallDeadline {
  #holds = 0
  /** The running time left when the alarm was last started (or the call's whole time). */
  #left: number
  #startedAt = 0
  #expired = false
  /** The fiber running the call, once armed; undefined again when the call ended. */
  #call: Fiber.Fiber<unknown, unknown> | undefined = undefined
  /** The fiber sleeping out the time left, while the call runs and nothing holds the clock. */
  #alarm: Fiber.Fiber<void> | undefined = undefined

  constructor(ms: number) {
    this.#left = ms
  }

  get deadline(): CallDeadline {
    return this
  }

  get expired(): boolean {
    return this.#expired
  }

  hold<A, E, R>(wait: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return Effect.uninterruptibleMask((restore) => Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.ensuring(restore(wait), this.pause(now))))
  }

  pause(now: number): Effect.Effect<void> {
    if (this.#holds++ === 0 && this.#alarm !== undefined) {
      this.#left -= now - this.#startedAt
      this.stop()
    }
    return Effect.flatMap(Clock.currentTimeMillis, (later) => --this.#holds > 0 || this.#call === undefined || this.#expired ? Effect.void : this.start(later))
  }

  arm(fiber: Fiber.Fiber<unknown, unknown>): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.#call = fiber
      fiber.addObserver(() => this.ended())
      // A call already ended (its observer ran at once) needs none; a hold under way starts it when it ends.
      return this.#call === undefined || this.#holds > 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => this.start(now))
    })
  }

  // Not a child of the fiber that starts it: a hold may end in a fiber the tool forked, which can
  // end before the call does. The alarm ends with the call instead (`arm`), or with a hold.
  private start(now: number): Effect.Effect<void> {
    this.#startedAt = now
    return Effect.map(Effect.forkDetach(Effect.andThen(Effect.sleep(this.#left), Effect.sync(() => this.ring()))), (fiber) => {
      this.#alarm = fiber
    })
  }

  private ring(): void {
    this.#alarm = undefined
    if (this.#holds > 0 || this.#call === undefined) return
    this.#expired = true
    this.#call.interruptUnsafe()
  }

  private stop(): void {
    const stopping = this.#alarm
    this.#alarm = undefined
    stopping?.interruptUnsafe()
  }

  private ended(): void {
    this.#call = undefined
    this.stop()
  }
}

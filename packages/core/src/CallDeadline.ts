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
export const make = (ms: number): Timer => {
  let holds = 0
  /** The running time left when the alarm was last started (or the call's whole time). */
  let left = ms
  let startedAt = 0
  let expired = false
  /** The fiber running the call, once armed; undefined again when the call ended. */
  let call: Fiber.Fiber<unknown, unknown> | undefined
  /** The fiber sleeping out the time left, while the call runs and nothing holds the clock. */
  let alarm: Fiber.Fiber<void> | undefined

  const ring = Effect.sync(() => {
    alarm = undefined
    if (holds > 0 || call === undefined) return
    expired = true
    call.interruptUnsafe()
  })
  // Not a child of the fiber that starts it: a hold may end in a fiber the tool forked, which can
  // end before the call does. The alarm ends with the call instead (`arm`), or with a hold.
  const start = (now: number): Effect.Effect<void> => {
    startedAt = now
    return Effect.map(Effect.forkDetach(Effect.andThen(Effect.sleep(left), ring)), (fiber) => {
      alarm = fiber
    })
  }
  const stop = (): void => {
    const stopping = alarm
    alarm = undefined
    stopping?.interruptUnsafe()
  }
  const ended = (): void => {
    call = undefined
    stop()
  }

  const resume = Effect.flatMap(Clock.currentTimeMillis, (now) => --holds > 0 || call === undefined || expired ? Effect.void : start(now))
  const pause = (now: number): Effect.Effect<void> => {
    if (holds++ === 0 && alarm !== undefined) {
      left -= now - startedAt
      stop()
    }
    return resume
  }
  const deadline: CallDeadline = {
    hold: (wait) =>
      Effect.uninterruptibleMask((restore) => Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.ensuring(restore(wait), pause(now)))),
    pause
  }

  return {
    deadline,
    arm: (fiber) =>
      Effect.suspend(() => {
        call = fiber
        fiber.addObserver(ended)
        // A hold already under way starts the alarm when it ends.
        return call === undefined || holds > 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, start)
      }),
    get expired() {
      return expired
    }
  }
}

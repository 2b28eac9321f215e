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
import { Clock, Context, Deferred, Effect, Exit } from "effect"

/** @since 0.1.0 @category models */
export interface CallDeadline {
  /** Runs `wait` with the call's clock stopped: the time it takes is not counted against the call. */
  readonly hold: <A, E, R>(wait: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

const none: CallDeadline = { hold: (wait) => wait }

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
  /** Ends once the call has run `ms` milliseconds, not counting the time spent in `hold`. */
  readonly passed: Effect.Effect<void>
}

/**
 * A timer of `ms` milliseconds of running time. Until something holds it, `passed` is one sleep,
 * as `Effect.timeoutOption` would be; a hold only adds a check when that sleep ends.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (ms: number): Timer => {
  let holds = 0
  let heldSince = 0
  let heldMs = 0
  let everHeld = false
  let released: Deferred.Deferred<void> | undefined

  const deadline: CallDeadline = {
    hold: (wait) =>
      Effect.acquireUseRelease(
        Effect.map(Clock.currentTimeMillis, (now) => {
          if (holds++ > 0) return
          heldSince = now
          everHeld = true
        }),
        () => wait,
        () =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            if (--holds > 0) return
            heldMs += now - heldSince
            if (released !== undefined) Deferred.doneUnsafe(released, Exit.void)
            released = undefined
          })
      )
  }

  const passed = Effect.flatMap(Clock.currentTimeMillis, (start) => {
    // Once the first sleep ends: wait out a hold still in progress, then sleep what the holds took.
    const check: Effect.Effect<void> = Effect.suspend(() => {
      if (holds > 0) return Effect.andThen(Deferred.await(released ??= Deferred.makeUnsafe<void>()), check)
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const left = ms - (now - start - heldMs)
        return left <= 0 ? Effect.void : Effect.andThen(Effect.sleep(left), check)
      })
    })
    return Effect.andThen(Effect.sleep(ms), Effect.suspend(() => everHeld ? check : Effect.void))
  })

  return { deadline, passed }
}

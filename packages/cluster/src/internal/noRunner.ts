/**
 * noRunner — what a call of the cluster's sessions does while no runner is up to answer it. A
 * client runs no session: with no runner registered and healthy, its message waits in the
 * database, and the call would wait with it, saying nothing. Checked every `waitNotice` (default
 * 30 s): once no runner has been up that long, a warning names the session and the call and says
 * what to do; with a `timeout`, a call no runner was up for in that time fails `Unavailable`. A
 * runner up again resets both: a long run on a live runner is never cut.
 */
import { Duration, Effect, Option } from "effect"
import { RunnerStorage } from "effect/cluster"
import * as Sessions from "@condukt/core/Sessions"

/** How long a call waits on a cluster with no runner up before it says so, and before it gives up. @since 0.1.0 @category models */
export interface WaitOptions {
  /** Waited this long with no runner up, a call logs a warning saying so. Default 30 seconds. */
  readonly waitNotice?: Duration.Input | undefined
  /** Waited this long with no runner up, a call fails `Unavailable`. Default: it waits for one. */
  readonly timeout?: Duration.Input | undefined
}

/**
 * Whether a runner of the cluster is registered and healthy (`undefined` when it cannot be told),
 * asked of the database at most once a second however many calls wait.
 */
export const runnerUp: Effect.Effect<Effect.Effect<boolean | undefined>> = Effect.flatMap(
  Effect.serviceOption(RunnerStorage.RunnerStorage),
  (storage) =>
    Effect.cachedWithTTL(
      Option.isNone(storage)
        ? Effect.succeed(undefined)
        : storage.value.getRunners.pipe(
          Effect.map((runners) => runners.some(([, healthy]) => healthy)),
          Effect.orElseSucceed(() => undefined)
        ),
      "1 second"
    )
)

/**
 * Never succeeds: raced against a call of `sessionId` (`call` names it), it warns, and with a
 * `timeout` fails, while no runner is up.
 */
export const watch = (
  up: Effect.Effect<boolean | undefined>,
  options: WaitOptions,
  sessionId: string,
  call: string
): Effect.Effect<never, Sessions.SessionsError> => {
  const notice = Duration.fromInputUnsafe(options.waitNotice ?? "30 seconds")
  const bound = options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout)
  // At least 10 ms between looks: a `waitNotice` or `timeout` of 0 would spin the call's fiber.
  const tick = Duration.max(Duration.millis(10), bound === undefined ? notice : Duration.min(notice, bound))
  let none = Duration.zero
  let said = false
  const check = Effect.gen(function*() {
    yield* Effect.sleep(tick)
    if ((yield* up) !== false) {
      none = Duration.zero
      said = false
      return
    }
    none = Duration.sum(none, tick)
    if (bound !== undefined && Duration.isGreaterThanOrEqualTo(none, bound)) {
      return yield* Effect.fail(
        new Sessions.SessionsError({
          sessionId,
          reason: new Sessions.Unavailable({ description: `no runner of the cluster was up for ${Duration.format(bound)} (${call})` })
        })
      )
    }
    if (said || !Duration.isGreaterThanOrEqualTo(none, notice)) return
    said = true
    yield* Effect.logWarning(
      `Session ${sessionId}: ${call} has waited ${Duration.format(none)} for a runner: none of the cluster's is up. ` +
        "A client runs no session: start a runner (Runner.layer) on the same database, or bound the wait with the client's timeout"
    )
  })
  return Effect.forever(check)
}


/**
 * noRunner — what a call of the cluster's sessions does while no runner is up to answer it. A
 * client runs no session: with no runner registered and healthy, its message waits in the
 * database, and the call would wait with it, saying nothing. Once a call has waited `waitNotice`
 * (default 30 s) with no runner up, a warning names the session and the call and says what to do;
 * with a `timeout`, a call no runner was up for in that time fails `Unavailable`. A runner up again
 * resets both: a long run on a live runner is never cut.
 *
 * One fiber watches every call of a `ClusterSessions` (`make`): a call only registers while it
 * waits, and the watcher looks at the calls every quarter of the shorter bound while any wait
 * (none while none does). A timer and a racing fiber per call cost a run through the cluster
 * ~0.04 ms (bench/cluster).
 */
import { Clock, Duration, Effect, Latch, Option, type Scope } from "effect"
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

/** A call waiting, as the watcher sees it. */
interface Waiting {
  readonly sessionId: string
  readonly call: string
  /** Told once, when the call has waited `timeout` with no runner up. */
  readonly giveUp: (error: Sessions.SessionsError) => void
  /** How long no runner has been up while it waited (ms), when the watcher last looked, whether the warning was given. */
  none: number
  last: number
  said: boolean
}

/** The watcher of a cluster's calls. */
export interface Watcher {
  /**
   * Registers a call of `sessionId` (`call` names it) as waiting until `done` is called: warned
   * about while no runner is up, and given up (`giveUp`, once, from the watcher's fiber) after the timeout.
   */
  readonly waiting: (sessionId: string, call: string, giveUp: (error: Sessions.SessionsError) => void) => { readonly done: () => void }
  /** Never succeeds: a call of `sessionId` raced against it fails `Unavailable` after the timeout with no runner up. */
  readonly never: (sessionId: string, call: string) => Effect.Effect<never, Sessions.SessionsError>
}

/** The watcher of the calls of one cluster (`up` tells whether a runner is), its fiber in the scope. */
export const make = (up: Effect.Effect<boolean | undefined>, options: WaitOptions): Effect.Effect<Watcher, never, Scope.Scope> =>
  Effect.gen(function*() {
    const notice = Duration.toMillis(Duration.fromInputUnsafe(options.waitNotice ?? "30 seconds"))
    const bound = options.timeout === undefined ? undefined : Duration.toMillis(Duration.fromInputUnsafe(options.timeout))
    // At least 10 ms between looks: a `waitNotice` or `timeout` of 0 would spin the watcher.
    const tick = Duration.millis(Math.max(10, (bound === undefined ? notice : Math.min(notice, bound)) / 4))
    const clock = yield* Clock.Clock
    const calls = new Set<Waiting>()
    // Open while a call waits: the watcher sleeps on it otherwise.
    const anyWaiting = Latch.makeUnsafe(false)

    const look = Effect.gen(function*() {
      yield* anyWaiting.await
      yield* Effect.sleep(tick)
      if (calls.size === 0) {
        // The calls ended before this look: the watcher sleeps until the next call waits.
        anyWaiting.closeUnsafe()
        return
      }
      const isUp = (yield* up) !== false
      const now = clock.currentTimeMillisUnsafe()
      for (const call of calls) {
        if (isUp) {
          call.none = 0
          call.said = false
        } else {
          call.none += now - call.last
        }
        call.last = now
        if (bound !== undefined && call.none >= bound) {
          calls.delete(call)
          call.giveUp(
            new Sessions.SessionsError({
              sessionId: call.sessionId,
              reason: new Sessions.Unavailable({ description: `no runner of the cluster was up for ${Duration.format(Duration.millis(bound))} (${call.call})` })
            })
          )
        } else if (!call.said && call.none >= notice) {
          call.said = true
          yield* Effect.logWarning(
            `Session ${call.sessionId}: ${call.call} has waited ${Duration.format(Duration.millis(notice))} for a runner: none of the cluster's is up. ` +
              "A client runs no session: start a runner (Runner.layer) on the same database, or bound the wait with the client's timeout"
          )
        }
      }
      // None left: the watcher sleeps until the next call waits.
      if (calls.size === 0) anyWaiting.closeUnsafe()
    })
    yield* Effect.forkScoped(Effect.forever(look))

    const waiting: Watcher["waiting"] = (sessionId, call, giveUp) => {
      const entry: Waiting = { sessionId, call, giveUp, none: 0, last: clock.currentTimeMillisUnsafe(), said: false }
      calls.add(entry)
      anyWaiting.openUnsafe()
      return { done: () => calls.delete(entry) }
    }
    return {
      waiting,
      never: (sessionId, call) =>
        Effect.callback<never, Sessions.SessionsError>((resume) => {
          const registered = waiting(sessionId, call, (error) => resume(Effect.fail(error)))
          return Effect.sync(registered.done)
        })
    }
  })

/**
 * served — what every handler shares: the sessions by id, the server's store, the runs it reads,
 * the open streams per principal and the request budget, and the one rule of ownership (a session
 * another principal started is answered as one that does not exist).
 *
 * A session the server started but that is not running (the server restarted, the session
 * stopped) is started again, from its store, by the first call that needs it.
 */
import { Clock, Context, Deferred, Effect, Layer, Option, Scope } from "effect"
import * as SessionId from "@condukt/core/SessionId"
import * as Sessions from "@condukt/core/Sessions"
import type * as Usage from "@condukt/core/Usage"
import { Principal } from "../Auth.ts"
import type * as Limits from "../Limits.ts"
import { BadRequest, Conflict, NotFound, TooManyRequests, Unavailable } from "../ServerError.ts"
import { ServerStore } from "../ServerStore.ts"
import type * as ServerStoreModule from "../ServerStore.ts"
import * as Runs from "./runs.ts"

export interface Settings {
  /** When a run an answer continues is read by this server (runs.ts). */
  readonly follow: Runs.Follow
  /** The agents a start may name, when the server knows them (a cluster's are the runners'). */
  readonly agents: ReadonlyArray<string> | undefined
  readonly defaultAgent: string | undefined
  readonly limits: Limits.Resolved
  readonly prices: ((agent: string) => Usage.Price | undefined) | undefined
}

export interface Service {
  readonly byId: Sessions.ByIdService
  readonly store: ServerStoreModule.Service
  readonly runs: Runs.Runs
  readonly settings: Settings
  /** The session as the calling principal may see it; `NotFound` when it is not theirs. */
  readonly own: (id: string) => Effect.Effect<ServerStoreModule.Owned, NotFound | Unavailable, Principal>
  /** `use` on the session, started again first when it is not running. */
  readonly live: <A>(owned: ServerStoreModule.Owned, use: () => Effect.Effect<A, Sessions.SessionsError>) => Effect.Effect<A, NotFound | Conflict | BadRequest | Unavailable>
  /**
   * Starts `prompt` in the session, woken from its store first when it is not running; the run and
   * the number of its first event. `Conflict` while a run started here runs.
   */
  readonly startRun: (owned: ServerStoreModule.Owned, prompt: string) => Effect.Effect<{ readonly active: Runs.Active; readonly first: number }, NotFound | Conflict | BadRequest | Unavailable>
  /** Takes one of the principal's stream slots, refused when none is free; the effect that gives it back. */
  readonly slot: Effect.Effect<Effect.Effect<void>, TooManyRequests, Principal>
}

export class Served extends Context.Service<Served, Service>()("@condukt/server/internal/Served") {}

const notYours = (id: string) => new NotFound({ message: `no session ${JSON.stringify(id.slice(0, 64))} here (start one with POST /sessions)` })

/** A by-id error as the server's answer. */
export const answerOf = (error: Sessions.SessionsError | ServerStoreModule.ServerStoreError): NotFound | Conflict | BadRequest | Unavailable => {
  if (error._tag === "ServerStoreError") return new Unavailable({ message: error.message })
  const reason = error.reason
  switch (reason._tag) {
    case "NotFound":
      return notYours(error.sessionId)
    case "ApprovalNotPending":
    case "ElicitationNotPending":
    case "AlreadyStarted":
      return new Conflict({ message: error.message })
    case "ElicitationInvalidAnswer":
    case "UnknownAgent":
    case "InvalidSessionId":
      return new BadRequest({ message: error.message })
    default:
      return new Unavailable({ message: error.message })
  }
}

export const layer = (settings: Settings): Layer.Layer<Served, never, Sessions.ById | ServerStore> =>
  Layer.effect(Served, Effect.gen(function*() {
    const byId = yield* Sessions.ById
    const store = yield* ServerStore
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer((exit) => Scope.close(scope, exit))
    const runs = Runs.make(byId, store, scope, settings.follow)
    const streams = new Map<string, number>()

    const own: Service["own"] = (id) =>
      // An id the one rule refuses (a NUL, a control character) was never started: it reaches no store.
      SessionId.check(id) !== undefined ? Effect.fail(notYours(id)) : Effect.flatMap(Principal, (principal) =>
        store.owned(id).pipe(
          Effect.mapError((error) => new Unavailable({ message: error.message })),
          Effect.flatMap((owned) =>
            Option.isSome(owned) && owned.value.principal === principal.id ? Effect.succeed(owned.value) : Effect.fail(notYours(id))
          )
        ))

    const live: Service["live"] = (owned, use) =>
      use().pipe(
        Effect.catchIf(
          (error) => error.reason._tag === "NotFound",
          () =>
            byId.start(owned.agent, { id: owned.id }).pipe(
              Effect.catchIf((error) => error.reason._tag === "AlreadyStarted", () => Effect.void),
              Effect.andThen(Effect.suspend(use))
            )
        ),
        Effect.mapError(answerOf)
      )

    const startRun: Service["startRun"] = (owned, prompt) => {
      const attempt = Effect.gen(function*() {
        const active = yield* runs.start(owned.id, prompt)
        if (active === undefined) {
          return yield* new Conflict({
            message: `a run is running in session ${JSON.stringify(owned.id.slice(0, 64))}: follow it (GET /sessions/{id}/events) or abort it (POST /sessions/{id}/abort) before starting another`
          })
        }
        return { active, first: yield* Deferred.await(active.started) }
      })
      // Only a run that finds the session not running pays for waking it (no round trip before each run).
      return attempt.pipe(
        Effect.catchIf(
          (error) => error._tag === "SessionsError" && error.reason._tag === "NotFound",
          () => Effect.andThen(live(owned, () => byId.pending(owned.id)), attempt)
        ),
        Effect.mapError((error) => (error._tag === "SessionsError" || error._tag === "ServerStoreError" ? answerOf(error) : error))
      )
    }

    const slot: Service["slot"] = Effect.flatMap(Principal, ({ id }) =>
      Effect.suspend(() => {
        const open = streams.get(id) ?? 0
        if (open >= settings.limits.streamsPerPrincipal) {
          return Effect.fail(new TooManyRequests({ message: `${open} streams are open for you already (at most ${settings.limits.streamsPerPrincipal}): close one first` }))
        }
        streams.set(id, open + 1)
        let given = false
        return Effect.succeed(Effect.sync(() => {
          if (given) return
          given = true
          const left = (streams.get(id) ?? 1) - 1
          if (left === 0) streams.delete(id)
          else streams.set(id, left)
        }))
      }))

    return Served.of({ byId, store, runs, settings, own, live, startRun, slot })
  }))

/** The clock's now, in epoch ms. */
export const now = Clock.currentTimeMillis

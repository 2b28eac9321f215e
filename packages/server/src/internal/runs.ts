/**
 * runs — the runs the server started: each read to its end by a fiber of the server's own scope
 * (not the request's), its events written to the store as they come, so a client that goes away
 * stops nothing and one that comes back finds everything. One run at a time per session: a second
 * is refused while the first runs (its caller may abort it, or wait for its end).
 *
 * When a run's stream breaks without its `AgentEnd` (the session's process went away), the server
 * writes an `Error` and an `AgentEnd` of its own (`seq` -1), so no reader waits for an end that will
 * not come.
 */
import { Clock, Deferred, Effect, Exit, Fiber, Option, Schedule, Scope, Stream } from "effect"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import * as Sessions from "@condukt/core/Sessions"
import * as OpenRun from "./openRun.ts"
import type { RunOutcome } from "../Api.ts"
import type * as ServerStore from "../ServerStore.ts"

/** A run the server is reading. */
export interface Active {
  /** The number of the run's first event (its AgentStart), once written; fails when the run never started. */
  readonly started: Deferred.Deferred<number, Sessions.SessionsError | ServerStore.ServerStoreError>
  /** How the run ended, once it has. */
  readonly ended: Deferred.Deferred<RunOutcome>
}

export interface Runs {
  /** Starts `prompt` in session `id`; `undefined` when a run started here still runs. */
  readonly start: (id: string, prompt: string) => Effect.Effect<Active | undefined, ServerStore.ServerStoreError>
  /**
   * Gives `answer` to session `id` with its events observed first, when no run started here is
   * read: the run the answer continues (one parked before this server started, or started by
   * another) is read and written as a started one.
   */
  readonly answer: <A, E>(id: string, answer: Effect.Effect<A, E>) => Effect.Effect<A, E | Sessions.SessionsError>
  readonly active: (id: string) => Active | undefined
  /**
   * In front of a cluster: closes the run of session `id` a dead server was reading (its lease
   * lapsed) with an `Error` and an `AgentEnd`; nothing otherwise. Asked before a session's run is
   * looked at (its events, its state, a chat's resume).
   */
  readonly settle: (id: string) => Effect.Effect<void>
}

/** The outcome a run's events add up to, as they come. */
class Tally {
  runId = ""
  turns = 0
  text = ""
  error: string | undefined = undefined
  outcome: RunOutcome["outcome"] | undefined = undefined
  lastEventId = 0

  add(event: SessionEvent.SessionEvent, id: number): void {
    this.lastEventId = id
    if (event.agentPath !== undefined) return
    switch (event._tag) {
      case "AgentStart":
        this.runId = event.runId
        break
      case "TurnStart":
        this.turns++
        this.text = ""
        break
      case "TextDelta":
        this.text += event.text
        break
      case "Error":
        this.error = event.message
        break
      case "AgentEnd":
        this.outcome = event.outcome
        break
    }
  }

  get result(): RunOutcome {
    return {
      runId: this.runId,
      outcome: this.outcome ?? "failed",
      text: this.text,
      turns: this.turns,
      ...(this.error === undefined ? {} : { error: this.error }),
      lastEventId: this.lastEventId
    }
  }
}

/**
 * Whether this server is the only one reading its sessions' runs (`always`: the sessions live in
 * this process), or one of several in front of a cluster (`idle`): then a run is read under a lease
 * in the store (`LEASE`, renewed while it is read), a run another server reads is neither started
 * again nor followed here (two would write every event twice), and a run whose reader's lease lapsed
 * (its server died) is closed with an `Error` and an `AgentEnd` when a new run starts.
 */
export type Follow = "always" | "idle"

/** How long a lease of reading a run holds (ms) unless renewed, and how often its reader renews it. */
export const LEASE = 10_000
const RENEW = 3_000

/** Whether `event` ends its run: the session's own AgentEnd, not a sub-agent's. */
const endsRun = (event: SessionEvent.SessionEvent): boolean => event._tag === "AgentEnd" && event.agentPath === undefined

export const make = (byId: Sessions.ByIdService, store: ServerStore.Service, scope: Scope.Scope, follow: Follow): Runs => {
  const runs = new Map<string, Active>()
  /** This server's name in the leases, and each run's: a run's lease is its own. */
  const server = globalThis.crypto.randomUUID()
  let counter = 0

  /**
   * Takes the lease of reading session `id`'s run as `holder` (always, alone in front of the
   * sessions); false when another server's good one stands. With `closing`, the run a lapsed lease
   * left open is closed first.
   */
  const leased = (id: string, holder: string, closing: boolean) =>
    follow === "always" ? Effect.succeed(true) : Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const lease = yield* store.lease(id, holder, now, now + LEASE)
      if (!lease.taken) return false
      if (closing && lease.lapsed !== undefined) {
        const open = yield* OpenRun.find(store, id)
        if (Option.isSome(open)) {
          const base = { sessionId: id, runId: open.value.event.runId, seq: -1 }
          const message = "the server reading this run went away before its end: the session's history holds what the run did"
          yield* store.append(id, [{ _tag: "Error", ...base, message }, { _tag: "AgentEnd", ...base, outcome: "failed" }], now)
        }
      }
      return true
    })

  /**
   * `use` with `holder`'s lease renewed while it runs, and given back after — or before, by the
   * effect `use` is handed (the renewals stopped first, so none takes the lease again after it).
   */
  const holding = <A, E>(id: string, holder: string, use: (letGo: Effect.Effect<void>) => Effect.Effect<A, E>) =>
    follow === "always" ? use(Effect.void) : Effect.gen(function*() {
      const renew = Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.ignore(store.lease(id, holder, now, now + LEASE)))
      const renewing = yield* Effect.forkIn(Effect.repeat(Effect.delay(renew, RENEW), Schedule.forever), scope)
      const letGo = Effect.andThen(Fiber.interrupt(renewing), Effect.ignore(store.release(id, holder)))
      return yield* Effect.ensuring(use(letGo), letGo)
    })

  const drive = (id: string, holder: string, events: Stream.Stream<SessionEvent.SessionEvent, Sessions.SessionsError>, active: Active) =>
    holding(id, holder, (letGo) => Effect.gen(function*() {
      const tally = new Tally()
      const write = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.flatMap(store.append(id, events, now), (ids) => {
            events.forEach((event, i) => tally.add(event, ids[i]!))
            if (ids.length > 0) Deferred.doneUnsafe(active.started, Exit.succeed(ids[0]!))
            if (tally.outcome === undefined) return Effect.void
            // Its end written, the run is over here, whatever its stream takes to close (a cluster's);
            // its readers get their turn first, so its last events reach them before its caller's answer.
            return Effect.andThen(Effect.andThen(Effect.yieldNow, letGo), Effect.sync(() => {
              forget(id, active)
              Deferred.doneUnsafe(active.ended, Exit.succeed(tally.result))
            }))
          }))
      const exit = yield* Effect.exit(Stream.runForEachArray(events, write))
      if (tally.outcome === undefined && Exit.isFailure(exit)) {
        const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
        // Nothing was written: the run never started (no such session, a store down); its caller is told.
        if (tally.lastEventId === 0 && failure !== undefined) {
          // Forgotten first: the caller told may start the run again at once (the session woken).
          forget(id, active)
          yield* Deferred.fail(active.started, failure.error)
        } else {
          const message = failure === undefined ? "the run's stream ended without its end" : failure.error.message
          const base = { sessionId: id, runId: tally.runId, seq: -1 }
          yield* Effect.ignore(write([{ _tag: "Error", ...base, message }, { _tag: "AgentEnd", ...base, outcome: "failed" }]))
        }
      }
      // A followed run that wrote nothing (the session stopped first): its waiters are told. (Its
      // error built only then: an error's stack and fields cost every run that started.)
      if (!Deferred.isDoneUnsafe(active.started)) {
        yield* Deferred.fail(active.started, Sessions.failed(id, { message: "the run ended before it sent an event" }))
      }
      yield* Deferred.succeed(active.ended, tally.result)
    })).pipe(Effect.ensuring(Effect.sync(() => forget(id, active))))

  /** `active` no longer the session's run (a later one is left alone). */
  const forget = (id: string, active: Active) => {
    if (runs.get(id) === active) runs.delete(id)
  }

  const register = Effect.gen(function*() {
    const started = yield* Deferred.make<number, Sessions.SessionsError | ServerStore.ServerStoreError>()
    const ended = yield* Deferred.make<RunOutcome>()
    return { started, ended } satisfies Active
  })

  /** The observed events of the run an answer continues: its own, to its AgentEnd. */
  const continued = (events: Stream.Stream<SessionEvent.SessionEvent>) =>
    events.pipe(
      Stream.filter((event) => event.runId !== ""),
      Stream.takeUntil(endsRun)
    )

  return {
    active: (id) => runs.get(id),
    settle: (id) =>
      follow === "always" || runs.has(id) ? Effect.void : Effect.ignore(Effect.gen(function*() {
        const holder = `${server}/${++counter}`
        if (yield* leased(id, holder, true)) yield* store.release(id, holder)
      })),
    start: (id, prompt) =>
      Effect.suspend(() => {
        if (runs.has(id)) return Effect.succeed(undefined)
        return Effect.gen(function*() {
          const holder = `${server}/${++counter}`
          if (!(yield* leased(id, holder, true))) return undefined
          // Another request of this server started one meanwhile: its lease is that run's.
          if (runs.has(id)) return yield* Effect.as(follow === "always" ? Effect.void : Effect.ignore(store.release(id, holder)), undefined)
          const active = yield* register
          // Registered before the fiber runs, so a second start sees it at once.
          runs.set(id, active)
          // Ended at its AgentEnd: a stream that takes a while to close (a cluster's) holds no run open.
          yield* Effect.forkIn(drive(id, holder, Stream.takeUntil(byId.stream(id, prompt), endsRun), active), scope)
          return active
        })
      }),
    answer: (id, answer) =>
      Effect.gen(function*() {
        if (runs.has(id)) return yield* answer
        const holder = `${server}/${++counter}`
        // Another server reads the run (or the store cannot say): the answer alone.
        if (!(yield* Effect.orElseSucceed(leased(id, holder, false), () => false))) return yield* answer
        return yield* Effect.gen(function*() {
          const own = yield* Scope.fork(scope, "sequential")
          const events = yield* Effect.onError(Scope.provide(byId.events(id), own), () =>
            Effect.andThen(Scope.close(own, Exit.void), follow === "always" ? Effect.void : Effect.ignore(store.release(id, holder))))
          const active = yield* register
          runs.set(id, active)
          const fiber = yield* Effect.forkIn(Effect.ensuring(drive(id, holder, continued(events), active), Scope.close(own, Exit.void)), scope)
          // Refused: nothing continues; the follower goes.
          return yield* Effect.onError(answer, () => Effect.andThen(Fiber.interrupt(fiber), Effect.sync(() => forget(id, active))))
        })
      })
  }
}

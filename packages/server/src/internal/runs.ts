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
import { Clock, Deferred, Effect, Exit, type Scope, Stream } from "effect"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import type * as Sessions from "@condukt/core/Sessions"
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
  readonly start: (id: string, prompt: string) => Effect.Effect<Active | undefined>
  readonly active: (id: string) => Active | undefined
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

export const make = (byId: Sessions.ByIdService, store: ServerStore.Service, scope: Scope.Scope): Runs => {
  const runs = new Map<string, Active>()

  const drive = (id: string, prompt: string, active: Active) =>
    Effect.gen(function*() {
      const tally = new Tally()
      const write = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.map(store.append(id, events, now), (ids) => {
            events.forEach((event, i) => tally.add(event, ids[i]!))
            if (ids.length > 0) Deferred.doneUnsafe(active.started, Exit.succeed(ids[0]!))
          }))
      const exit = yield* Effect.exit(Stream.runForEachArray(byId.stream(id, prompt), write))
      if (tally.outcome === undefined && Exit.isFailure(exit)) {
        const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
        // Nothing was written: the run never started (no such session, a store down); its caller is told.
        if (tally.lastEventId === 0 && failure !== undefined) {
          yield* Deferred.fail(active.started, failure.error)
        } else {
          const message = failure === undefined ? "the run's stream ended without its end" : failure.error.message
          const base = { sessionId: id, runId: tally.runId, seq: -1 }
          yield* Effect.ignore(write([{ _tag: "Error", ...base, message }, { _tag: "AgentEnd", ...base, outcome: "failed" }]))
        }
      }
      yield* Deferred.succeed(active.ended, tally.result)
    }).pipe(Effect.ensuring(Effect.sync(() => runs.delete(id))))

  return {
    active: (id) => runs.get(id),
    start: (id, prompt) =>
      Effect.suspend(() => {
        if (runs.has(id)) return Effect.succeed(undefined)
        return Effect.gen(function*() {
          const started = yield* Deferred.make<number, Sessions.SessionsError | ServerStore.ServerStoreError>()
          const ended = yield* Deferred.make<RunOutcome>()
          const active: Active = { started, ended }
          // Registered before the fiber runs, so a second start sees it at once.
          runs.set(id, active)
          yield* Effect.forkIn(drive(id, prompt, active), scope)
          return active
        })
      })
  }
}

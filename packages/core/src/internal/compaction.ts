/**
 * compaction — running a session's Compactor on its history.
 *
 * The compactor works on the history as it was when it started (a summary may take a while); the
 * result replaces the history only if the session has not moved meanwhile (no run has started),
 * so a compaction never loses a message. The new history is saved whole, and a Compacted event
 * gives the sizes: into the run that ended, or to observers with an empty run id.
 */
import { Effect } from "effect"
import * as History from "../History.ts"
import type * as Compactor from "../Compactor.ts"
import type * as Loop from "../Loop.ts"
import type * as SessionEvent from "../SessionEvent.ts"
import * as EventHub from "./eventHub.ts"
import * as Persistence from "./persistence.ts"

/**
 * What compaction reads and writes of a session's actor (the actor is one; this module names only
 * the fields it touches, so it does not import the actor that calls it).
 */
export interface Compactable {
  readonly id: string
  readonly redact: (text: string) => string
  readonly hub: EventHub.Hub
  loop: Loop.State
  readonly assigns: Readonly<Record<string, unknown>>
  readonly persistence: Persistence.Persistence | undefined
  readonly compactor: Compactor.Service | undefined
  seq: number
}

/** Compacts the history of an idle session; a session in the middle of a run is left alone. */
export const compact = Effect.fnUntraced(function*(actor: Compactable, announce: (payload: SessionEvent.Payload) => Effect.Effect<void>) {
  const compactor = actor.compactor
  if (compactor === undefined) return
  const before = actor.loop
  if (before.status !== "Idle") return
  const messages = History.toArray(before.history)
  const compacted = yield* compactor.compact(messages)
  if (compacted === messages) return
  const state = { ...before, history: History.fromIterable(compacted) }
  if (actor.loop !== before) return
  actor.loop = state
  yield* announce({ _tag: "Compacted", before: messages.length, after: compacted.length })
  yield* Persistence.commit(actor.persistence, state.history, actor.assigns, actor.redact)
})

/** After a completed run: a failure is logged and the history kept, as Condukt does. */
export const afterRun = (actor: Compactable, announce: (payload: SessionEvent.Payload) => Effect.Effect<void>): Effect.Effect<void> =>
  compact(actor, announce).pipe(Effect.catch((error) => Effect.logWarning(actor.redact(`Session ${actor.id}: ${error.message}`))))

/** Announces to observers between runs, with an empty run id. */
export const betweenRuns = (actor: Compactable) => (payload: SessionEvent.Payload): Effect.Effect<void> =>
  Effect.suspend(() => {
    // The payload is one member of the union; adding the base fields gives back that member.
    const event = { ...payload, sessionId: actor.id, runId: "", seq: actor.seq++ } as SessionEvent.SessionEvent
    return EventHub.deliver(actor.hub, undefined, event, false)
  })

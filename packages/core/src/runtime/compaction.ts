/**
 * compaction — shortening an idle session's history with its `Compactor`.
 *
 * A session in the middle of a run is left alone. The compactor works on the history as it was
 * when it started (a summary may take a while); the result replaces it only if no run has moved
 * the loop meanwhile, so a compaction never loses a message. The new history is saved whole, and a
 * Compacted event gives the sizes: into the run that ended, or to observers between runs. After a
 * run, a failing compactor is logged and the history kept, as Condukt does.
 */
import { Effect } from "effect"
import type * as Compactor from "../Compactor.ts"
import * as History from "../History.ts"
import type { Conversation } from "./Conversation.ts"
import * as Persistence from "./persistence.ts"
import type { Publisher, Run } from "./Run.ts"

/** Compacts the history of an idle session, publishing into `run` (the one that ended) or between runs. */
export const compact = <R>(conversation: Conversation<R>, events: Publisher, run: Run | undefined): Effect.Effect<void, Compactor.CompactorError> =>
  Effect.suspend(() => {
    const compactor = conversation.compactor
    const before = conversation.loop
    if (compactor === undefined || before.status !== "Idle") return Effect.void
    const messages = History.toArray(before.history)
    return Effect.flatMap(compactor.compact(messages), (compacted) => {
      if (compacted === messages || conversation.loop !== before) return Effect.void
      const state = { ...before, history: History.fromIterable(compacted) }
      conversation.loop = state
      return Effect.andThen(
        events.publish(run, { _tag: "Compacted", before: messages.length, after: compacted.length }, run !== undefined),
        Effect.suspend(() => Persistence.commit(conversation.persistence, state.history, conversation.assigns, conversation.redact))
      )
    })
  })

/** After a completed run: a failure is logged and the history kept. */
export const afterRun = <R>(conversation: Conversation<R>, events: Publisher, run: Run): Effect.Effect<void> =>
  Effect.catch(compact(conversation, events, run), (error) => Effect.logWarning(conversation.redact(`Session ${conversation.id}: ${error.message}`)))

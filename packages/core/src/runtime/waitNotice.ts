/**
 * waitNotice — what the caller of `session.run` does while it waits: once it has waited `after`
 * (`RunOptions.waitNotice`, default 30 s) with calls nobody has answered, it says what it waits
 * for — a `StillWaiting` event and a warning in the log, naming the calls and how to answer or
 * bound them — and says it again whenever the waiting calls change. Its timer also keeps a process
 * whose only work is that wait alive: a parked run holds no fiber and no timer, and without one
 * Node would exit mid-await (13, "unsettled top-level await") with nothing printed.
 */
import { Duration, Effect } from "effect"
import type { Outbox } from "./outbox.ts"
import type { Run } from "./Run.ts"

/** How long a caller waits on unanswered calls before it says so, unless its run's options say otherwise. */
export const DEFAULT_AFTER: Duration.Input = "30 seconds"

/** The shortest wait between two looks (a `waitNotice` of 0 or less would spin the caller's fiber). */
const MIN_AFTER_MS = 10

/** The most calls a warning names (the event carries them all). */
const MAX_NAMED = 20

/** A call waiting for an answer, as `session.pending` lists it. */
interface Waiting {
  readonly callId: string
  readonly tool: string
}

/** What a watch has reported: the waiting calls it named last, and how long it has waited. */
interface Watched {
  reported: string
  waitedMs: number
}

/**
 * Never ends: every `after`, when `pending` lists calls it has not yet reported, publishes them
 * into `run` and logs a warning. A child fiber of the caller's, interrupted when its wait ends. No generator:
 * what a caller holds while it sleeps is a timer and this record (bench/approvals.ts).
 */
export const watch = (
  outbox: Outbox,
  run: Run,
  pending: Effect.Effect<ReadonlyArray<Waiting>>
): Effect.Effect<never> => {
  const afterMs = Math.max(MIN_AFTER_MS, Duration.toMillis(Duration.fromInputUnsafe(run.options?.waitNotice ?? DEFAULT_AFTER)))
  const watched: Watched = { reported: "", waitedMs: 0 }
  const check = Effect.flatMap(pending, (calls) => {
    watched.waitedMs += afterMs
    return report(outbox, run, calls, watched)
  })
  return Effect.forever(Effect.andThen(Effect.sleep(afterMs), check))
}

/** Publishes and logs `calls`, unless none wait or they are the ones reported last. */
const report = (outbox: Outbox, run: Run, calls: ReadonlyArray<Waiting>, watched: Watched): Effect.Effect<void> => {
  const key = calls.map((call) => call.callId).join(" ")
  if (calls.length === 0 || key === watched.reported) return Effect.void
  watched.reported = key
  const waitedMs = Math.round(watched.waitedMs)
  const listed = calls.slice(0, MAX_NAMED).map((call) => `${call.tool} (${call.callId})`).join(", ") +
    (calls.length > MAX_NAMED ? ` and ${calls.length - MAX_NAMED} more` : "")
  return Effect.andThen(
    outbox.publish(run, { _tag: "StillWaiting", calls: calls.map(({ callId, tool }) => ({ callId, tool })), waitedMs }),
    Effect.logWarning(
      `Session ${outbox.id}: run ${run.id} has waited ${Duration.format(Duration.millis(waitedMs))} for an answer to ${listed}; ` +
        "answer with session.approve / session.deny (or an answerer), or bound the wait with approvals.timeout"
    )
  )
}

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

/** A call waiting for an answer, as `session.pending` lists it. */
interface Waiting {
  readonly callId: string
  readonly tool: string
}

/**
 * Never ends: every `after`, when `pending` lists calls it has not yet reported, publishes them
 * into `run` and logs a warning. Raced against the run's result, so it ends with it.
 */
export const watch = (
  outbox: Outbox,
  run: Run,
  pending: Effect.Effect<ReadonlyArray<Waiting>>
): Effect.Effect<never> => {
  const after = Duration.fromInputUnsafe(run.options?.waitNotice ?? DEFAULT_AFTER)
  let reported = ""
  let waited = Duration.zero
  const tick = Effect.gen(function*() {
    yield* Effect.sleep(after)
    waited = Duration.sum(waited, after)
    const calls = yield* pending
    const key = calls.map((call) => call.callId).join(" ")
    if (calls.length === 0 || key === reported) return
    reported = key
    const waitedMs = Math.round(Duration.toMillis(waited))
    yield* outbox.publish(run, { _tag: "StillWaiting", calls: calls.map(({ callId, tool }) => ({ callId, tool })), waitedMs })
    const listed = calls.map((call) => `${call.tool} (${call.callId})`).join(", ")
    yield* Effect.logWarning(
      `Session ${outbox.id}: run ${run.id} has waited ${Duration.format(waited)} for an answer to ${listed}; ` +
        "answer with session.approve / session.deny (or an answerer), or bound the wait with approvals.timeout"
    )
  })
  return Effect.forever(tick)
}

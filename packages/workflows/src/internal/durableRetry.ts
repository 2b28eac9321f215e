/**
 * durableRetry — a durable run that failed, given again by its id, runs again from its failed
 * steps (ADR 0084). The engine answers a run that ended from its end record and a step from its
 * output record, whatever they hold; so before the runner starts, a failed run's end is cleared
 * (what `effect/cluster`'s storage does to reset a request: its reply deleted, its message
 * unprocessed, so the runner replays the run) and each step whose latest record is a failure runs
 * as its next attempt, which has no record yet (the engine keys a step's records by attempt, as
 * `Activity.retry` does within a process). The steps that finished keep their outputs and do not
 * run again; the failed attempts' records stay, each with its failure.
 *
 * Each retry is a row of `condukt_workflow_retries` (the run, its attempt — 2 for the first
 * retry — and the steps it runs again), written with the reset in one transaction. A run that
 * succeeded is left as it is, answered from its journal; one that has not ended (its process
 * died, or was stopped) resumes, and is a retry only if a step of it failed. It refuses nothing
 * of its own: the records are read (and refused when unreadable) by `journalRecords`, and the
 * caller holds the run's lease.
 */
import { Effect, type Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { DurableFailed } from "../WorkflowError.ts"
import * as JournalRecords from "./journalRecords.ts"
import { BUSY } from "./sqlBusy.ts"

const RETRIES_TABLE = "CREATE TABLE IF NOT EXISTS condukt_workflow_retries (" +
  "run_id TEXT NOT NULL, attempt INTEGER NOT NULL, steps TEXT NOT NULL, PRIMARY KEY (run_id, attempt))"

/** A retry of a failed run: the run's attempt it starts (2 for the first) and the steps that failed and run again, sorted. */
export interface Retry {
  readonly attempt: number
  readonly steps: ReadonlyArray<string>
}

/** How a resumed run goes on: the attempt each step with records runs as, and the retry it is, when it is one. */
export interface Plan {
  readonly attempts: ReadonlyMap<string, number>
  readonly retry: Retry | undefined
}

/**
 * Reads run `runId`'s records (refused when one cannot be read) and, when the run failed, makes
 * it a retry: recorded, its end cleared, its failed steps moved to their next attempt.
 */
export const prepare = <S extends Schema.Top & { readonly "DecodingServices": never }>(
  runId: string,
  location: string,
  runResult: S
): Effect.Effect<Plan, DurableFailed, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const recorded = yield* JournalRecords.read(runId, location, runResult)
    const steps = [...recorded.steps].filter(([, step]) => step.failed).map(([id]) => id).sort()
    // A failed step without the run's end (its process died before recording it, or after a
    // retry cleared it) is retried too: the run given again would only fail with it once more.
    const retried = recorded.end === "failed" || (recorded.end === "none" && steps.length > 0)
    const attempts = new Map<string, number>()
    for (const [id, step] of recorded.steps) attempts.set(id, retried && step.failed ? step.attempt + 1 : step.attempt)
    if (!retried) return { attempts, retry: undefined }
    const attempt = yield* record(runId, location, steps)
    return { attempts, retry: { attempt, steps } }
  })

/** Records the retry and clears the run's end, in one transaction; the retry's attempt. */
const record = (runId: string, location: string, steps: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Postgres may refuse one of two `CREATE TABLE IF NOT EXISTS` run at once: tried again.
    yield* Effect.retry(Effect.retry(sql.unsafe(RETRIES_TABLE), BUSY), { times: 2 })
    const entityType = `Workflow/condukt/${runId}`
    const unprocessed = sql.onDialectOrElse({ pg: () => sql.literal("FALSE"), orElse: () => sql.literal("0") })
    const transaction = sql.withTransaction(Effect.gen(function*() {
      const rows = yield* sql<{ readonly attempt: number | string | null }>`SELECT MAX(attempt) AS attempt
        FROM condukt_workflow_retries WHERE run_id = ${runId}`
      const attempt = Number(rows[0]?.attempt ?? 1) + 1
      yield* sql`INSERT INTO condukt_workflow_retries (run_id, attempt, steps) VALUES (${runId}, ${attempt}, ${JSON.stringify(steps)})`
      // What SqlMessageStorage's `clearReplies` does to the run's record (tag `run`, one per run).
      yield* sql`DELETE FROM cluster_replies WHERE kind = 0 AND request_id IN (
        SELECT id FROM cluster_messages WHERE entity_type = ${entityType} AND tag = 'run' AND kind = 0)`
      yield* sql`UPDATE cluster_messages SET processed = ${unprocessed}, last_reply_id = NULL, last_read = NULL
        WHERE entity_type = ${entityType} AND tag = 'run' AND kind = 0`
      return attempt
    }))
    return yield* Effect.retry(transaction, BUSY)
  }).pipe(Effect.mapError((error: SqlError.SqlError) =>
    new DurableFailed({
      reason: "StoreUnavailable",
      runId,
      location,
      description: `the database ${location} cannot record the retry of run ${runId}: ${error.message}`,
      cause: error
    })
  ))

/**
 * journalRecords — reads back, before a resumed run's runner starts, every record the engine
 * keeps for the run (its messages and replies in `effect/cluster`'s SQL storage: the run's start
 * and end, each step's start and output), and refuses the run when one is not what the engine
 * wrote (`JournalCorrupted`, naming the record). The engine, given such a record, fails in ways
 * that name neither the run nor the record (`PersistenceError`, a schema issue), or replays the
 * run around it; so the records are checked with the schemas the engine decodes them with, here.
 * What they hold is summed up on the way (`Recorded`: how the run ended, each step's latest
 * attempt and whether it failed there), for a failed run's retry (`durableRetry`).
 *
 * The tables are the storage's defaults (`SingleRunner.layer` uses `SqlMessageStorage.layer`
 * with its `cluster_` prefix); a run's records are those of its workflow's entity type,
 * `Workflow/condukt/<runId>`. A database where the engine never started holds none.
 */
import { Effect, Exit, Result, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { Workflow } from "effect/workflow"
import { type DurableFailed, WorkflowFailed } from "../WorkflowError.ts"
import { corrupted } from "./corruptJournal.ts"

/** A record's reply as stored: an `Exit` of the workflow's or activity's `Workflow.Result`. */
const replySchema = <S extends Schema.Top, E extends Schema.Top>(success: S, error: E) =>
  Schema.toCodecJson(Schema.Exit(Workflow.Result({ success, error }), Schema.Never, Schema.Defect()))

const STARTED = Schema.decodeUnknownResult(replySchema(Schema.Void, Schema.Never))
const STEP = Schema.decodeUnknownResult(replySchema(Schema.Json, WorkflowFailed))

interface Row {
  readonly tag: string | null
  readonly payload: string | null
  readonly headers: string | null
  readonly reply_kind: number | string | bigint | null
  readonly reply: string | null
}

/** `text` parsed, or undefined when it is not JSON. */
const parse = (text: string | null): { readonly value: unknown } | undefined => {
  if (text === null) return undefined
  try {
    return { value: JSON.parse(text) as unknown }
  } catch {
    return undefined
  }
}

/** What a record is, as a person reads it: the record itself (`message`) and its reply. */
const naming = (tag: string | null, payload: unknown) => {
  const name = typeof payload === "object" && payload !== null && "name" in payload && typeof payload.name === "string"
    ? payload.name
    : undefined
  if (tag === "run") return { message: "the record of the run's start", reply: "the record of the run's end", kind: "run" } as const
  if (tag === "activity" && name !== undefined && name.endsWith("/started")) {
    const step = name.slice(0, -"/started".length)
    return { message: `the record that step ${step} started`, reply: `the record that step ${step} started`, kind: "started", step } as const
  }
  if (tag === "activity" && name !== undefined) {
    return { message: `the record of step ${name}`, reply: `the recorded output of step ${name}`, kind: "step", step: name } as const
  }
  if (tag === "activity") return { message: "the record of one of its steps", reply: "the record of one of its steps", kind: "other" } as const
  return { message: `a record of the run tagged ${tag}`, reply: `a reply to its record tagged ${tag}`, kind: "other" } as const
}

/** Whether the engine's tables are there (a run whose process died before its runner started has none). */
const tablesExist = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql.onDialectOrElse({
      pg: () =>
        sql<{ readonly n: number | string }>`SELECT COUNT(*) AS n FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_name IN ('cluster_messages', 'cluster_replies')`,
      orElse: () =>
        sql<{ readonly n: number | string }>`SELECT COUNT(*) AS n FROM sqlite_master
          WHERE type = 'table' AND name IN ('cluster_messages', 'cluster_replies')`
    }),
    (rows) => Number(rows[0]?.n ?? 0) === 2
  )

/**
 * A step as its records leave it: the latest attempt of it recorded (the engine keys a step's
 * records by attempt; 1 unless a retry ran it again), and whether its output record of that
 * attempt holds a failure.
 */
export interface StepRecord {
  readonly attempt: number
  readonly failed: boolean
}

/** What a run's records hold: how it ended (not yet, when its process died or was stopped) and each step that has a record. */
export interface Recorded {
  readonly end: "none" | "succeeded" | "failed"
  readonly steps: ReadonlyMap<string, StepRecord>
}

/** How a decoded reply ends its run or step: `Complete` with a success or a failure, else not (`Suspended`). */
const outcome = (reply: unknown): Recorded["end"] => {
  if (!Exit.isExit(reply) || Exit.isFailure(reply)) return "none"
  const result: unknown = reply.value
  if (typeof result !== "object" || result === null || !("exit" in result) || !Exit.isExit(result.exit)) return "none"
  return Exit.isSuccess(result.exit) ? "succeeded" : "failed"
}

/** The attempt a record's payload names (`{ name, attempt }`); 1 when it names none. */
const attemptOf = (payload: unknown) =>
  typeof payload === "object" && payload !== null && "attempt" in payload && typeof payload.attempt === "number" ? payload.attempt : 1

/**
 * Reads run `runId`'s engine records back: refused when one cannot be read; `runResult` is the
 * schema of the run's output.
 */
export const read = <S extends Schema.Top & { readonly "DecodingServices": never }>(
  runId: string,
  location: string,
  runResult: S
): Effect.Effect<Recorded, DurableFailed, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const unreadable = (error: SqlError.SqlError) =>
      corrupted(runId, location, `its records (cluster_messages, cluster_replies) cannot be read: ${error.message}`, error)
    let end: Recorded["end"] = "none"
    const steps = new Map<string, StepRecord>()
    if (!(yield* Effect.mapError(tablesExist(sql), unreadable))) return { end, steps }
    const rows = yield* Effect.mapError(
      sql<Row>`SELECT m.tag AS tag, m.payload AS payload, m.headers AS headers, r.kind AS reply_kind, r.payload AS reply
        FROM cluster_messages m LEFT JOIN cluster_replies r ON r.request_id = m.id
        WHERE m.entity_type = ${`Workflow/condukt/${runId}`} AND m.kind = 0
        ORDER BY m.id`,
      unreadable
    )
    const RUN = Schema.decodeUnknownResult(replySchema(runResult, WorkflowFailed))
    for (const row of rows) {
      const payload = parse(row.payload)
      const name = naming(row.tag, payload?.value)
      if (payload === undefined || parse(row.headers) === undefined) {
        return yield* corrupted(runId, location, `${name.message} (a row of cluster_messages) is not JSON`)
      }
      if (row.tag === "activity" && name.kind === "other") {
        return yield* corrupted(runId, location, `${name.message} (a row of cluster_messages) names no step`)
      }
      const attempt = attemptOf(payload.value)
      if (name.kind === "started" || name.kind === "step") {
        const known = steps.get(name.step)
        if (known === undefined || attempt > known.attempt) steps.set(name.step, { attempt, failed: false })
      }
      if (row.reply === null) continue
      const reply = parse(row.reply)
      if (reply === undefined) return yield* corrupted(runId, location, `${name.reply} (a row of cluster_replies) is not JSON`)
      // Only a final reply (kind 0, an exit) is decoded; the engine sends no others for a run's records.
      if (row.reply_kind === null || Number(row.reply_kind) !== 0 || name.kind === "other") continue
      const decoded: Result.Result<unknown, Schema.SchemaError> = name.kind === "run"
        ? RUN(reply.value)
        : name.kind === "started"
        ? STARTED(reply.value)
        : STEP(reply.value)
      if (Result.isFailure(decoded)) {
        const holds = name.kind === "run" ? "a run's output or failure" : name.kind === "started" ? "a step's start" : "a step's output or failure"
        return yield* corrupted(runId, location, `${name.reply} (a row of cluster_replies) does not hold ${holds}`, decoded.failure)
      }
      if (name.kind === "run") end = outcome(decoded.success)
      else if (name.kind === "step" && outcome(decoded.success) === "failed" && steps.get(name.step)?.attempt === attempt) {
        steps.set(name.step, { attempt, failed: true })
      }
    }
    return { end, steps }
  })

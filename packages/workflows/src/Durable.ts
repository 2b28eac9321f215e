/**
 * Durable — a run of a document that outlives its process, on `effect/workflow` (ADR 0066). The
 * run is a workflow execution of its own (`condukt/<runId>`) on an embedded single runner
 * (`effect/cluster`'s `SingleRunner`) whose mailbox is the SQL database the caller's `SqlClient`
 * reaches (one SQLite file, or Postgres); each leaf step is an activity, so its output is recorded
 * once it finishes. A process killed mid-run leaves the run's message unanswered in the database:
 * the next process given the same run id picks it up, replays the run, and the steps recorded as
 * finished give their recorded outputs without running (`StepFinished.resumed`); a step that had
 * started and not finished runs again from its start (`StepStarted.restarted`).
 *
 * A run is recorded in `condukt_workflow_runs` with its document and inputs before its first step:
 * resuming an id not recorded there, or recorded for another document or other inputs, fails with
 * `DurableFailed` before anything runs. A run that succeeded gives its output again, running
 * nothing; a run that failed is retried (ADR 0084, `internal/durableRetry.ts`): the steps that
 * finished keep their outputs, the failed ones run again as their next attempt, and so do those
 * that never ran; each retry is recorded with the run's attempt. Runs of other ids in the same
 * database are left alone: their workflows are registered only by the processes that run them.
 *
 * One process at a time runs a run: it takes the run's lease before anything else and keeps it
 * while the run is live (`internal/durableLease.ts`, ADR 0081); a second process given the same
 * id is refused (`RunBusy`, naming the first). A run whose journal cannot be read (a record that
 * is not what this module or the engine wrote) is refused as `JournalCorrupted`, naming the
 * record: resuming it could only fail part-way, or run again what was done.
 */
import { Duration, Effect, type FileSystem, type Path, Schema } from "effect"
import { SecureRandom } from "effect/crypto"
import { SqlClient, type SqlError } from "effect/sql"
import type { ProcessBudget } from "@condukt/core"
import type * as Document from "./Document.ts"
import * as RunEngine from "./RunEngine.ts"
import * as CorruptJournal from "./internal/corruptJournal.ts"
import type * as Engine from "./internal/durableEngine.ts"
import * as Lease from "./internal/durableLease.ts"
import { BUSY } from "./internal/sqlBusy.ts"
import * as Inputs from "./Inputs.ts"
import { DurableFailed, type WorkflowFailed } from "./WorkflowError.ts"

/**
 * What a durable run is given (defined beside the engine, which loads only when a durable run
 * starts, so that the engine does not import this module back).
 *
 * @since 0.1.0
 * @category models
 */
export type Options = Engine.Options

/**
 * A run that failed, given again by its id (ADR 0084): the attempt it starts (2 for the first
 * retry) and the steps that failed and run again, sorted (`Options.onRetried` is told it).
 *
 * @since 0.1.0
 * @category models
 */
export type Retry = Engine.Retry

const RUNS_TABLE =
  "CREATE TABLE IF NOT EXISTS condukt_workflow_runs (id TEXT PRIMARY KEY NOT NULL, document TEXT NOT NULL, inputs TEXT NOT NULL)"

/**
 * A fresh run id: 16 hex characters from the platform's secure random source.
 *
 * @since 0.1.0
 * @category constructors
 */
export const newRunId: Effect.Effect<string> = SecureRandom.SecureRandom.use((random) =>
  Effect.map(random.randomBytes(8), (bytes) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join(""))
).pipe(Effect.provide(SecureRandom.layerWebCrypto))

/** A run id is a word of letters, digits, `-`, `_` and `.`: it names a workflow and an entity. */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

const decodeInputs = Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)))

const refusal = (options: Options) => (reason: DurableFailed["reason"], description: string, cause?: unknown) =>
  new DurableFailed({ reason, runId: options.runId, location: options.location, description, cause })

/** Whether `text` is JSON holding an object (what the runs table records); never recurses. */
const isJsonObject = (text: string) => {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "object" && value !== null && !Array.isArray(value)
  } catch {
    return false
  }
}

/** The run's row: recorded now (a new run), or checked against the document and inputs (a resumed one). */
const record = Effect.fnUntraced(function*(
  document: Document.Document,
  inputs: Readonly<Record<string, unknown>>,
  options: Options
) {
  const sql = yield* SqlClient.SqlClient
  const refuse = refusal(options)
  const unavailable = (error: SqlError.SqlError) =>
    refuse("StoreUnavailable", `the database ${options.location} cannot hold durable runs: ${error.message}`, error)
  const corrupted = (what: string, cause?: unknown) => CorruptJournal.corrupted(options.runId, options.location, what, cause)
  // Another process holding the database (SQLite's lock) is waited out, on the Effect clock.
  const statement = <A>(effect: Effect.Effect<A, SqlError.SqlError>) =>
    Effect.mapError(Effect.retry(effect, BUSY), unavailable)
  // Postgres may refuse one of two `CREATE TABLE IF NOT EXISTS` run at once: tried again.
  yield* Effect.retry(statement(sql.unsafe(RUNS_TABLE)), { times: 2 })
  const documentText = JSON.stringify(document)
  const rows = yield* statement(
    sql<{ readonly document: string; readonly inputs: string }>`SELECT document, inputs FROM condukt_workflow_runs WHERE id = ${options.runId}`
  )
  if (!options.resume) {
    if (rows.length > 0) {
      return yield* refuse("RunExists", `run ${options.runId} is already in ${options.location}: resume it, or start a run of another id`)
    }
    const inputsText = JSON.stringify(inputs)
    yield* statement(sql`INSERT INTO condukt_workflow_runs (id, document, inputs) VALUES (${options.runId}, ${documentText}, ${inputsText})`)
    return inputs
  }
  const row = rows[0]
  if (row === undefined) {
    return yield* refuse("UnknownRun", `no run ${options.runId} in ${options.location}: a durable run prints its id when it starts`)
  }
  if (row.document !== documentText) {
    if (!isJsonObject(row.document)) {
      return yield* corrupted("the workflow recorded when it started (condukt_workflow_runs.document) is not a JSON object")
    }
    return yield* refuse(
      "WorkflowChanged",
      `run ${options.runId} in ${options.location} was started from another version of ${options.file}: resume it with the workflow it started with, or start a new run`
    )
  }
  const recorded = yield* Effect.mapError(
    decodeInputs(row.inputs),
    (error) => corrupted("the inputs recorded when it started (condukt_workflow_runs.inputs) are not a JSON object", error)
  )
  if (Object.keys(inputs).length > 0 && JSON.stringify(inputs) !== row.inputs) {
    return yield* refuse(
      "InputsChanged",
      `run ${options.runId} in ${options.location} was started with other inputs: resume it with none (its own are kept) or the same ones`
    )
  }
  return recorded
})

/**
 * Runs `document` durably as run `options.runId` on the current `SqlClient`'s database: recorded
 * (or checked, when resumed), then executed on an embedded single runner, each leaf step journaled.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run: (
  document: Document.Document,
  options: Options
) => Effect.Effect<
  RunEngine.RunResult,
  WorkflowFailed | DurableFailed,
  SqlClient.SqlClient | FileSystem.FileSystem | Path.Path | ProcessBudget.ProcessBudget
> = Effect.fn("Durable.run")(function*(document: Document.Document, options: Options) {
  // What a run checks before its first step (the graph, the models and their keys, the inputs)
  // fails outside the workflow, so it is not recorded as the run's end: a new run with bad inputs
  // is not recorded at all, and a resumed one whose model had no key goes on once it has one.
  const check = (inputs: Readonly<Record<string, unknown>>) =>
    Effect.andThen(RunEngine.plan(document, { model: options.model }), Inputs.resolve(document.inputs ?? {}, inputs))
  if (!options.resume) yield* check(options.inputs ?? {})
  if (!RUN_ID.test(options.runId)) {
    return yield* refusal(options)(
      "UnknownRun",
      `no run ${JSON.stringify(options.runId)} in ${options.location}: a run id is letters, digits, ".", "_" and "-" (at most 128)`
    )
  }
  // The lease first: a second process given the id checks nothing of the run, and a new run's
  // row is written by the process that holds it.
  const keepLease = yield* Lease.acquire({
    runId: options.runId,
    location: options.location,
    holder: options.holder ?? { pid: 0, host: "" },
    token: yield* newRunId,
    duration: options.lease === undefined ? Lease.DEFAULT_DURATION : Duration.fromInputUnsafe(options.lease)
  })
  const inputs = yield* record(document, options.inputs ?? {}, options)
  if (options.resume) yield* check(inputs)
  else if (options.onRecorded !== undefined) yield* options.onRecorded
  // effect/cluster and effect/workflow load only for a durable run: a plain `condukt run` (and
  // every other command) would pay ~0.1 s of CPU at each start for them.
  const engine = yield* Effect.promise(() => import("./internal/durableEngine.ts"))
  // A lease taken over by another process stops the run (its steps are interrupted).
  return yield* Effect.raceFirst(engine.execute(document, { ...options, inputs }), keepLease)
}, Effect.scoped)

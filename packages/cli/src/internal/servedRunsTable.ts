/**
 * servedRunsTable — what `condukt serve --workflows <dir> --durable <db>` keeps of each run beside
 * the durable run's own journal (`Durable`): which workflow it runs, the principal that started
 * it, its inputs, and once it ends its outcome and final view (steps, output, error), so a server
 * started again resumes the runs still going and answers for the finished ones.
 */
import { WorkflowRuns } from "@condukt/server"
import { Effect, Schema } from "effect"
import type { SqlClient, SqlError } from "effect/sql"

const TABLE = "CREATE TABLE IF NOT EXISTS condukt_served_runs (" +
  "id TEXT PRIMARY KEY NOT NULL, workflow TEXT NOT NULL, principal TEXT NOT NULL, inputs TEXT NOT NULL, " +
  "outcome TEXT NOT NULL, view TEXT, started BIGINT NOT NULL)"

/** A run as the table holds it. */
export interface Row {
  readonly id: string
  readonly workflow: string
  readonly principal: string
  readonly inputs: Readonly<Record<string, Schema.Json>>
  /** Epoch ms the run was started. */
  readonly started: number
  /** The final view once the run ended. */
  readonly view: WorkflowRuns.RunView | undefined
}

const decodeInputs = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Json)))
const decodeView = Schema.decodeUnknownOption(Schema.fromJsonString(WorkflowRuns.RunView))

interface Raw {
  readonly id: string
  readonly workflow: string
  readonly principal: string
  readonly inputs: string
  readonly view: string | null
  readonly started: number | string
}

/** A row read back; one this module did not write (inputs that are not an object) is skipped. */
const rowOf = (raw: Raw): Row | undefined => {
  const inputs = decodeInputs(raw.inputs)
  if (inputs._tag === "None") return undefined
  const view = raw.view === null ? undefined : decodeView(raw.view)
  // Postgres hands a BIGINT back as text.
  const started = Number(raw.started)
  return {
    id: raw.id,
    workflow: raw.workflow,
    principal: raw.principal,
    inputs: inputs.value,
    started,
    view: view?._tag === "Some" ? { ...view.value, startedAt: view.value.startedAt ?? started } : undefined
  }
}

/** The table's statements on `sql`. */
export const make = (sql: SqlClient.SqlClient) => {
  const ready = Effect.retry(sql.unsafe(TABLE), { times: 2 })
  return {
    /** Creates the table when it is missing. */
    ready: Effect.asVoid(ready),
    /** A run started: recorded as running. */
    insert: (row: Omit<Row, "view">): Effect.Effect<void, SqlError.SqlError> =>
      sql`INSERT INTO condukt_served_runs (id, workflow, principal, inputs, outcome, started) VALUES (${row.id}, ${row.workflow}, ${row.principal}, ${
        JSON.stringify(row.inputs)
      }, 'running', ${row.started})`.pipe(Effect.asVoid),
    /** A run ended: its outcome and final view. */
    finish: (view: WorkflowRuns.RunView): Effect.Effect<void, SqlError.SqlError> =>
      Effect.asVoid(sql`UPDATE condukt_served_runs SET outcome = ${view.outcome}, view = ${JSON.stringify(view)} WHERE id = ${view.runId}`),
    /** The runs still going when the last server stopped (oldest first, at most `limit`). */
    running: (limit: number): Effect.Effect<ReadonlyArray<Row>, SqlError.SqlError> =>
      Effect.map(
        sql<Raw>`SELECT id, workflow, principal, inputs, view, started FROM condukt_served_runs WHERE outcome = 'running' ORDER BY started LIMIT ${limit}`,
        (rows) => rows.flatMap((raw) => rowOf(raw) ?? [])
      ),
    /** `principal`'s runs of `workflow`, newest first, at most `limit`. */
    list: (workflow: string, principal: string, limit: number): Effect.Effect<ReadonlyArray<Row>, SqlError.SqlError> =>
      Effect.map(
        sql<Raw>`SELECT id, workflow, principal, inputs, view, started FROM condukt_served_runs WHERE workflow = ${workflow} AND principal = ${principal} ORDER BY started DESC, id DESC LIMIT ${limit}`,
        (rows) => rows.flatMap((raw) => rowOf(raw) ?? [])
      ),
    /** One run, when the table has it. */
    get: (id: string): Effect.Effect<Row | undefined, SqlError.SqlError> =>
      Effect.map(
        sql<Raw>`SELECT id, workflow, principal, inputs, view, started FROM condukt_served_runs WHERE id = ${id}`,
        (rows) => (rows[0] === undefined ? undefined : rowOf(rows[0]))
      )
  }
}

export type Table = ReturnType<typeof make>

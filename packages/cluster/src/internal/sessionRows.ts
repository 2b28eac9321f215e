/**
 * sessionRows — what the cluster keeps of its sessions beside their snapshots, in the same
 * database: which sessions are running, with which agent and by which start (`condukt_cluster_sessions`:
 * a session entity activated on any runner reads it to know what to start; a start delivered again
 * knows itself by its id), and where each persisted run
 * began (`condukt_cluster_runs`: the history's length when the run began), so that a run delivered
 * again after its runner died is not started a second time from its prompt. A run's row is written
 * in the transaction of the run's first save (`withRunBegun`): no commit of its own, and a run with
 * no row is one of which nothing was saved. Rows of settled runs (their replies saved) are deleted
 * (`begun`, `forget`): the table holds the runs that may still be delivered again, and a few more.
 *
 * Each statement or transaction is short: a handler never holds one across a model turn (on
 * one-connection SQLite that starves the cluster's shard-lock refresh).
 */
import { Effect, Option, Schedule } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import type * as SqlSessionStore from "@condukt/node/sessionStore/Sql"

const TABLES = [
  "CREATE TABLE IF NOT EXISTS condukt_cluster_sessions (id TEXT PRIMARY KEY NOT NULL, agent TEXT NOT NULL, running INTEGER NOT NULL, start TEXT)",
  "CREATE TABLE IF NOT EXISTS condukt_cluster_runs (session TEXT NOT NULL, run TEXT NOT NULL, history_before INTEGER NOT NULL, PRIMARY KEY (session, run))"
] as const

/** Serialises the creation of the tables across processes on Postgres (`CREATE … IF NOT EXISTS` races there). */
const SCHEMA_LOCK = 0x636c7573

/** Another writer holds the database: worth another try, 20 ms apart. */
const busyPolicy = {
  while: (error: SqlError.SqlError) =>
    error.reason._tag === "LockTimeoutError" || error.reason._tag === "DeadlockError" || error.reason._tag === "SerializationError",
  times: 100,
  schedule: Schedule.spaced("20 millis")
}

/** The rows, on one SqlClient. */
export interface SessionRows {
  /** The agent of a running session; none when it was never started or is stopped. */
  readonly running: (id: string) => Effect.Effect<Option.Option<string>, SqlError.SqlError>
  /** The id of the start that marked a running session running (empty when unknown); none when it is not running. */
  readonly startedBy: (id: string) => Effect.Effect<Option.Option<string>, SqlError.SqlError>
  /** Marks the session running with `agent` by the start `start`, or stopped. */
  readonly mark: (id: string, agent: string, running: boolean, start?: string) => Effect.Effect<void, SqlError.SqlError>
  /** Marks a running session stopped; an unknown one is ignored. */
  readonly stop: (id: string) => Effect.Effect<void, SqlError.SqlError>
  /** The runs of the session that have a row, each with the history's length when it began. */
  readonly begun: (id: string) => Effect.Effect<Map<string, number>, SqlError.SqlError>
  /** Deletes the rows of these runs of the session. */
  readonly forget: (id: string, runs: ReadonlyArray<string>) => Effect.Effect<void, SqlError.SqlError>
}

/**
 * The record of a run's beginning (`history_before`: the history's length when it began), for the
 * session store to commit with the run's first save (`SqlSessionStore`'s `alongside`): both are
 * committed, or neither. A run's first record stands: written again, it does nothing.
 */
export const runBegun = (id: string, run: string, historyBefore: number): SqlSessionStore.Statement => ({
  sql: "INSERT INTO condukt_cluster_runs (session, run, history_before) VALUES (?, ?, ?) ON CONFLICT (session, run) DO NOTHING",
  params: [id, run, historyBefore]
})

/** The rows on `sql`'s database; the tables are created when missing. */
export const make = (sql: SqlClient.SqlClient): Effect.Effect<SessionRows, SqlError.SqlError> =>
  Effect.gen(function*() {
    const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    yield* sql.withTransaction(Effect.gen(function*() {
      if (pg) yield* sql`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK})`
      for (const statement of TABLES) yield* sql.unsafe(statement)
    })).pipe(Effect.retry(busyPolicy))
    const retried = <A>(effect: Effect.Effect<A, SqlError.SqlError>) => Effect.retry(effect, busyPolicy)
    return {
      running: (id) =>
        retried(Effect.map(sql`SELECT agent FROM condukt_cluster_sessions WHERE id = ${id} AND running = 1`, ([row]) =>
          row === undefined ? Option.none() : Option.some(String(row["agent"])))),
      startedBy: (id) =>
        retried(Effect.map(sql`SELECT start FROM condukt_cluster_sessions WHERE id = ${id} AND running = 1`, ([row]) =>
          row === undefined ? Option.none() : Option.some(typeof row["start"] === "string" ? row["start"] : ""))),
      mark: (id, agent, running, start) =>
        retried(Effect.asVoid(sql`INSERT INTO condukt_cluster_sessions (id, agent, running, start) VALUES (${id}, ${agent}, ${running ? 1 : 0}, ${start ?? null})
          ON CONFLICT (id) DO UPDATE SET agent = excluded.agent, running = excluded.running, start = excluded.start`)),
      stop: (id) => retried(Effect.asVoid(sql`UPDATE condukt_cluster_sessions SET running = 0 WHERE id = ${id}`)),
      begun: (id) =>
        retried(Effect.map(sql`SELECT run, history_before FROM condukt_cluster_runs WHERE session = ${id}`, (rows) =>
          new Map(rows.map((row) => [String(row["run"]), Number(row["history_before"])])))),
      forget: (id, runs) =>
        runs.length === 0
          ? Effect.void
          : retried(Effect.asVoid(sql`DELETE FROM condukt_cluster_runs WHERE session = ${id} AND ${sql.in("run", [...runs])}`))
    } satisfies SessionRows
  })

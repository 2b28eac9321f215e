/**
 * SqlSessionStore — session snapshots in a SQL database reached through `effect/sql`'s SqlClient:
 * Postgres (`@effect/sql-pg`) or SQLite (`SqliteClient`). It is the store of the cluster
 * (`@condukt/cluster` exports it under the same name): a session entity keeps its state in the same
 * database as the cluster's mailboxes, so whichever runner holds the session loads it from there
 * (docs/decisions/0058).
 *
 * It is the one SQL session store (docs/decisions/0082; `SqliteSessionStore` is the same store on a
 * `node:sqlite` connection of its own): two tables, `condukt_sessions` (one row per session: the
 * snapshot without its messages, how many messages it has, a revision) and `condukt_messages` (one
 * row per message, keyed by session and index). A save that only adds messages writes those rows;
 * a rewrite (a compaction, a first save) replaces the session's rows; either in one transaction.
 *
 * Writers meet on the session row: a save first moves the row from the revision this store last
 * loaded or saved to the next one (`UPDATE … WHERE revision = ?`, or an insert that does nothing
 * when the row exists), and only then touches messages. If another writer saved since, the row
 * does not move, the save fails with `Conflict` and nothing is written. A load reads the session
 * row `FOR SHARE` on Postgres, so the messages it reads next are those of the same save; on SQLite
 * its transaction is deferred, and takes no write lock.
 *
 * A database another process holds (SQLite's lock, a Postgres deadlock or serialization failure)
 * is retried on the Effect clock. Rows that are not what this store wrote fail the load with
 * `Corrupt` naming `location#table/row`. A SQLite database made before sessions had a revision gets
 * the column when the store opens it.
 *
 * Its approval log (`approvals`) is the table `condukt_approvals` in the same database: a save
 * indexes its batch's records in its own transaction, and of two processes answering one record,
 * one is refused. `approvalRetention` bounds how long answered ones are kept.
 */
import { Effect, Layer, Schedule } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { SessionStore, SessionStoreError, Unavailable } from "@condukt/core/SessionStore"
import type * as Snapshot from "@condukt/core/Snapshot"
import * as SqlStore from "../internal/sqlStore.ts"

/** @since 0.1.0 @category models */
export interface Options {
  /** What errors name as where the rows are (the database file, a URL without its password); `sql:<dialect>` when absent. */
  readonly location?: string | undefined
  /** How long answered approval records are kept (ms; default: for ever). */
  readonly approvalRetention?: number | undefined
  /**
   * A statement to commit with a save of `snapshot` (its text with `?` for each parameter), or
   * none: it runs in the save's transaction once the session's row is claimed, so it is committed
   * exactly when the save is. The cluster records where a run began this way (no commit of its own).
   */
  readonly alongside?: ((snapshot: Snapshot.Snapshot) => Statement | undefined) | undefined
}

/**
 * A statement of the caller's: its text, `?` for each parameter (made the dialect's placeholders),
 * and its parameters — the store's own statements' form.
 *
 * @since 0.1.0
 * @category models
 */
export type Statement = SqlStore.Statement

/** How often a transaction retries a database another writer has locked, 20 ms apart. */
export const BUSY_RETRIES = SqlStore.BUSY_RETRIES

/** Another writer holds the database: worth another try. */
const isBusy = (error: SqlError.SqlError) =>
  error.reason._tag === "LockTimeoutError" || error.reason._tag === "DeadlockError" || error.reason._tag === "SerializationError"

const busyPolicy = { while: isBusy, times: BUSY_RETRIES, schedule: Schedule.spaced("20 millis") }

/**
 * The store's statements on `sql`: each statement's text becomes a template, its `?` the
 * dialect's placeholders.
 */
const runner = (sql: SqlClient.SqlClient, dialect: SqlStore.Runner["dialect"]): SqlStore.Runner => {
  const templates = new Map<string, TemplateStringsArray>()
  const template = (text: string) => {
    let strings = templates.get(text)
    if (strings === undefined) {
      const parts = text.split("?")
      strings = Object.assign(parts, { raw: parts })
      templates.set(text, strings)
    }
    return strings
  }
  const run = ({ params, sql: text }: SqlStore.Statement): Effect.Effect<SqlStore.Rows, SqlError.SqlError> => sql(template(text), ...params)
  const drive = <A>(transaction: SqlStore.Transaction<A>) => {
    const step = (rows?: SqlStore.Rows): Effect.Effect<A, SqlError.SqlError> => {
      const next = rows === undefined ? transaction.next() : transaction.next(rows)
      return next.done ? Effect.succeed(next.value) : Effect.flatMap(run(next.value), step)
    }
    return Effect.suspend(() => step())
  }
  return {
    dialect,
    transaction: (mode, body) => {
      const transaction = sql.withTransaction(Effect.suspend(() => drive(body())))
      // SqliteClient begins `IMMEDIATE`: a load that only reads need not wait for the write lock.
      const begun = mode === "read" && dialect === "sqlite" ? Effect.provideService(transaction, SqlClient.BeginTransaction, "BEGIN") : transaction
      return Effect.retry(begun, busyPolicy)
    }
  }
}

/**
 * A store on the current SqlClient's database; its tables are created when missing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("SqlSessionStore.make")(function*(options: Options = {}) {
  const sql = yield* SqlClient.SqlClient
  const dialect = sql.onDialectOrElse({ pg: () => "pg" as const, sqlite: () => "sqlite" as const, orElse: () => undefined })
  const location = options.location ?? `sql:${dialect ?? "unknown"}`
  if (dialect === undefined) {
    return yield* new SessionStoreError({
      method: "open",
      sessionId: "",
      location,
      reason: new Unavailable({ description: "the SQL session store speaks Postgres and SQLite only" })
    })
  }
  return yield* SqlStore.make(runner(sql, dialect), location, "SqlSessionStore", options)
})

/**
 * A `SessionStore` on the SqlClient's database (Postgres or SQLite).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<SessionStore, SessionStoreError, SqlClient.SqlClient> =>
  Layer.effect(SessionStore, make(options))

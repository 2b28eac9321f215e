/**
 * SqliteClient — an `effect/sql` SqlClient over Node's built-in SQLite (`node:sqlite`), exported
 * as `SqliteClient`: the embedded database the SQL session store and the cluster's storage run on
 * when nothing is installed (`@effect/sql-sqlite-node` has no build for effect 4.1).
 *
 * One connection per client, guarded by a semaphore (SQLite writes one at a time anyway). The
 * journal is WAL; `synchronous` is `FULL` by default, as the SQLite session store keeps it (each
 * commit is an fsync: what was committed survives a power loss), or `NORMAL` (`options.synchronous`:
 * a commit is written, not synced; it survives the process's `kill -9`, and a power loss may lose the
 * last commits, never the file's consistency — docs/decisions/0071). `node:sqlite` is
 * synchronous: a statement runs on the event loop, so the busy timeout is 0 and a database another
 * process holds fails at once with `LockTimeoutError` (retryable): callers retry on the Effect
 * clock instead of blocking the loop (the client's own setup, the switch to WAL that processes
 * opening one new file meet on, and each statement outside a transaction, `BEGIN` included,
 * retry so themselves; a statement inside a transaction is the caller's to retry, whole). Transactions begin `IMMEDIATE`, so two processes never both
 * read and then both try to upgrade to a write. Statements are prepared once and kept by their text,
 * the least recently used dropped first. No streaming: `executeStream` is a defect.
 */
import { Effect, Layer, Schedule, Semaphore, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient, SqlError, Statement } from "effect/sql"
import type { SqlConnection } from "effect/sql"
import * as NodeSqlite from "./internal/nodeSqlite.ts"

/** @since 0.1.0 @category models */
export interface Options {
  /** The database file (created when missing); its directory must exist. */
  readonly file: string
  /**
   * `"full"` (the default): each commit is synced to the disk, and survives a power loss.
   * `"normal"`: a commit is written to the WAL, not synced (fsync at checkpoints only); it survives
   * the process's crash or `kill -9`, and a power loss or an OS crash may lose the last commits
   * (the database stays consistent). The cluster's embedded default (`Runner.layerSqlite`).
   */
  readonly synchronous?: "full" | "normal" | undefined
}

/** How often the setup of a database (its switch to WAL) or a statement outside a transaction retries one another process has locked, 20 ms apart. */
export const BUSY_RETRIES = 100

/** How many prepared statements a client keeps. */
export const STATEMENT_CACHE = 100

type Param = null | number | bigint | string | Uint8Array

/** What SQLite binds: no booleans, no dates, no undefined. */
const toParam = (value: unknown): Param =>
  value === undefined || value === null
    ? null
    : typeof value === "boolean"
    ? (value ? 1 : 0)
    : value instanceof Date
    ? value.toISOString()
    : (value as Param)

/**
 * An error of `node:sqlite` as effect/sql's reason: its SQLite result code is `errcode` (the
 * classifier reads `code` or `errno`), its message SQLite's own (`database is locked`).
 */
const failed = (operation: string) => (cause: unknown) => {
  const errcode = (cause as { readonly errcode?: unknown } | undefined)?.errcode
  const message = cause instanceof Error ? cause.message : `SQLite failed to ${operation}`
  const classified = typeof errcode === "number" ? { errno: errcode, message, cause } : cause
  return new SqlError.SqlError({ reason: SqlError.classifySqliteError(classified, { message, operation }) })
}

const busyRetry = {
  while: (error: SqlError.SqlError) => error.reason._tag === "LockTimeoutError",
  times: BUSY_RETRIES,
  schedule: Schedule.spaced("20 millis")
}

/** A prepared statement, and whether it returns rows. */
interface Prepared {
  readonly statement: NodeSqlite.Statement
  readonly rows: boolean
}

/**
 * A client on the database `options.file`, closed with the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("SqliteClient.make")(function*(options: Options) {
  const db = yield* Effect.acquireRelease(
    NodeSqlite.open(options.file, failed("open the database")),
    (db) => Effect.sync(() => db.isOpen && db.close())
  )
  // Several processes opening a new file at once meet on its switch to WAL: retried like a statement.
  yield* Effect.try({
    try: () => db.exec(`PRAGMA busy_timeout = 0; PRAGMA journal_mode = WAL; PRAGMA synchronous = ${options.synchronous === "normal" ? "NORMAL" : "FULL"};`),
    catch: failed("set up the database")
  }).pipe(Effect.retry(busyRetry))
  // Prepared statements by their text, the least recently used dropped past `STATEMENT_CACHE` (an
  // insert of N rows, a statement with its values in its text, is a text of its own: those come
  // and go while the ones run again and again stay): preparing costs as much as running a small statement.
  const prepared = new Map<string, Prepared>()
  const prepare = (sql: string): Prepared => {
    const cached = prepared.get(sql)
    if (cached !== undefined) {
      prepared.delete(sql)
      prepared.set(sql, cached)
      return cached
    }
    const statement = db.prepare(sql)
    // Whether it returns rows is fixed by its text (`columns()` builds a list on every call).
    const entry = { statement, rows: statement.columns().length > 0 }
    if (prepared.size >= STATEMENT_CACHE) prepared.delete(prepared.keys().next().value!)
    prepared.set(sql, entry)
    return entry
  }
  const attempt = (sql: string, params: ReadonlyArray<unknown>, arrays: boolean) =>
    Effect.try({
      try: (): ReadonlyArray<object> => {
        const { rows, statement } = prepare(sql)
        statement.setReturnArrays(arrays)
        const args = params.map(toParam)
        if (rows) return statement.all(...args)
        statement.run(...args)
        return []
      },
      catch: failed("execute a statement")
    })
  // A statement outside a transaction (a `BEGIN IMMEDIATE` among them) that finds the database
  // locked did nothing: it is retried here, so callers that never retry (effect/cluster's storage,
  // its migrations when runners start at once) meet another process's write as a short wait.
  const run = (sql: string, params: ReadonlyArray<unknown>, arrays: boolean) =>
    db.isTransaction ? attempt(sql, params, arrays) : Effect.retry(attempt(sql, params, arrays), busyRetry)
  const rows = (
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) => Effect.map(run(sql, params, false), (result) => (transformRows ? transformRows(result) : result))
  const connection: SqlConnection.Connection = {
    execute: rows,
    executeUnprepared: rows,
    executeRaw: (sql, params) => run(sql, params, false),
    // With `setReturnArrays` each row is an array of its values.
    executeValues: (sql, params) => run(sql, params, true) as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError.SqlError>,
    executeValuesUnprepared: (sql, params) => run(sql, params, true) as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError.SqlError>,
    executeStream: () => Stream.die("SqliteClient does not stream rows")
  }
  const acquirers = SqlClient.makeSqliteAcquirers({
    connection: Effect.succeed(connection),
    semaphore: yield* Semaphore.make(1),
    isTransaction: () => db.isTransaction
  })
  return yield* SqlClient.make({
    ...acquirers,
    compiler: Statement.makeCompilerSqlite(),
    beginTransaction: "BEGIN IMMEDIATE",
    driver: "node:sqlite",
    spanAttributes: [["db.system.name", "sqlite"]]
  })
})

/**
 * A `SqlClient` on the SQLite database `options.file`, closed with the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SqlClient.SqlClient, SqlError.SqlError> =>
  Layer.effect(SqlClient.SqlClient, make(options)).pipe(Layer.provide(Reactivity.layer))

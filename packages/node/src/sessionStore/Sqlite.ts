/**
 * SqliteSessionStore — session snapshots in one SQLite database (Node's built-in `node:sqlite`),
 * exported as `SqliteSessionStore`: the embedded durable store, with no server to run.
 *
 * It is the one SQL session store (`SqlSessionStore`'s tables, statements, revision check and
 * errors; docs/decisions/0082) on a `node:sqlite` connection of its own, which runs each of the
 * store's transactions synchronously: a turn's save costs what SQLite does, not effect/sql's
 * machinery per statement as well (the ADR has the figures). A save that only adds messages writes
 * those rows and moves the session's row in one transaction, so its cost follows the turn, not
 * the history; a rewrite (a compaction, a first save) replaces the session's rows in one
 * transaction. WAL journal with `synchronous = FULL`: a committed save survives a crash of the
 * process and of the machine.
 *
 * `node:sqlite` is synchronous: each statement runs on the event loop, so the store keeps them
 * small (a turn's rows) and never waits for a lock there; a database another process holds
 * (`SQLITE_BUSY`) is retried on the Effect clock, the setup of a new file (journal mode, tables)
 * included. A row that is not what this store wrote fails the load with `Corrupt` naming
 * `file#table/row`, and nothing is overwritten.
 *
 * Several processes may hold the same session: each session row carries a revision, counted up by
 * every save. A save moves the row from the revision this store last loaded or saved; if another
 * writer saved since, it fails with `Conflict` and writes nothing.
 *
 * Its approval log (`approvals`) is the table `condukt_approvals`: a save indexes its batch's
 * records in its own transaction; it is the store for many approvals (10,000 open ones are
 * listed in pages through a partial index: `bench/approvalList.ts`). `approvalRetention` bounds
 * how long answered ones are kept.
 */
import { Effect, Layer, Result, Schedule } from "effect"
import { SessionStore, SessionStoreError, Unavailable } from "@condukt/core/SessionStore"
import * as NodeSqlite from "../internal/nodeSqlite.ts"
import * as SqlStore from "../internal/sqlStore.ts"

/** @since 0.1.0 @category models */
export interface Options {
  /** The database file (created with its tables when missing); its directory must exist. */
  readonly file: string
  /** How long answered approval records are kept (ms; default: for ever). */
  readonly approvalRetention?: number | undefined
}

/** How often an open, save or load retries a database another process has locked, 20 ms apart. */
export const BUSY_RETRIES = SqlStore.BUSY_RETRIES

/** How many prepared statements a store keeps (a few, and an INSERT per number of rows inserted at once). */
const STATEMENT_CACHE = 64

const PRAGMAS = `
  PRAGMA busy_timeout = 0;
  PRAGMA journal_mode = WAL;
  PRAGMA synchronous = FULL;
`

/** SQLITE_BUSY and SQLITE_LOCKED, with or without an extended code. */
const isBusy = (cause: unknown) => {
  const errcode = (cause as { errcode?: unknown } | undefined)?.errcode
  return typeof errcode === "number" && ((errcode & 0xff) === 5 || (errcode & 0xff) === 6)
}

const busyPolicy = { while: isBusy, times: BUSY_RETRIES, schedule: Schedule.spaced("20 millis") }

/** Runs `f` between BEGIN and COMMIT (ROLLBACK when it throws); what `f` or SQLite throws is rethrown. */
const inTransaction = <A>(db: NodeSqlite.Database, begin: string, f: () => A): A => {
  db.exec(begin)
  const result = Result.try({ try: f, catch: (cause) => cause })
  const ended = Result.try({ try: () => db.exec(Result.isSuccess(result) ? "COMMIT" : "ROLLBACK"), catch: (cause) => cause })
  // A COMMIT that failed leaves the transaction open: it is rolled back, so the next BEGIN works.
  if (db.isTransaction) db.exec("ROLLBACK")
  if (Result.isFailure(ended)) throw ended.failure
  return Result.getOrThrow(result)
}

/**
 * The store's statements on `db`, prepared once each (the least recently used dropped past
 * `STATEMENT_CACHE`); a transaction runs whole, synchronously (a load's is deferred: it takes no
 * write lock), retried on the Effect clock while another process holds the database.
 */
const runner = (db: NodeSqlite.Database): SqlStore.Runner => {
  const prepared = new Map<string, NodeSqlite.Statement>()
  const prepare = (sql: string) => {
    const cached = prepared.get(sql)
    if (cached !== undefined) {
      prepared.delete(sql)
      prepared.set(sql, cached)
      return cached
    }
    const statement = db.prepare(sql)
    if (prepared.size >= STATEMENT_CACHE) prepared.delete(prepared.keys().next().value!)
    prepared.set(sql, statement)
    return statement
  }
  const drive = <A>(transaction: SqlStore.Transaction<A>): A => {
    let next = transaction.next()
    while (!next.done) {
      const { params, sql } = next.value
      next = transaction.next(prepare(sql).all(...(params as ReadonlyArray<string | number>)))
    }
    return next.value
  }
  return {
    dialect: "sqlite",
    transaction: (mode, body) =>
      Effect.try({ try: () => inTransaction(db, mode === "read" ? "BEGIN" : "BEGIN IMMEDIATE", () => drive(body())), catch: (cause) => cause })
        .pipe(Effect.retry(busyPolicy))
  }
}

/**
 * A store in the database `options.file`, open for as long as the current scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("SqliteSessionStore.make")(function*(options: Options) {
  const file = options.file
  const opened = (cause: unknown) =>
    new SessionStoreError({
      method: "open",
      sessionId: "",
      location: file,
      reason: new Unavailable({ description: cause instanceof Error ? cause.message : String(cause) }),
      cause
    })
  const db = yield* Effect.acquireRelease(
    NodeSqlite.open(file, opened),
    (db) => Effect.sync(() => db.isOpen && db.close())
  )
  // Several processes opening a new file at once meet on its switch to WAL: retried like a statement.
  yield* Effect.try({ try: () => db.exec(PRAGMAS), catch: (cause) => cause }).pipe(Effect.retry(busyPolicy), Effect.mapError(opened))
  return yield* SqlStore.make(runner(db), file, "SqliteSessionStore", options)
})

/**
 * A `SessionStore` in the SQLite database `options.file`, closed with the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SessionStore, SessionStoreError> => Layer.effect(SessionStore, make(options))

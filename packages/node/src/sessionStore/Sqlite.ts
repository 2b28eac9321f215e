/**
 * SqliteSessionStore — session snapshots in one SQLite database (Node's built-in `node:sqlite`),
 * exported as `SqliteSessionStore`: the embedded durable store, with no server to run.
 *
 * Two tables: `condukt_sessions` (one row per session: the snapshot without its messages, and how
 * many messages it has) and `condukt_messages` (one row per message, keyed by session and index).
 * A save that only adds messages inserts those rows and updates the session's row in one
 * transaction, so its cost follows the turn, not the history; a rewrite (a compaction, a first
 * save) replaces the session's rows in one transaction. WAL journal with `synchronous = FULL`: a
 * committed save survives a crash of the process and of the machine.
 *
 * `node:sqlite` is synchronous: each statement runs on the event loop, so the store keeps them
 * small (a turn's rows) and never waits for a lock there; a database another process holds
 * (`SQLITE_BUSY`) is retried on the Effect clock, the setup of a new file (journal mode, tables)
 * included. A row that is not what this store wrote fails the load with `Corrupt` naming
 * `file#table/row`, and nothing is overwritten.
 *
 * Several processes may hold the same session: each session row carries a revision, counted up by
 * every save. A save checks, in its transaction, that the row is still at the revision this store
 * last loaded or saved; if another writer saved since, it fails with `Conflict` and writes nothing.
 */
import { Effect, Layer, Option, Result, Schedule } from "effect"
import * as NodeSqlite from "../internal/nodeSqlite.ts"
import * as SnapshotRows from "@condukt/core/internal/snapshotRows"
import { Conflict, type SaveOptions, SessionStore, SessionStoreError, type Service, Unavailable, validId } from "@condukt/core/SessionStore"
import * as Snapshot from "@condukt/core/Snapshot"

/** @since 0.1.0 @category models */
export interface Options {
  /** The database file (created with its tables when missing); its directory must exist. */
  readonly file: string
}

/** How often an open, save or load retries a database another process has locked, 20 ms apart. */
export const BUSY_RETRIES = 100

const PRAGMAS = `
  PRAGMA busy_timeout = 0;
  PRAGMA journal_mode = WAL;
  PRAGMA synchronous = FULL;
`

const TABLES = `
  CREATE TABLE IF NOT EXISTS condukt_sessions (
    id TEXT PRIMARY KEY NOT NULL,
    length INTEGER NOT NULL,
    body TEXT NOT NULL,
    revision INTEGER NOT NULL DEFAULT 0
  ) STRICT;
  CREATE TABLE IF NOT EXISTS condukt_messages (
    session TEXT NOT NULL,
    idx INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session, idx)
  ) STRICT, WITHOUT ROWID;
`

/** A database made before sessions had a revision gets the column (each row at revision 0). */
const ADD_REVISION = "ALTER TABLE condukt_sessions ADD COLUMN revision INTEGER NOT NULL DEFAULT 0"

const describe = (cause: unknown) => (cause instanceof Error ? cause.message : "SQLite failed")

const isBusy = (error: SessionStoreError) => {
  const cause = error.cause as { errcode?: unknown } | undefined
  // SQLITE_BUSY and SQLITE_LOCKED, with or without an extended code.
  return typeof cause?.errcode === "number" && ((cause.errcode & 0xff) === 5 || (cause.errcode & 0xff) === 6)
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
 * A store in the database `options.file`, open for as long as the current scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("SqliteSessionStore.make")(function*(options: Options) {
  const file = options.file
  const opened = (cause: unknown) =>
    new SessionStoreError({ method: "open", sessionId: "", location: file, reason: new Unavailable({ description: describe(cause) }), cause })
  const db = yield* Effect.acquireRelease(
    NodeSqlite.open(file, opened),
    (db) => Effect.sync(() => db.isOpen && db.close())
  )
  // Several processes opening a new file at once meet on its locks (the switch to WAL, the
  // tables, reading the schema): the setup is retried like any other statement.
  const { deleteMessages, deleteSession, deleteTail, insertMessage, selectMessages, selectSession, upsertSession } = yield* Effect.try({
    try: () => {
      db.exec(PRAGMAS)
      inTransaction(db, "BEGIN IMMEDIATE", () => {
        db.exec(TABLES)
        const columns = db.prepare("SELECT name FROM pragma_table_info('condukt_sessions')").all()
        if (!columns.some((column) => column["name"] === "revision")) db.exec(ADD_REVISION)
      })
      return {
        selectSession: db.prepare("SELECT length, body, revision FROM condukt_sessions WHERE id = ?"),
        selectMessages: db.prepare("SELECT idx, body FROM condukt_messages WHERE session = ? AND idx < ? ORDER BY idx"),
        insertMessage: db.prepare("INSERT OR REPLACE INTO condukt_messages (session, idx, body) VALUES (?, ?, ?)"),
        deleteMessages: db.prepare("DELETE FROM condukt_messages WHERE session = ?"),
        deleteTail: db.prepare("DELETE FROM condukt_messages WHERE session = ? AND idx >= ?"),
        upsertSession: db.prepare(
          "INSERT INTO condukt_sessions (id, length, body, revision) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET length = excluded.length, body = excluded.body, revision = excluded.revision"
        ),
        deleteSession: db.prepare("DELETE FROM condukt_sessions WHERE id = ?")
      }
    },
    catch: opened
  }).pipe(Effect.retry(busyPolicy))

  /** The revision this store last loaded or saved per session (`absent`: no row); a session it never saw is not checked. */
  const expected = new Map<string, SnapshotRows.Revision>()

  const sessionRow = (id: string) => SnapshotRows.sessionRow(file, id)

  /**
   * Runs `f` in one transaction (a load only reads: it takes no write lock), retried on the
   * Effect clock while another process holds the lock.
   */
  const transaction = <A>(method: SessionStoreError["method"], id: string, f: () => A) =>
    Effect.try({
      try: () => inTransaction(db, method === "load" ? "BEGIN" : "BEGIN IMMEDIATE", f),
      catch: (cause) =>
        new SessionStoreError({ method, sessionId: id, location: file, reason: new Unavailable({ description: describe(cause) }), cause })
    }).pipe(Effect.retry(busyPolicy))

  const load = Effect.fn("SqliteSessionStore.load")(function*(id: string) {
    yield* validId("load", id, file)
    // Until a load succeeds, this store knows nothing of the session's row.
    expected.delete(id)
    const rows = yield* transaction("load", id, () => {
      const session = selectSession.get(id)
      return session === undefined ? undefined : { session, messages: selectMessages.all(id, Number(session["length"])) }
    })
    if (rows === undefined) {
      expected.set(id, "absent")
      return Option.none()
    }
    const { revision, snapshot } = yield* Effect.fromResult(SnapshotRows.decode(rows, id, file))
    expected.set(id, revision)
    return Option.some(snapshot)
  })

  const save = Effect.fn("SqliteSessionStore.save")(function*(snapshot: Snapshot.Snapshot, saveOptions?: SaveOptions) {
    const { id, messages } = snapshot
    yield* validId("save", id, file)
    const body = yield* Effect.fromResult(SnapshotRows.encodeBody(snapshot, file))
    const appended = saveOptions?.appended
    const want = expected.get(id)
    type Outcome = { readonly saved: number } | { readonly conflict: string } | { readonly unwritable: SessionStoreError }
    const outcome = yield* transaction("save", id, (): Outcome => {
      const stored = selectSession.get(id)
      const found = stored === undefined ? "absent" : Number(stored["revision"])
      const refused = SnapshotRows.conflict(want, found)
      // Nothing is written: the transaction commits no change.
      if (refused !== undefined) return { conflict: refused }
      const appending = appended !== undefined && stored !== undefined && Number(stored["length"]) === messages.length - appended
      const from = appending ? messages.length - appended : 0
      // Messages are plain data whose encoded form is the value itself: no Schema pass on the hot
      // path. All are encoded before the first write: one that cannot be leaves the rows as they were.
      const bodies = SnapshotRows.encodeMessages(snapshot, from, file)
      if (Result.isFailure(bodies)) return { unwritable: bodies.failure }
      if (appending) deleteTail.run(id, from)
      else deleteMessages.run(id)
      bodies.success.forEach((json, i) => insertMessage.run(id, from + i, json))
      const revision = found === "absent" ? 1 : found + 1
      upsertSession.run(id, messages.length, body, revision)
      return { saved: revision }
    })
    if ("unwritable" in outcome) return yield* outcome.unwritable
    if ("conflict" in outcome) {
      return yield* new SessionStoreError({ method: "save", sessionId: id, location: sessionRow(id), reason: new Conflict({ description: outcome.conflict }) })
    }
    expected.set(id, outcome.saved)
  })

  const clear = Effect.fn("SqliteSessionStore.clear")(function*(id: string) {
    yield* validId("clear", id, file)
    yield* transaction("clear", id, () => {
      deleteMessages.run(id)
      deleteSession.run(id)
    })
    expected.set(id, "absent")
  })

  return SessionStore.of({ load, save, clear } satisfies Service)
})

/**
 * A `SessionStore` in the SQLite database `options.file`, closed with the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SessionStore, SessionStoreError> => Layer.effect(SessionStore, make(options))

/**
 * SqlSessionStore — session snapshots in a SQL database reached through `effect/sql`'s SqlClient:
 * Postgres (`@effect/sql-pg`) or SQLite (`@condukt/node/SqliteClient`). It is the store of the
 * cluster: a session entity keeps its state in the same database as the cluster's mailboxes, so
 * whichever runner holds the session loads it from there (docs/decisions/0058).
 *
 * The layout is the SQLite session store's: `condukt_sessions` (one row per session: the snapshot
 * without its messages, how many messages it has, a revision) and `condukt_messages` (one row per
 * message, keyed by session and index). A save that only adds messages inserts those rows; a
 * rewrite (a compaction, a first save) replaces the session's rows; either in one transaction.
 *
 * Writers meet on the session row: a save first moves the row from the revision this store last
 * loaded or saved to the next one (`UPDATE … WHERE revision = ?`, or an insert that does nothing
 * when the row exists), and only then touches messages. If another writer saved since, the row
 * does not move, the save fails with `Conflict` and nothing is written. A load reads the session
 * row `FOR SHARE` on Postgres, so the messages it reads next are those of the same save.
 *
 * A database another process holds (SQLite's lock, a Postgres deadlock or serialization failure)
 * is retried on the Effect clock. Rows that are not what this store wrote fail the load with
 * `Corrupt` naming `location#table/row`.
 */
import { Array as Arr, Effect, Layer, Option, Result, Schedule } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import * as SnapshotRows from "@condukt/core/internal/snapshotRows"
import { Conflict, type SaveOptions, SessionStore, SessionStoreError, type Service, Unavailable, validId } from "@condukt/core/SessionStore"
import * as Snapshot from "@condukt/core/Snapshot"

/** @since 0.1.0 @category models */
export interface Options {
  /** What errors name as where the rows are (the database file, a URL without its password); `sql:<dialect>` when absent. */
  readonly location?: string | undefined
}

/** How often a statement retries a database another writer has locked, 20 ms apart. */
export const BUSY_RETRIES = 100

/** Message rows per INSERT: three parameters each, far below either database's limit. */
const INSERT_CHUNK = 300

/** Serialises the creation of the tables across processes on Postgres (`CREATE … IF NOT EXISTS` races there). */
const SCHEMA_LOCK = 0x636f6e64

const TABLES = {
  pg: [
    "CREATE TABLE IF NOT EXISTS condukt_sessions (id TEXT PRIMARY KEY NOT NULL, length INTEGER NOT NULL, body TEXT NOT NULL, revision INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS condukt_messages (session TEXT NOT NULL, idx INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (session, idx))"
  ],
  sqlite: [
    "CREATE TABLE IF NOT EXISTS condukt_sessions (id TEXT PRIMARY KEY NOT NULL, length INTEGER NOT NULL, body TEXT NOT NULL, revision INTEGER NOT NULL DEFAULT 0) STRICT",
    "CREATE TABLE IF NOT EXISTS condukt_messages (session TEXT NOT NULL, idx INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (session, idx)) STRICT, WITHOUT ROWID"
  ]
} as const

const describe = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/** Another writer holds the database: worth another try. */
const isBusy = (error: SqlError.SqlError) =>
  error.reason._tag === "LockTimeoutError" || error.reason._tag === "DeadlockError" || error.reason._tag === "SerializationError"

const busyPolicy = { while: isBusy, times: BUSY_RETRIES, schedule: Schedule.spaced("20 millis") }

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
  const unavailable = (method: SessionStoreError["method"], sessionId: string) => (cause: SqlError.SqlError) =>
    new SessionStoreError({ method, sessionId, location, reason: new Unavailable({ description: describe(cause) }), cause })
  if (dialect === undefined) {
    return yield* new SessionStoreError({
      method: "open",
      sessionId: "",
      location,
      reason: new Unavailable({ description: "the SQL session store speaks Postgres and SQLite only" })
    })
  }

  /** Runs `effect` in one transaction, retried while another writer holds the database. */
  const transaction = <A>(method: SessionStoreError["method"], id: string, effect: Effect.Effect<A, SqlError.SqlError>) =>
    sql.withTransaction(effect).pipe(Effect.retry(busyPolicy), Effect.mapError(unavailable(method, id)))

  yield* transaction(
    "open",
    "",
    Effect.gen(function*() {
      if (dialect === "pg") yield* sql`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK})`
      for (const statement of TABLES[dialect]) yield* sql.unsafe(statement)
    })
  )

  /** The revision this store last loaded or saved per session (`absent`: no row); a session it never saw is not checked. */
  const expected = new Map<string, SnapshotRows.Revision>()

  const sessionRow = (id: string) => SnapshotRows.sessionRow(location, id)
  const forShare = dialect === "pg" ? sql.unsafe(" FOR SHARE") : sql.unsafe("")
  const selectSession = (id: string) => sql`SELECT length, body, revision FROM condukt_sessions WHERE id = ${id}${forShare}`

  const load = Effect.fn("SqlSessionStore.load")(function*(id: string) {
    yield* validId("load", id, location)
    // Until a load succeeds, this store knows nothing of the session's row.
    expected.delete(id)
    const rows = yield* transaction(
      "load",
      id,
      Effect.gen(function*() {
        const [session] = yield* selectSession(id)
        if (session === undefined) return undefined
        const messages = yield* sql`SELECT idx, body FROM condukt_messages WHERE session = ${id} AND idx < ${Number(session["length"])} ORDER BY idx`
        return { session, messages }
      })
    )
    if (rows === undefined) {
      expected.set(id, "absent")
      return Option.none()
    }
    const { revision, snapshot } = yield* Effect.fromResult(SnapshotRows.decode(rows, id, location))
    expected.set(id, revision)
    return Option.some(snapshot)
  })

  const revisionOf = (id: string) =>
    Effect.map(sql`SELECT revision FROM condukt_sessions WHERE id = ${id}`, ([row]) => (row === undefined ? "absent" as const : Number(row["revision"])))

  /**
   * Moves the session row from `found` to the next revision; what the row is at instead when
   * another writer moved it first (the statement matched no row).
   */
  const claim = (id: string, found: SnapshotRows.Revision, length: number, body: string) =>
    Effect.gen(function*() {
      const revision = found === "absent" ? 1 : found + 1
      const moved = found === "absent"
        ? yield* sql`INSERT INTO condukt_sessions (id, length, body, revision) VALUES (${id}, ${length}, ${body}, ${revision}) ON CONFLICT (id) DO NOTHING RETURNING revision`
        : yield* sql`UPDATE condukt_sessions SET length = ${length}, body = ${body}, revision = ${revision} WHERE id = ${id} AND revision = ${found} RETURNING revision`
      return moved.length === 1 ? { revision } : { other: yield* revisionOf(id) }
    })

  const save = Effect.fn("SqlSessionStore.save")(function*(snapshot: Snapshot.Snapshot, saveOptions?: SaveOptions) {
    const { id, messages } = snapshot
    yield* validId("save", id, location)
    const body = yield* Effect.fromResult(SnapshotRows.encodeBody(snapshot, location))
    const appended = saveOptions?.appended
    const want = expected.get(id)
    const outcome = yield* transaction(
      "save",
      id,
      Effect.gen(function*() {
        const [stored] = yield* sql`SELECT length, revision FROM condukt_sessions WHERE id = ${id}`
        const found = stored === undefined ? "absent" as const : Number(stored["revision"])
        const refused = SnapshotRows.conflict(want, found)
        if (refused !== undefined) return { conflict: refused }
        const appending = appended !== undefined && stored !== undefined && Number(stored["length"]) === messages.length - appended
        const from = appending ? messages.length - appended : 0
        // Messages are plain data whose encoded form is the value itself: no Schema pass on the hot
        // path. All are encoded before the first write: one that cannot be leaves the rows as they were.
        const bodies = SnapshotRows.encodeMessages(snapshot, from, location)
        if (Result.isFailure(bodies)) return { unwritable: bodies.failure }
        const claimed = yield* claim(id, found, messages.length, body)
        // Another writer got between the read and the claim: the claim wrote nothing.
        if ("other" in claimed) return { conflict: SnapshotRows.conflict(want ?? found, claimed.other) ?? "its row was written meanwhile" }
        if (appending) yield* sql`DELETE FROM condukt_messages WHERE session = ${id} AND idx >= ${from}`
        else yield* sql`DELETE FROM condukt_messages WHERE session = ${id}`
        for (let start = 0; start < bodies.success.length; start += INSERT_CHUNK) {
          const rows = bodies.success.slice(start, start + INSERT_CHUNK).map((json, i) => ({ session: id, idx: from + start + i, body: json }))
          if (Arr.isArrayNonEmpty(rows)) yield* sql`INSERT INTO condukt_messages ${sql.insert(rows)}`
        }
        return { saved: claimed.revision }
      })
    )
    if ("unwritable" in outcome) return yield* outcome.unwritable
    if ("conflict" in outcome) {
      return yield* new SessionStoreError({ method: "save", sessionId: id, location: sessionRow(id), reason: new Conflict({ description: outcome.conflict }) })
    }
    expected.set(id, outcome.saved)
  })

  const clear = Effect.fn("SqlSessionStore.clear")(function*(id: string) {
    yield* validId("clear", id, location)
    // The session row first: a writer holding it finishes before its messages go.
    yield* transaction(
      "clear",
      id,
      Effect.gen(function*() {
        yield* sql`DELETE FROM condukt_sessions WHERE id = ${id}`
        yield* sql`DELETE FROM condukt_messages WHERE session = ${id}`
      })
    )
    expected.set(id, "absent")
  })

  return SessionStore.of({ load, save, clear } satisfies Service)
})

/**
 * A `SessionStore` on the SqlClient's database (Postgres or SQLite).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<SessionStore, SessionStoreError, SqlClient.SqlClient> =>
  Layer.effect(SessionStore, make(options))

/**
 * sqlStore — the SQL session store, written once (docs/decisions/0082): its tables, its statements
 * and its revision protocol, over a `Runner` that runs them. `SqlSessionStore` runs them through
 * effect/sql's SqlClient (Postgres, or a SQLite file shared with effect/cluster);
 * `SqliteSessionStore`, the embedded default, on a `node:sqlite` connection of its own, each
 * transaction synchronously (effect/sql's machinery per statement would cost that store's save as
 * much as SQLite does: the ADR has the figures).
 *
 * Each transaction is a generator of statements (`?` for each parameter), given the rows each one
 * returned: the runner decides only how a statement runs and how a transaction begins, ends and is
 * retried while another writer holds the database. The generators are functions of this module,
 * never closures made per call: V8 takes about a microsecond to make a generator closure, a
 * twentieth of a turn's save.
 *
 * Two tables: `condukt_sessions` (one row per session: the snapshot without its messages, how many
 * messages it has, a revision) and `condukt_messages` (one row per message, keyed by session and
 * index). A save that only adds messages writes those rows; a rewrite (a compaction, a first save)
 * replaces the session's rows; either in one transaction, so its cost follows the turn, not the
 * history.
 *
 * A third, `condukt_approvals`, is the store's approval log (sqlApprovals.ts): a save indexes its
 * batch's approval records in the same transaction as the session's rows.
 *
 * Writers meet on the session row: a save first moves the row from the revision this store last
 * loaded or saved to the next one (`UPDATE … WHERE revision = ?`, or an insert that does nothing
 * when the row exists), and only then touches messages. If another writer saved since, the row
 * does not move, the save fails with `Conflict` and nothing is written. A session this store never
 * saw is read first (its revision, its length), then claimed the same way. A load reads the
 * session row `FOR SHARE` on Postgres, so the messages it reads next are those of the same save;
 * on SQLite its transaction is deferred, and takes no write lock.
 */
import { Clock, Effect, Option, Result } from "effect"
import { Conflict, type SaveOptions, SessionStore, SessionStoreError, type Service, Unavailable, validId } from "@condukt/core/SessionStore"
import type * as Snapshot from "@condukt/core/Snapshot"
import * as ApprovalRows from "./approvalRows.ts"
import * as SqlApprovals from "./sqlApprovals.ts"
import type { Runner, Statement, Transaction } from "./sqlRunner.ts"
import * as SnapshotRows from "./snapshotRows.ts"

/** How often an open, a load, a save or a clear retries a database another writer has locked, 20 ms apart. */
export const BUSY_RETRIES = 100

export type { Rows, Runner, Statement, Transaction } from "./sqlRunner.ts"

const statement = (sql: string, ...params: ReadonlyArray<unknown>): Statement => ({ sql, params })

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

/** The tables, created when missing; a SQLite database made before sessions had a revision gets the column (each row at revision 0). */
function* setup(dialect: Runner["dialect"]): Transaction<void> {
  if (dialect === "pg") yield statement("SELECT pg_advisory_xact_lock(?)", SCHEMA_LOCK)
  for (const table of TABLES[dialect]) yield statement(table)
  for (const table of SqlApprovals.TABLES[dialect]) yield statement(table)
  if (dialect === "sqlite") {
    const columns = yield statement("SELECT name FROM pragma_table_info('condukt_sessions')")
    if (!columns.some((column) => column["name"] === "revision")) {
      yield statement("ALTER TABLE condukt_sessions ADD COLUMN revision INTEGER NOT NULL DEFAULT 0")
    }
  }
}

/** The INSERT of `n` message rows, an index the session already has overwritten; one text per `n`. */
const insertTexts: Array<string> = []
const insertText = (n: number) =>
  (insertTexts[n] ??= `INSERT INTO condukt_messages (session, idx, body) VALUES ${Array.from({ length: n }, () => "(?, ?, ?)").join(", ")} ON CONFLICT (session, idx) DO UPDATE SET body = excluded.body`)

/**
 * What this store knows of a session's row, from its last load, save or clear: its revision
 * (`absent`: no row) and how many messages it holds. While the row is still at that revision, it
 * still holds that many.
 */
interface Known {
  readonly revision: SnapshotRows.Revision
  readonly length: number
}

const absent: Known = { revision: "absent", length: 0 }

/** The session row as it is now: its revision and length. */
function* read(id: string): Transaction<Known> {
  const [row] = yield statement("SELECT length, revision FROM condukt_sessions WHERE id = ?", id)
  return row === undefined ? absent : { revision: Number(row["revision"]), length: Number(row["length"]) }
}

/** Moves the session row from revision `from` to the next; false when it matched no row (another writer moved or created it first). */
function* claim(id: string, from: SnapshotRows.Revision, length: number, body: string): Transaction<boolean> {
  const moved = from === "absent"
    ? yield statement("INSERT INTO condukt_sessions (id, length, body, revision) VALUES (?, ?, ?, 1) ON CONFLICT (id) DO NOTHING RETURNING revision", id, length, body)
    : yield statement("UPDATE condukt_sessions SET length = ?, body = ?, revision = ? WHERE id = ? AND revision = ? RETURNING revision", length, body, from + 1, id, from)
  return moved.length === 1
}

/**
 * Writes message rows from index `from` on. An index the session already has is overwritten: an
 * append needs no delete first (rows past a session's length are never read, and a rewrite
 * removes them).
 */
function* insertMessages(id: string, from: number, bodies: ReadonlyArray<string>): Transaction<void> {
  for (let start = 0; start < bodies.length; start += INSERT_CHUNK) {
    const end = Math.min(start + INSERT_CHUNK, bodies.length)
    const params: Array<unknown> = []
    for (let i = start; i < end; i++) params.push(id, from + i, bodies[i])
    yield { sql: insertText(end - start), params }
  }
}

/** The session's rows, read in one transaction: none when it has no row. */
function* loadRows(dialect: Runner["dialect"], id: string): Transaction<SnapshotRows.Rows | undefined> {
  const [session] = yield statement(dialect === "pg" ? SELECT_SESSION_FOR_SHARE : SELECT_SESSION, id)
  if (session === undefined) return undefined
  const messages = yield statement("SELECT idx, body FROM condukt_messages WHERE session = ? AND idx < ? ORDER BY idx", id, Number(session["length"]))
  return { session, messages }
}

const SELECT_SESSION = "SELECT length, body, revision FROM condukt_sessions WHERE id = ?"
const SELECT_SESSION_FOR_SHARE = `${SELECT_SESSION} FOR SHARE`

type Outcome = { readonly saved: Known } | { readonly conflict: string } | { readonly unwritable: SessionStoreError }

/**
 * What a save writes in its transaction beside the session's rows: its batch's approval records,
 * the cutoff of answered ones to delete when one is due, and the caller's statement (`alongside`).
 */
interface Indexing {
  readonly approvals: ReadonlyArray<ApprovalRows.Encoded>
  readonly prune: number | undefined
  readonly alongside: Statement | undefined
}

/**
 * Saves `snapshot` in one transaction, its session row's body `body`, `appended` its new messages
 * (undefined: it is rewritten whole), from `want`, what this store knows of the row; its approval
 * records in the same commit.
 */
function* saveRows(
  snapshot: Snapshot.Snapshot,
  body: string,
  appended: number | undefined,
  want: Known | undefined,
  location: string,
  indexing: Indexing
): Transaction<Outcome> {
  const { id, messages } = snapshot
  // What the row is at: as this store left it (the claim checks that it still is), or, for a
  // session it never saw, as read now.
  const found = want ?? (yield* read(id))
  const appending = appended !== undefined && found.revision !== "absent" && found.length === messages.length - appended
  const from = appending ? messages.length - appended : 0
  // Messages are plain data whose encoded form is the value itself: no Schema pass on the hot
  // path. All are encoded before the first write: one that cannot be leaves the rows as they were.
  const bodies = SnapshotRows.encodeMessages(snapshot, from, location)
  if (Result.isFailure(bodies)) {
    // A row another writer moved is what the save says first, as when the rows are writable.
    const refused = want === undefined ? undefined : SnapshotRows.conflict(want.revision, (yield* read(id)).revision)
    return refused === undefined ? { unwritable: bodies.failure } : { conflict: refused }
  }
  if (!(yield* claim(id, found.revision, messages.length, body))) {
    // Another writer got there first: the claim wrote nothing.
    return { conflict: SnapshotRows.conflict(found.revision, (yield* read(id)).revision) ?? "its row was written meanwhile" }
  }
  if (!appending) yield statement("DELETE FROM condukt_messages WHERE session = ?", id)
  yield* insertMessages(id, from, bodies.success)
  // Once the row is claimed: a save refused commits nothing of the caller's either.
  if (indexing.alongside !== undefined) yield indexing.alongside
  if (indexing.approvals.length > 0) yield* SqlApprovals.index(indexing.approvals)
  if (indexing.prune !== undefined) yield* SqlApprovals.prune(indexing.prune)
  return { saved: { revision: found.revision === "absent" ? 1 : found.revision + 1, length: messages.length } }
}

/** Removes the session's rows in one transaction: its session row first, so a writer holding it finishes before its messages go. */
function* clearRows(id: string): Transaction<void> {
  yield statement("DELETE FROM condukt_sessions WHERE id = ?", id)
  yield statement("DELETE FROM condukt_messages WHERE session = ?", id)
}

const describe = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/** What both SQL stores take beside their database. */
export interface Options {
  /** How long answered approval records are kept (ms; default: for ever). */
  readonly approvalRetention?: number | undefined
  /**
   * A statement of the caller's to commit with a save, or none: run in the save's transaction once
   * the session's row is claimed, so it is committed when the save is and never without it.
   */
  readonly alongside?: ((snapshot: Snapshot.Snapshot) => Statement | undefined) | undefined
}

/**
 * The store on `runner`'s database, `location` naming it in errors and `name` its calls' spans
 * (`<name>.save`); its tables are created when missing.
 */
export const make = Effect.fnUntraced(function*(
  runner: Runner,
  location: string,
  name: "SqlSessionStore" | "SqliteSessionStore",
  options: Options = {}
) {
  const { dialect } = runner
  /** Runs `body` in one transaction; what the database threw fails `method` with `Unavailable`. */
  const transaction = <A>(method: SessionStoreError["method"], id: string, mode: "read" | "write", body: () => Transaction<A>) =>
    Effect.mapError(
      runner.transaction(mode, body),
      (cause) => new SessionStoreError({ method, sessionId: id, location, reason: new Unavailable({ description: describe(cause) }), cause })
    )

  // Several processes opening a new database at once meet on its tables: retried like any transaction.
  yield* transaction("open", "", "write", () => setup(dialect))

  /** Per session this store loaded, saved or cleared; a session it never saw is not checked. */
  const known = new Map<string, Known>()
  const retention = options.approvalRetention
  /** When this store's saves last deleted answered approval rows (its first save does). */
  let pruned = -Infinity

  const load = Effect.fn(`${name}.load`)(function*(id: string) {
    yield* validId("load", id, location)
    // Until a load succeeds, this store knows nothing of the session's row.
    known.delete(id)
    const rows = yield* transaction("load", id, "read", () => loadRows(dialect, id))
    if (rows === undefined) {
      known.set(id, absent)
      return Option.none()
    }
    const { revision, snapshot } = yield* Effect.fromResult(SnapshotRows.decode(rows, id, location))
    known.set(id, { revision, length: snapshot.messages.length })
    return Option.some(snapshot)
  })

  const save = Effect.fn(`${name}.save`)(function*(snapshot: Snapshot.Snapshot, saveOptions?: SaveOptions) {
    const { id } = snapshot
    yield* validId("save", id, location)
    const body = yield* Effect.fromResult(SnapshotRows.encodeBody(snapshot, location))
    const approvals = yield* Effect.fromResult(
      ApprovalRows.encode(snapshot.batch?.approvals, "save", id, (record) => `${location}#condukt_approvals${record === undefined ? "" : `/${record}`}`)
    )
    const now = retention === undefined ? 0 : yield* Clock.currentTimeMillis
    const indexing = {
      approvals,
      prune: retention !== undefined && now - pruned >= SqlApprovals.PRUNE_EVERY_MS ? now - retention : undefined,
      alongside: options.alongside?.(snapshot)
    }
    const want = known.get(id)
    const outcome = yield* transaction("save", id, "write", () => saveRows(snapshot, body, saveOptions?.appended, want, location, indexing))
    if ("unwritable" in outcome) return yield* outcome.unwritable
    if ("conflict" in outcome) {
      return yield* new SessionStoreError({
        method: "save",
        sessionId: id,
        location: SnapshotRows.sessionRow(location, id),
        reason: new Conflict({ description: outcome.conflict })
      })
    }
    known.set(id, outcome.saved)
    if (indexing.prune !== undefined) pruned = now
  })

  const clear = Effect.fn(`${name}.clear`)(function*(id: string) {
    yield* validId("clear", id, location)
    yield* transaction("clear", id, "write", () => clearRows(id))
    known.set(id, absent)
  })

  const release = (id: string) => Effect.sync(() => known.delete(id))

  return SessionStore.of({ load, save, clear, release, approvals: SqlApprovals.make(runner, location, name) } satisfies Service)
})

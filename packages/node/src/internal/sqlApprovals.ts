/**
 * sqlApprovals — the SQL session store's approval log (`ApprovalLog.Service`), in the table
 * `condukt_approvals` beside the sessions: one row per record, the columns a query selects on
 * (session, agent, tool, answerer, times, outcome, whether it is a shadow policy's) and the whole
 * record as JSON (`body`).
 *
 * A save indexes its batch's records in its own transaction (`index`, called by sqlStore's save),
 * `put` the records no save carries in a transaction of their own: an upsert by id that never
 * reopens a row already answered (another process's answer wins over a save that still had it open). `list` is one SELECT whose WHERE the filter builds, every value
 * bound as a parameter (an answerer's name or a tool's is data, never SQL), ordered by id (UUIDv7:
 * by request), one row past the page to know there is a next; the open ones are served by a partial
 * index, so listing them does not read the answered ones. `answer` reads the row (`FOR UPDATE` on
 * Postgres; SQLite's write transaction holds the database), refuses what `ApprovalLog.refusal`
 * refuses, and moves it with a conditional UPDATE (`WHERE outcome IS NULL`, and before its
 * deadline unless the answer is its expiry or its run's end): of two answers at once, one is
 * refused. The answered record is made here (`ApprovalRecord.answered`), not in SQL: the body is
 * JSON, and the dialects' JSON functions differ (Postgres' `jsonb` refuses a `\u0000` a tool's
 * input may hold).
 *
 * Answered rows older than the store's `approvalRetention` are deleted by a save, in its
 * transaction, at most once every `PRUNE_EVERY_MS` per store (and on its first save): the delete
 * goes through an index of answer times, and a minute is as fine as retention is asked in.
 */
import { Clock, Effect, Option, Result } from "effect"
import * as ApprovalLog from "@condukt/core/ApprovalLog"
import * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import { type SessionStoreError, Unavailable } from "@condukt/core/SessionStoreError"
import * as ApprovalRows from "./approvalRows.ts"
import type { Rows, Runner, Statement, Transaction } from "./sqlRunner.ts"

/** How often, at most, a store's saves delete answered rows past their retention. */
export const PRUNE_EVERY_MS = 60_000

const statement = (sql: string, ...params: ReadonlyArray<unknown>): Statement => ({ sql, params })

/**
 * The table and its indexes. Postgres compares ids and agent paths by their bytes (`COLLATE "C"`),
 * as SQLite and the memory log do, so the order of a page and a cursor do not depend on the
 * database's locale; epoch milliseconds need 64 bits there.
 */
export const TABLES = {
  pg: [
    `CREATE TABLE IF NOT EXISTS condukt_approvals (id TEXT COLLATE "C" PRIMARY KEY NOT NULL, session_id TEXT NOT NULL, agent TEXT COLLATE "C" NOT NULL, tool TEXT NOT NULL, answered_by TEXT, requested_at BIGINT NOT NULL, expires_at BIGINT, answered_at BIGINT, outcome TEXT, shadow SMALLINT NOT NULL, body TEXT NOT NULL)`,
    "CREATE INDEX IF NOT EXISTS condukt_approvals_open ON condukt_approvals (id, expires_at) WHERE outcome IS NULL AND shadow = 0",
    "CREATE INDEX IF NOT EXISTS condukt_approvals_session ON condukt_approvals (session_id, id)",
    "CREATE INDEX IF NOT EXISTS condukt_approvals_answered ON condukt_approvals (answered_at) WHERE answered_at IS NOT NULL"
  ],
  sqlite: [
    "CREATE TABLE IF NOT EXISTS condukt_approvals (id TEXT PRIMARY KEY NOT NULL, session_id TEXT NOT NULL, agent TEXT NOT NULL, tool TEXT NOT NULL, answered_by TEXT, requested_at INTEGER NOT NULL, expires_at INTEGER, answered_at INTEGER, outcome TEXT, shadow INTEGER NOT NULL, body TEXT NOT NULL) STRICT",
    "CREATE INDEX IF NOT EXISTS condukt_approvals_open ON condukt_approvals (id, expires_at) WHERE outcome IS NULL AND shadow = 0",
    "CREATE INDEX IF NOT EXISTS condukt_approvals_session ON condukt_approvals (session_id, id)",
    "CREATE INDEX IF NOT EXISTS condukt_approvals_answered ON condukt_approvals (answered_at) WHERE answered_at IS NOT NULL"
  ]
} as const

const COLUMNS = "id, session_id, agent, tool, answered_by, requested_at, expires_at, answered_at, outcome, shadow, body"

/** Records per INSERT: eleven parameters each, far below either database's limit. */
const INSERT_CHUNK = 50

/**
 * The upsert of `n` records. A row already answered keeps its answer when the save's record is
 * still open (`ApprovalLog.merged`); otherwise the save's record replaces it.
 */
const upsertTexts: Array<string> = []
const upsertText = (n: number) =>
  (upsertTexts[n] ??= `INSERT INTO condukt_approvals (${COLUMNS}) VALUES ${Array.from({ length: n }, () => "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")} ` +
    "ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, agent = excluded.agent, tool = excluded.tool, " +
    "answered_by = excluded.answered_by, requested_at = excluded.requested_at, expires_at = excluded.expires_at, " +
    "answered_at = excluded.answered_at, outcome = excluded.outcome, shadow = excluded.shadow, body = excluded.body " +
    "WHERE condukt_approvals.outcome IS NULL OR excluded.outcome IS NOT NULL")

/** The columns of a record's row, in `COLUMNS`' order. */
const pushRow = (params: Array<unknown>, { body, record }: ApprovalRows.Encoded) => {
  params.push(
    record.id,
    record.sessionId,
    record.agent,
    record.tool,
    record.by ?? null,
    record.requestedAt,
    record.expiresAt ?? null,
    record.answeredAt ?? null,
    record.outcome ?? null,
    record.shadow === undefined ? 0 : 1,
    body
  )
}

/** Indexes records (`ApprovalRows.encode`): a save's, in its transaction, or a put's. */
export function* index(records: ReadonlyArray<ApprovalRows.Encoded>): Transaction<void> {
  for (let start = 0; start < records.length; start += INSERT_CHUNK) {
    const end = Math.min(start + INSERT_CHUNK, records.length)
    const params: Array<unknown> = []
    for (let i = start; i < end; i++) pushRow(params, records[i]!)
    yield { sql: upsertText(end - start), params }
  }
}

/** Deletes the rows answered before `cutoff` (epoch ms), in a save's transaction. */
export function* prune(cutoff: number): Transaction<void> {
  yield statement("DELETE FROM condukt_approvals WHERE answered_at < ?", cutoff)
}

/**
 * The SELECT of one page: `ApprovalLog.matches` as a WHERE clause, then the cursor. The shadow and
 * open tests are written out, not bound, so SQLite and Postgres see that the partial index of open
 * rows serves them; everything from the caller is a parameter.
 */
const page = (filter: ApprovalLog.Filter, now: number, size: number): Statement => {
  const where: Array<string> = [filter.shadow === true ? "shadow = 1" : "shadow = 0"]
  const params: Array<unknown> = []
  const status = filter.status ?? "open"
  if (status === "open") {
    where.push("outcome IS NULL", "(expires_at IS NULL OR expires_at > ?)")
    params.push(now)
  }
  if (status === "answered") where.push("outcome IS NOT NULL")
  // Each given field narrows by one bound parameter (the agent by two: the path, or a path under it).
  const narrow = (given: unknown, clause: string, ...values: ReadonlyArray<unknown>) => {
    if (given === undefined) return
    where.push(clause)
    params.push(...values)
  }
  narrow(filter.sessionId, "session_id = ?", filter.sessionId)
  // The path itself, or one that starts with it and a `/`: characters counted as SQL counts them.
  const prefix = `${filter.agent}/`
  narrow(filter.agent, "(agent = ? OR substr(agent, 1, ?) = ?)", filter.agent, [...prefix].length, prefix)
  narrow(filter.tool, "tool = ?", filter.tool)
  narrow(filter.by, "answered_by = ?", filter.by)
  narrow(filter.since, "requested_at >= ?", filter.since)
  narrow(filter.until, "requested_at < ?", filter.until)
  const newest = filter.order === "newest"
  narrow(filter.cursor, newest ? "id < ?" : "id > ?", filter.cursor)
  params.push(size + 1)
  return { sql: `SELECT id, body FROM condukt_approvals WHERE ${where.join(" AND ")} ORDER BY id${newest ? " DESC" : ""} LIMIT ?`, params }
}

function* one(query: Statement): Transaction<Rows> {
  return yield query
}

const SELECT = "SELECT body FROM condukt_approvals WHERE id = ?"
const SELECT_FOR_UPDATE = `${SELECT} FOR UPDATE`

type Answered =
  | { readonly answered: ApprovalRecord.ApprovalRecord }
  | { readonly refused: ApprovalLog.ApprovalRefused }
  | { readonly corrupt: SessionStoreError }

/** The record the row holds when it takes the answer; else the refusal (`unknown` for no row), or its `Corrupt`. */
const judged = (
  row: Readonly<Record<string, unknown>> | undefined,
  id: string,
  outcome: ApprovalRecord.Outcome,
  at: number,
  location: string
): { readonly open: ApprovalRecord.ApprovalRecord } | Exclude<Answered, { readonly answered: unknown }> => {
  const decoded = row === undefined ? undefined : ApprovalRows.decode(String(row["body"]), "answer", location)
  if (decoded !== undefined && Result.isFailure(decoded)) return { corrupt: decoded.failure }
  const record = decoded?.success
  const refused = ApprovalLog.refusal(id, record, at, outcome)
  return refused !== undefined ? { refused } : { open: record! }
}

/** Answers the record `id` in one transaction: read it, refuse or move it, conditionally. */
function* answerRow(
  dialect: Runner["dialect"],
  id: string,
  outcome: ApprovalRecord.Outcome,
  at: number,
  by: ApprovalRecord.By | undefined,
  location: string
): Transaction<Answered> {
  const [row] = yield statement(dialect === "pg" ? SELECT_FOR_UPDATE : SELECT, id)
  const found = judged(row, id, outcome, at, location)
  if (!("open" in found)) return found
  const done = ApprovalRecord.answered(found.open, outcome, at, by)
  const ending = outcome === "expired" || outcome === "aborted"
  const moved = yield statement(
    `UPDATE condukt_approvals SET outcome = ?, answered_at = ?, answered_by = ?, body = ? WHERE id = ? AND outcome IS NULL AND shadow = 0${
      ending ? "" : " AND (expires_at IS NULL OR expires_at > ?)"
    } RETURNING id`,
    ...[outcome, at, done.by ?? null, JSON.stringify(done), id, ...(ending ? [] : [at])]
  )
  if (moved.length === 1) return { answered: done }
  // Another answer got there first (the row lock makes this rare; the condition makes it safe).
  const [again] = yield statement(SELECT, id)
  const now = judged(again, id, outcome, at, location)
  return "open" in now ? { refused: new ApprovalLog.ApprovalRefused({ id, reason: "answered", record: now.open }) } : now
}

/**
 * The approval log on `runner`'s database, `location` naming it in errors and `name` its spans
 * (`<name>.list`).
 */
export const make = (runner: Runner, location: string, name: string): ApprovalLog.Service<SessionStoreError> => {
  const at = (id?: string) => (id === undefined ? `${location}#condukt_approvals` : `${location}#condukt_approvals/${id}`)
  const run = <A>(method: "list" | "get" | "answer" | "put", where: string, mode: "read" | "write", body: () => Transaction<A>) =>
    Effect.mapError(
      runner.transaction(mode, body),
      (cause) => ApprovalRows.failure(method, where, new Unavailable({ description: cause instanceof Error ? cause.message : String(cause) }), cause)
    )

  const list = Effect.fn(`${name}.list`)(function*(filter: ApprovalLog.Filter = {}) {
    const now = filter.now ?? (yield* Clock.currentTimeMillis)
    const size = ApprovalLog.pageSize(filter)
    const query = page(filter, now, size)
    const rows = yield* run("list", at(), "read", () => one(query))
    const records: Array<ApprovalRecord.ApprovalRecord> = []
    for (const row of rows.slice(0, size)) {
      records.push(yield* Effect.fromResult(ApprovalRows.decode(String(row["body"]), "list", at(String(row["id"])))))
    }
    return rows.length > size ? { records, next: records.at(-1)!.id } : { records }
  })

  const get = Effect.fn(`${name}.get`)(function*(id: string) {
    if (!ApprovalLog.isKeptId(id)) return Option.none()
    const [row] = yield* run("get", at(id), "read", () => one(statement(SELECT, id)))
    return row === undefined ? Option.none() : Option.some(yield* Effect.fromResult(ApprovalRows.decode(String(row["body"]), "get", at(id))))
  })

  const answer = Effect.fn(`${name}.answer`)(function*(id: string, outcome: ApprovalRecord.Outcome, when: number, by?: ApprovalRecord.By) {
    if (!ApprovalLog.isKeptId(id)) return yield* new ApprovalLog.ApprovalRefused({ id, reason: "unknown" })
    const result = yield* run("answer", at(id), "write", () => answerRow(runner.dialect, id, outcome, when, by, at(id)))
    if ("refused" in result) return yield* result.refused
    if ("corrupt" in result) return yield* result.corrupt
    return result.answered
  })

  const put = Effect.fn(`${name}.put`)(function*(records: ReadonlyArray<ApprovalRecord.ApprovalRecord>) {
    const encoded = yield* Effect.fromResult(ApprovalRows.encode(records, "put", "", at))
    if (encoded.length > 0) yield* run("put", at(), "write", () => index(encoded))
  })

  return { list, get, answer, put }
}

/**
 * ApprovalLog — a store's index of approval records across its sessions: the open ones to answer,
 * the answered ones for the audit (docs/approvals.md, docs/decisions/0088).
 *
 * A store keeps one beside its snapshots (`SessionStore.Service.approvals`): every save indexes the
 * records of its snapshot's batch (`Snapshot.Batch.approvals`) in the same commit, an answered
 * record never going back to open (an answer recorded by another process wins over a save that
 * still had it open). `put` indexes records no save carries (a shadow policy's observations, the
 * requests of a sub-agent, which has no snapshot of its own) by the same rule. An id is held to
 * one rule (`isKeptId`) on every way in: a save or a put holding another fails, and `get` and
 * `answer` do not know it. The log answers queries (`list`, by status, session, agent, tool, answerer
 * and time, oldest first, in pages) and records an answer given away from the session
 * (`answer`: the CLI's, or the `Approvals` service's before it wakes the session), refusing a
 * second one. Answered records are kept for `retention` (default: for ever).
 *
 * `make` builds the one in memory (`SessionStore.makeMemory` has it); the disk and SQL stores of
 * `@condukt/node` keep theirs in a directory and a table.
 */
import { Effect, Option, Schema } from "effect"
import * as ApprovalRecord from "./ApprovalRecord.ts"
import { type Corrupt, SessionStoreError, unkeptId } from "./SessionStoreError.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * What `list` selects. Every field narrows; none given lists the open requests, oldest first.
 *
 * @since 0.1.0
 * @category models
 */
export interface Filter {
  /** `open` (default): unanswered and not past their deadline; `answered`: the audit; `all`. */
  readonly status?: "open" | "answered" | "all" | undefined
  readonly sessionId?: string | undefined
  /** An agent path, or its first segments (`main` covers `main/researcher`). */
  readonly agent?: string | undefined
  readonly tool?: string | undefined
  /** The answerer's identity, exactly. */
  readonly by?: string | undefined
  /** Requested at or after / before these (epoch ms). */
  readonly since?: number | undefined
  readonly until?: number | undefined
  /** Shadow records only (`true`), or none of them (default). */
  readonly shadow?: boolean | undefined
  /** At most this many (default 100, at most `MAX_PAGE`). */
  readonly limit?: number | undefined
  /** `oldest` first (default: as they were requested), or `newest` first (the audit's order). */
  readonly order?: "oldest" | "newest" | undefined
  /** The page after this one: a previous page's `next` (in the same order). */
  readonly cursor?: string | undefined
  /** The time `open` is judged at (epoch ms; default: the clock's). */
  readonly now?: number | undefined
}

/**
 * One page of records, oldest first (newest first when asked); `next` is the cursor of the page
 * after it, when there is one.
 *
 * @since 0.1.0
 * @category models
 */
export interface Page {
  readonly records: ReadonlyArray<ApprovalRecord.ApprovalRecord>
  readonly next?: string | undefined
}

/** @since 0.1.0 @category models */
export const DEFAULT_PAGE = 100

/** @since 0.1.0 @category models */
export const MAX_PAGE = 1000

/**
 * An answer the log did not take: no record has the id (`unknown`), the record was answered
 * already (`answered`, with it as it stands), or its deadline passed (`expired`).
 *
 * @since 0.1.0
 * @category errors
 */
export class ApprovalRefused extends Schema.TaggedError<ApprovalRefused>()("ApprovalRefused", {
  id: Schema.String,
  reason: Schema.Literals(["unknown", "answered", "expired"]),
  record: Schema.optionalKey(ApprovalRecord.ApprovalRecord)
}) {
  override get message() {
    const record = this.record
    switch (this.reason) {
      case "unknown":
        return `no approval ${JSON.stringify(this.id)}: list the open ones to find its id`
      case "answered":
        return `approval ${this.id} was answered already: ${record?.outcome ?? "answered"}${record?.by === undefined ? "" : ` by ${JSON.stringify(record.by)}`}${
          record?.answeredAt === undefined ? "" : ` at ${new Date(record.answeredAt).toISOString()}`
        }`
      case "expired":
        return `approval ${this.id} expired${record?.expiresAt === undefined ? "" : ` at ${new Date(record.expiresAt).toISOString()}`}: its call was not run`
    }
  }
}

/**
 * A store's approval log. Its failures are the store's (`E`: `SessionStoreError` for the stores
 * of Condukt).
 *
 * @since 0.1.0
 * @category models
 */
export interface Service<E = never> {
  readonly list: (filter?: Filter) => Effect.Effect<Page, E>
  readonly get: (id: string) => Effect.Effect<Option.Option<ApprovalRecord.ApprovalRecord>, E>
  /**
   * Records an answer to an open request, once: the record as answered, or `ApprovalRefused`.
   * Atomic: of two processes answering at once, one is refused.
   */
  readonly answer: (
    id: string,
    outcome: ApprovalRecord.Outcome,
    at: number,
    by?: ApprovalRecord.By | undefined
  ) => Effect.Effect<ApprovalRecord.ApprovalRecord, ApprovalRefused | E>
  /**
   * Indexes records outside a session's save (a shadow policy's observations, a sub-agent's
   * requests), in one write, as a save would (`merged`; one record per id, the last): the store's
   * `Corrupt` for a record whose id it does not keep (`isKeptId`), and nothing is written.
   */
  readonly put: (records: ReadonlyArray<ApprovalRecord.ApprovalRecord>) => Effect.Effect<void, E>
}

// ---------------------------------------------------------------------------------------------
// Guards
// ---------------------------------------------------------------------------------------------

/**
 * 1 to 128 lowercase letters, digits, `-` and `_`, a letter or a digit first: a UUID, and a name that
 * is one file on every file system (no case to fold, no dot, no separator) and a plain primary key.
 */
const KEPT_ID = /^[0-9a-z][0-9a-z_-]{0,127}$/

/**
 * Whether a log keeps a record with this id (Condukt's UUIDv7s it does): one with another is
 * refused by a save and a put, and unknown to `get` and `answer`, before the id reaches a path,
 * a statement or a map.
 *
 * @since 0.1.0
 * @category guards
 */
export const isKeptId = (id: string): boolean => KEPT_ID.test(id)

// ---------------------------------------------------------------------------------------------
// Combinators
// ---------------------------------------------------------------------------------------------

/**
 * The ids of a listing in `filter`'s order (ids are UUIDv7s: sorted, they are in the order of their
 * requests), from after its cursor on: what every log's `list` walks.
 *
 * @since 0.1.0
 * @category filters
 */
export const inOrder = (sortedIds: ReadonlyArray<string>, filter: Filter): ReadonlyArray<string> => {
  const newest = filter.order === "newest"
  const cursor = filter.cursor
  const after = cursor === undefined ? sortedIds : sortedIds.filter((id) => newest ? id < cursor : id > cursor)
  return newest ? [...after].reverse() : after
}

/**
 * Whether `record` passes `filter` (the cursor aside), judged at `now`: what every log's `list`
 * selects, the SQL ones in their WHERE clause.
 *
 * @since 0.1.0
 * @category combinators
 */
export const matches = (record: ApprovalRecord.ApprovalRecord, filter: Filter, now: number): boolean => {
  if ((filter.shadow === true) !== (record.shadow !== undefined)) return false
  const status = filter.status ?? "open"
  if (status === "open" && !ApprovalRecord.isOpen(record, now)) return false
  if (status === "answered" && record.outcome === undefined) return false
  if (filter.sessionId !== undefined && record.sessionId !== filter.sessionId) return false
  if (filter.agent !== undefined && record.agent !== filter.agent && !record.agent.startsWith(`${filter.agent}/`)) return false
  if (filter.tool !== undefined && record.tool !== filter.tool) return false
  if (filter.by !== undefined && record.by !== filter.by) return false
  if (filter.since !== undefined && record.requestedAt < filter.since) return false
  if (filter.until !== undefined && record.requestedAt >= filter.until) return false
  return true
}

/**
 * The page size `filter` asks for, within 1 and `MAX_PAGE`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const pageSize = (filter: Filter | undefined): number => Math.max(1, Math.min(MAX_PAGE, Math.floor(filter?.limit ?? DEFAULT_PAGE)))

/**
 * Why `record` cannot take `outcome` at `now`, if it cannot.
 *
 * @since 0.1.0
 * @category combinators
 */
export const refusal = (
  id: string,
  record: ApprovalRecord.ApprovalRecord | undefined,
  now: number,
  outcome: ApprovalRecord.Outcome = "approved"
): ApprovalRefused | undefined => {
  if (record === undefined || record.shadow !== undefined) return new ApprovalRefused({ id, reason: "unknown" })
  if (record.outcome !== undefined) return new ApprovalRefused({ id, reason: "answered", record })
  // Past its deadline a request takes no answer but its expiry (or its run's end).
  if (outcome !== "expired" && outcome !== "aborted" && record.expiresAt !== undefined && record.expiresAt <= now) {
    return new ApprovalRefused({ id, reason: "expired", record })
  }
  return undefined
}

/**
 * `saved` indexed over `held`: an answered record is never reopened by a save that still had it open.
 *
 * @since 0.1.0
 * @category combinators
 */
export const merged = (held: ApprovalRecord.ApprovalRecord | undefined, saved: ApprovalRecord.ApprovalRecord): ApprovalRecord.ApprovalRecord =>
  held !== undefined && held.outcome !== undefined && saved.outcome === undefined ? held : saved

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * A log in memory: records by id, in the order of their ids (UUIDv7: of their requests). `index`
 * is what a store's save calls with its snapshot's records: the reason it refuses them (an id it
 * does not keep), with nothing indexed, or none.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: { readonly retention?: number | undefined } = {}): Service<SessionStoreError> & {
  readonly index: (records: ReadonlyArray<ApprovalRecord.ApprovalRecord>, now: number) => Corrupt | undefined
} => {
  const byId = new Map<string, ApprovalRecord.ApprovalRecord>()
  const prune = (now: number) => {
    const retention = options.retention
    if (retention === undefined) return
    for (const [id, record] of byId) if (record.answeredAt !== undefined && record.answeredAt < now - retention) byId.delete(id)
  }
  const index = (records: ReadonlyArray<ApprovalRecord.ApprovalRecord>, now: number): Corrupt | undefined => {
    const unkept = records.find((record) => !isKeptId(record.id))
    if (unkept !== undefined) return unkeptId(unkept.id)
    for (const record of records) byId.set(record.id, merged(byId.get(record.id), record))
    prune(now)
    return undefined
  }
  return {
    index,
    put: (records) =>
      Effect.clockWith((clock) => {
        const refused = index(records, clock.currentTimeMillisUnsafe())
        return refused === undefined ? Effect.void : Effect.fail(new SessionStoreError({ method: "put", sessionId: "", location: "memory", reason: refused }))
      }),
    list: (filter = {}) =>
      Effect.clockWith((clock) =>
        Effect.sync(() => {
          const now = filter.now ?? clock.currentTimeMillisUnsafe()
          const size = pageSize(filter)
          const selected: Array<ApprovalRecord.ApprovalRecord> = []
          for (const id of inOrder([...byId.keys()].sort(), filter)) {
            const record = byId.get(id)!
            if (!matches(record, filter, now)) continue
            if (selected.length === size) return { records: selected, next: selected.at(-1)!.id }
            selected.push(record)
          }
          return { records: selected }
        })
      ),
    // An id the log does not keep was never indexed: `get` and `answer` find none.
    get: (id) => Effect.sync(() => Option.fromNullishOr(byId.get(id))),
    answer: (id, outcome, at, by) =>
      Effect.suspend(() => {
        const record = byId.get(id)
        const refused = refusal(id, record, at, outcome)
        if (refused !== undefined) return Effect.fail(refused)
        const done = ApprovalRecord.answered(record!, outcome, at, by)
        byId.set(id, done)
        return Effect.succeed(done)
      })
  }
}

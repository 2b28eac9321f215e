/**
 * Approvals — the requests for approval of every session of a store, found and answered by their
 * record's id from any process (docs/approvals.md, docs/decisions/0088).
 *
 * `list` and `get` read the store's approval log (`SessionStore.Service.approvals`): the open
 * requests, oldest first, in pages, or the audit of the answered ones. `approve` and `deny` take a
 * record's id and an answerer (`{ by, reason }`): a record answered already, past its deadline or
 * unknown is refused by name (`ApprovalLog.ApprovalRefused`); otherwise the answer goes to the
 * session that asked, through `Sessions.ById` — this process's registry (`Sessions.layerById`) or
 * the cluster's runners — which starts (resumes) the session from the store when no process holds
 * it, so its call runs where the session lives, exactly once. The session records the answer in
 * the log as it takes it; of two answers at once, from two processes, one is refused.
 *
 * The sessions `Sessions.ById` starts must save to the store this service reads: the one store of
 * the program (its `SessionStore` layer) or of the cluster.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import * as ApprovalLog from "./ApprovalLog.ts"
import type * as ApprovalRecord from "./ApprovalRecord.ts"
import * as SessionsById from "./SessionsById.ts"
import type { SessionsError } from "./SessionsError.ts"
import * as SessionStore from "./SessionStore.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export type ApprovalsError = ApprovalLog.ApprovalRefused | SessionStore.SessionStoreError | SessionsError

/** @since 0.1.0 @category models */
export interface Service {
  /** The requests `filter` selects (by default the open ones), oldest first, a page at a time. */
  readonly list: (filter?: ApprovalLog.Filter) => Effect.Effect<ApprovalLog.Page, SessionStore.SessionStoreError>
  /** One record, open or answered; an unknown id is refused (`unknown`). */
  readonly get: (id: string) => Effect.Effect<ApprovalRecord.ApprovalRecord, ApprovalLog.ApprovalRefused | SessionStore.SessionStoreError>
  /** Lets the request's call run: the record as answered. */
  readonly approve: (id: string, by?: ApprovalRecord.By) => Effect.Effect<ApprovalRecord.ApprovalRecord, ApprovalsError>
  /** Refuses the request's call; the model reads `Denied by the user: <reason>`. The record as answered. */
  readonly deny: (id: string, by?: ApprovalRecord.By) => Effect.Effect<ApprovalRecord.ApprovalRecord, ApprovalsError>
}

/**
 * The program's approvals.
 *
 * @since 0.1.0
 * @category services
 */
export class Approvals extends Context.Service<Approvals, Service>()("@condukt/core/Approvals") {}

/**
 * The store the service was given keeps no approval log: it cannot find a request by its id.
 *
 * @since 0.1.0
 * @category errors
 */
export class NoApprovalLog extends Schema.TaggedError<NoApprovalLog>()("NoApprovalLog", {}) {
  override get message() {
    return "the SessionStore keeps no approval log: use a store of Condukt (memory, disk, SQLite, Postgres), or give your store `approvals`"
  }
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * The service over `store`'s approval log, answering through `sessions`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (store: SessionStore.Service, sessions: SessionsById.ByIdService): Effect.Effect<Service, NoApprovalLog> => {
  const log = store.approvals
  if (log === undefined) return Effect.fail(new NoApprovalLog())
  const get = (id: string) =>
    Effect.flatMap(log.get(id), (found) => Option.isSome(found) ? Effect.succeed(found.value) : Effect.fail(new ApprovalLog.ApprovalRefused({ id, reason: "unknown" })))
  const answer = (id: string, approve: boolean, by: ApprovalRecord.By | undefined) =>
    Effect.gen(function*() {
      const record = yield* get(id)
      const now = yield* Clock.currentTimeMillis
      const refused = ApprovalLog.refusal(id, record, now)
      if (refused !== undefined) {
        // Past its deadline and not yet recorded so: the audit says it expired; the session takes it when it next starts.
        if (refused.reason === "expired") yield* Effect.ignore(log.answer(id, "expired", now, { by: "expiry" }))
        return yield* refused
      }
      const agent = record.agent.split("/")[0]!
      // The session, wherever it lives: started (resumed from the store) when no process holds it.
      yield* Effect.catchIf(sessions.start(agent, { id: record.sessionId }), (error) => error.reason._tag === "AlreadyStarted", () => Effect.void)
      // For this record only: a call of the same id asking again after a restart is another request.
      const answer = { ...by, approval: record.id }
      const given = approve
        ? sessions.approve(record.sessionId, record.callId, answer)
        : sessions.deny(record.sessionId, record.callId, by?.reason, answer)
      yield* Effect.catchIf(given, (error) => error.reason._tag === "ApprovalNotPending", () =>
        Effect.gen(function*() {
          // The session has no such call waiting: answered meanwhile (the log says by whom), or its
          // run ended without the log hearing of it (recorded now as aborted).
          const latest = yield* get(id)
          const ended = latest.outcome !== undefined
            ? latest
            : yield* Effect.orElseSucceed(log.answer(id, "aborted", yield* Clock.currentTimeMillis, { by: "abort" }), () => latest)
          return yield* new ApprovalLog.ApprovalRefused({ id, reason: "answered", record: ended })
        }))
      return yield* get(id)
    })
  return Effect.succeed(Approvals.of({
    list: (filter) => log.list(filter),
    get,
    approve: (id, by) => answer(id, true, by),
    deny: (id, by) => answer(id, false, by)
  }))
}

// ---------------------------------------------------------------------------------------------
// Layers
// ---------------------------------------------------------------------------------------------

/**
 * The service over the program's `SessionStore`, answering through its `Sessions.ById`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Approvals, NoApprovalLog, SessionStore.SessionStore | SessionsById.ById> = Layer.effect(
  Approvals,
  Effect.flatMap(Effect.all([SessionStore.SessionStore, SessionsById.ById]), ([store, sessions]) => make(store, sessions))
)

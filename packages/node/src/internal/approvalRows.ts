/**
 * approvalRows — an approval record as the durable stores keep it (the disk store's files, the SQL
 * store's `condukt_approvals` rows): the record's JSON (`encode`, `decode`, within
 * `JsonLimits.stored` as the snapshot that carries it), and the store's errors about one, naming
 * where it is.
 *
 * A record's id becomes a file name on disk and a primary key in SQL: it is held to the logs' one
 * rule (`ApprovalLog.isKeptId`) first, so a hostile id is refused by a save and a put, and unknown
 * to `get` and `answer`, before it reaches a path or a statement.
 */
import { Result, Schema } from "effect"
import * as ApprovalLog from "@condukt/core/ApprovalLog"
import * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import * as JsonLimits from "@condukt/core/JsonLimits"
import { Corrupt, SessionStoreError, unkeptId, unreadable, unwritable } from "@condukt/core/SessionStoreError"

/** A record nests three levels down in the snapshot (`{"batch":{"approvals":[…]}}`): its JSON alone holds three fewer. */
const RECORD_ENVELOPE = -3

const decodeRecord = Schema.decodeUnknownResult(ApprovalRecord.ApprovalRecord)

/** A store failure of `method` at `location` (of no session, unless a save's). */
export const failure = (
  method: SessionStoreError["method"],
  location: string,
  reason: SessionStoreError["reason"],
  cause?: unknown,
  sessionId = ""
) => new SessionStoreError({ method, sessionId, location, reason, ...(cause === undefined ? {} : { cause }) })

/** The record `text` holds, or `method`'s `Corrupt` naming `location`. */
export const decode = (
  text: string,
  method: SessionStoreError["method"],
  location: string
): Result.Result<ApprovalRecord.ApprovalRecord, SessionStoreError> => {
  const value = JsonLimits.parse(text, JsonLimits.stored, RECORD_ENVELOPE)
  if (Result.isFailure(value)) return Result.fail(failure(method, location, unreadable(value.failure, "approval record")))
  const record = decodeRecord(value.success)
  if (Result.isFailure(record)) {
    const description = record.failure.message.replace(/\s*\n\s*/g, " ")
    return Result.fail(failure(method, location, new Corrupt({ description, subject: "approval record" })))
  }
  return Result.succeed(record.success)
}

/** A record to index: the record, and its JSON. */
export interface Encoded {
  readonly record: ApprovalRecord.ApprovalRecord
  readonly body: string
}

/**
 * `records` to index (a save's batch, or a put's), one per id (the last, if an id repeats), each
 * with its JSON; `method`'s error naming the first one whose id a store does not keep or JSON
 * cannot hold (`where` spells its location, the log's own for an id it does not keep), before
 * anything is written.
 */
export const encode = (
  records: ReadonlyArray<ApprovalRecord.ApprovalRecord> | undefined,
  method: "save" | "put",
  sessionId: string,
  where: (id: string | undefined) => string
): Result.Result<ReadonlyArray<Encoded>, SessionStoreError> => {
  if (records === undefined || records.length === 0) return Result.succeed([])
  const byId = new Map<string, Encoded>()
  for (const record of records) {
    if (!ApprovalLog.isKeptId(record.id)) return Result.fail(failure(method, where(undefined), unkeptId(record.id), undefined, sessionId))
    const body = JsonLimits.stringify(record, JsonLimits.stored, RECORD_ENVELOPE)
    if (Result.isFailure(body)) {
      return Result.fail(failure(method, where(record.id), unwritable(body.failure, "approval record"), body.failure, sessionId))
    }
    byId.delete(record.id)
    byId.set(record.id, { record, body: body.success })
  }
  return Result.succeed([...byId.values()])
}

/**
 * approvalRows — an approval record as the durable stores keep it (the disk store's files, the SQL
 * store's `condukt_approvals` rows): the rule an id meets to be kept (`isKeptId`), the record's JSON
 * (`encode`, `decode`, within `JsonLimits.stored` as the snapshot that carries it), and the
 * store's errors about one, naming where it is.
 *
 * A record's id becomes a file name on disk and a primary key in SQL: the same rule holds in both,
 * so a hostile id is refused by a save and unknown to `get` and `answer` before it reaches a path
 * or a statement. Condukt's ids are UUIDv7s, which it admits.
 */
import { Result, Schema } from "effect"
import * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import * as JsonLimits from "@condukt/core/JsonLimits"
import { Corrupt, SessionStoreError, unreadable, unwritable } from "@condukt/core/SessionStoreError"
import type * as Snapshot from "@condukt/core/Snapshot"

/**
 * Lowercase letters, digits, `-` and `_`, a letter or a digit first, at most 128: a UUID, and a name
 * that is one file on every file system (no case to fold, no dot, no separator).
 */
const KEPT_ID = /^[0-9a-z][0-9a-z_-]{0,127}$/

/** Whether a store keeps a record with this id (an id it does not is refused by a save, unknown to `get` and `answer`). */
export const isKeptId = (id: string): boolean => KEPT_ID.test(id)

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
  if (Result.isFailure(value)) return Result.fail(failure(method, location, unreadable(value.failure)))
  const record = decodeRecord(value.success)
  if (Result.isFailure(record)) {
    const description = `not an approval record: ${record.failure.message.replace(/\s*\n\s*/g, " ")}`
    return Result.fail(failure(method, location, new Corrupt({ description })))
  }
  return Result.succeed(record.success)
}

/** A record to index: the record, and its JSON. */
export interface Encoded {
  readonly record: ApprovalRecord.ApprovalRecord
  readonly body: string
}

/**
 * The records of `snapshot`'s batch to index, one per id (the last, if an id repeats), each with its
 * JSON; a save's error naming the first one whose id a store does not keep or JSON cannot hold
 * (`where` spells its location, the log's own for an id it does not keep), before anything is written.
 */
export const encode = (
  snapshot: Snapshot.Snapshot,
  where: (id: string | undefined) => string
): Result.Result<ReadonlyArray<Encoded>, SessionStoreError> => {
  const records = snapshot.batch?.approvals
  if (records === undefined || records.length === 0) return Result.succeed([])
  const byId = new Map<string, Encoded>()
  for (const record of records) {
    if (!isKeptId(record.id)) {
      const description = `approval record id ${JSON.stringify(record.id.slice(0, 200))} is not one a store keeps (lowercase letters, digits, - and _)`
      return Result.fail(failure("save", where(undefined), new Corrupt({ description }), undefined, snapshot.id))
    }
    const body = JsonLimits.stringify(record, JsonLimits.stored, RECORD_ENVELOPE)
    if (Result.isFailure(body)) return Result.fail(failure("save", where(record.id), unwritable(body.failure), body.failure, snapshot.id))
    byId.delete(record.id)
    byId.set(record.id, { record, body: body.success })
  }
  return Result.succeed([...byId.values()])
}

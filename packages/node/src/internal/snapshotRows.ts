/**
 * snapshotRows — the row layout of the SQL session store (`SqlSessionStore`, which
 * `SqliteSessionStore` is on its own SQLite file): one session row holding the snapshot
 * without its messages as JSON, how many messages it has and a revision, and one row per message
 * (its index and its JSON). It reads rows back into a snapshot, naming the row that is not what a
 * store wrote (`location#condukt_sessions/<id>`, `location#condukt_messages/<id>/<index>`), and
 * writes the rows' bodies (`encodeBody`, `encodeMessages`: what `JSON.stringify` cannot write, or
 * what a load would refuse under `JsonLimits.stored`, fails the save before anything is written).
 */
import { Result, Schema } from "effect"
import * as JsonLimits from "@condukt/core/JsonLimits"
import { Corrupt, SessionStoreError, unreadable, unwritable } from "@condukt/core/SessionStoreError"
import * as Snapshot from "@condukt/core/Snapshot"

/** What a load read: the session row, and its message rows in index order. */
export interface Rows {
  readonly session: unknown
  readonly messages: ReadonlyArray<unknown>
}

const SessionRow = Schema.Struct({ length: Schema.Int, body: Schema.String, revision: Schema.Int })
const MessageRow = Schema.Struct({ idx: Schema.Int, body: Schema.String })

/**
 * `JsonLimits.stored` holds for the snapshot, where a message nests two levels down
 * (`{"messages":[…]}`): a message row's envelope is -2; the session row's body is the snapshot's own level.
 */
const MESSAGE_ROW = -2

/** A row's JSON, within what a store writes; else why not, as a load's `Corrupt` says it. */
const parseJson = (text: string, envelope: number) =>
  Result.mapError(JsonLimits.parse(text, JsonLimits.stored, envelope), (error) => unreadable(error).description)

/** A session row's revision as a store last loaded or saved it, `absent` when there was no row. */
export type Revision = number | "absent"

/**
 * Why a save must not write: the session row is not at the revision this store last loaded or
 * saved (`want`; undefined when it never saw the session, which is not checked). Undefined when it is.
 */
export const conflict = (want: Revision | undefined, found: Revision): string | undefined => {
  if (want === undefined || want === found) return undefined
  if (found === "absent") return "its row was removed"
  return want === "absent" ? "its row was created" : `its row is at revision ${found}, ${want} when last loaded or saved here`
}

/** Where the session's row is, for errors. */
export const sessionRow = (location: string, id: string) => `${location}#condukt_sessions/${id}`

/** The snapshot the rows of session `id` hold, with the session row's revision; or the load's error naming the row. */
export const decode = (
  rows: Rows,
  id: string,
  location: string
): Result.Result<{ readonly snapshot: Snapshot.Snapshot; readonly revision: number }, SessionStoreError> => {
  const corrupt = (at: string, description: string) =>
    Result.fail(new SessionStoreError({ method: "load", sessionId: id, location: at, reason: new Corrupt({ description }) }))
  const session = Schema.decodeUnknownResult(SessionRow)(rows.session)
  if (Result.isFailure(session)) return corrupt(sessionRow(location, id), "the row has no length or body")
  const body = parseJson(session.success.body, 0)
  if (Result.isFailure(body)) return corrupt(sessionRow(location, id), body.failure)
  const messages: Array<unknown> = []
  for (const row of rows.messages) {
    const message = Schema.decodeUnknownResult(MessageRow)(row)
    const at = `${location}#condukt_messages/${id}/${messages.length}`
    if (Result.isFailure(message) || message.success.idx !== messages.length) return corrupt(at, `message ${messages.length} is missing`)
    const parsed = parseJson(message.success.body, MESSAGE_ROW)
    if (Result.isFailure(parsed)) return corrupt(at, parsed.failure)
    messages.push(parsed.success)
  }
  if (messages.length !== session.success.length) {
    return corrupt(sessionRow(location, id), `the session has ${session.success.length} messages, ${messages.length} rows were found`)
  }
  const record = typeof body.success === "object" && body.success !== null ? { ...body.success, messages } : body.success
  const snapshot = Snapshot.decode(record, id)
  if (Result.isFailure(snapshot)) {
    return Result.fail(new SessionStoreError({ method: "load", sessionId: id, location: sessionRow(location, id), reason: snapshot.failure }))
  }
  return Result.succeed({ snapshot: snapshot.success, revision: session.success.revision })
}

const unwritableAt = (id: string, at: string) => (error: JsonLimits.JsonLimitError) =>
  new SessionStoreError({ method: "save", sessionId: id, location: at, reason: unwritable(error), cause: error })

/**
 * The session row's body: the snapshot without its messages, as JSON. A value JSON cannot hold (a
 * BigInt, a cycle in the assigns) or a load would refuse (`JsonLimits.stored`) fails the save
 * naming the row, before anything is written.
 */
export const encodeBody = (snapshot: Snapshot.Snapshot, location: string): Result.Result<string, SessionStoreError> => {
  const { messages: _, ...rest } = snapshot
  return Result.mapError(JsonLimits.stringify(rest, JsonLimits.stored), unwritableAt(snapshot.id, sessionRow(location, snapshot.id)))
}

/**
 * The message rows' bodies from index `from` on, or the save's error naming the first message
 * that cannot be written (as `encodeBody`): a store encodes them before its first write.
 */
export const encodeMessages = (
  snapshot: Snapshot.Snapshot,
  from: number,
  location: string
): Result.Result<ReadonlyArray<string>, SessionStoreError> => {
  const bodies: Array<string> = []
  for (let i = from; i < snapshot.messages.length; i++) {
    const body = JsonLimits.stringify(snapshot.messages[i], JsonLimits.stored, MESSAGE_ROW)
    if (Result.isFailure(body)) return Result.fail(unwritableAt(snapshot.id, `${location}#condukt_messages/${snapshot.id}/${i}`)(body.failure))
    bodies.push(body.success)
  }
  return Result.succeed(bodies)
}

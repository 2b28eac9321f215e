/**
 * SessionStoreError — the one error of the SessionStore seam and its reasons: a snapshot or an
 * approval record that is not one (`Corrupt`), a snapshot written by a newer Condukt
 * (`UnsupportedVersion`), a session id the one rule for ids refuses (`InvalidSessionId`, from
 * `SessionId`), a store that cannot be reached or written (`Unavailable`: a read-only directory, a
 * full disk, a locked database), and a save that another writer got to first (`Conflict`). Each names where: the file, or the table and row.
 * `SessionStore` re-exports them all.
 */
import { Effect, Schema } from "effect"
import type { JsonLimitError } from "./JsonLimits.ts"
import { check, InvalidSessionId, show } from "./SessionId.ts"

export { InvalidSessionId } from "./SessionId.ts"

/**
 * What was read is not a snapshot (bad JSON, a truncated file, a field of the wrong type), or not
 * an approval record (`subject`: one in an approval log, or one a save or a put holds that the log
 * cannot keep); the store leaves it as it was.
 *
 * @since 0.1.0
 * @category errors
 */
export class Corrupt extends Schema.TaggedError<Corrupt>()("Corrupt", {
  description: Schema.String,
  /** What is not what it should be: a session snapshot when absent. */
  subject: Schema.optionalKey(Schema.Literals(["approval record"]))
}) {
  override get message() {
    return `not ${this.subject === "approval record" ? "an approval record" : "a session snapshot"} (${this.description})`
  }
}

const causeText = (error: JsonLimitError): string | undefined =>
  error.reason === "NotJson" && error.cause instanceof Error ? error.cause.message.replace(/\s*\n\s*/g, " ") : undefined

/**
 * A save's snapshot that JSON cannot hold (a cycle, a BigInt) or that its store could not read
 * back (`JsonLimits.stored`), from `JsonLimits.stringify`'s error: nothing is written.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unwritable = (error: JsonLimitError, subject?: Corrupt["subject"]): Corrupt =>
  new Corrupt({ description: `it cannot be written as JSON: ${causeText(error) ?? `it holds ${error.description}`}`, ...(subject === undefined ? {} : { subject }) })

/**
 * What a load read is not JSON, or not JSON a store writes (`JsonLimits.stored`), from
 * `JsonLimits.parse`'s error.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unreadable = (error: JsonLimitError, subject?: Corrupt["subject"]): Corrupt =>
  new Corrupt({ description: causeText(error) ?? `it holds ${error.description}`, ...(subject === undefined ? {} : { subject }) })

/**
 * An approval record whose id the approval logs do not keep (`ApprovalLog.isKeptId`), held by a
 * save or a put: nothing is written.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unkeptId = (id: string): Corrupt =>
  new Corrupt({
    subject: "approval record",
    description: `its id ${JSON.stringify(id.slice(0, 200))} is not one a store keeps (1 to 128 lowercase letters, digits, - and _, a letter or a digit first)`
  })

/**
 * The snapshot was written by a newer version of Condukt: reading it could lose what this one does
 * not know, so it is refused and left as it was.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnsupportedVersion extends Schema.TaggedError<UnsupportedVersion>()("UnsupportedVersion", {
  version: Schema.Finite,
  supported: Schema.Finite
}) {
  override get message() {
    return `snapshot version ${this.version} is newer than this Condukt reads (${this.supported}); upgrade to resume it`
  }
}

/**
 * The store could not be read or written: permissions, a read-only file system, a full disk.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unavailable extends Schema.TaggedError<Unavailable>()("Unavailable", { description: Schema.String }) {
  override get message() {
    return this.description
  }
}

/**
 * Another writer (another process, or another store on the same file) saved the session since this
 * store last loaded or saved it: saving would drop that writer's turns, so nothing is written.
 * Resuming the session again (a new start) reads what the other writer saved.
 *
 * @since 0.1.0
 * @category errors
 */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { description: Schema.String }) {
  override get message() {
    return `another writer saved this session since it was last loaded or saved here (${this.description}); nothing was overwritten, start the session again to resume from what it saved`
  }
}

/** @since 0.1.0 @category errors */
export const Reason = Schema.Union([Corrupt, UnsupportedVersion, InvalidSessionId, Unavailable, Conflict])
export type Reason = typeof Reason.Type

/**
 * A store operation failed; `location` is the file, or `file#table/row`, it was about.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionStoreError extends Schema.TaggedError<SessionStoreError>()("SessionStoreError", {
  /** The store's own calls, and its approval log's (`list`, `get`, `answer`, `put`). */
  method: Schema.Literals(["open", "load", "save", "clear", "list", "get", "answer", "put"]),
  sessionId: Schema.String,
  location: Schema.String,
  reason: Reason,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    // An open and the approval log's calls are of no session; any other call names its id, the empty one too (`""`).
    const session = this.sessionId === "" && this.method !== "load" && this.method !== "save" && this.method !== "clear"
      ? ""
      : ` session ${show(this.sessionId)}`
    return `SessionStore.${this.method}:${session} at ${this.location}: ${this.reason.message}`
  }
}

/**
 * Fails `method` on `sessionId` with `InvalidSessionId` when the id rule refuses the id
 * (`SessionId.check`); every store's load, save and clear begins with it, before the id reaches a
 * file name, a row or a map.
 *
 * @since 0.1.0
 * @category guards
 */
export const validId = (method: SessionStoreError["method"], sessionId: string, location: string): Effect.Effect<void, SessionStoreError> => {
  const invalid = check(sessionId)
  return invalid === undefined ? Effect.void : Effect.fail(new SessionStoreError({ method, sessionId, location, reason: invalid }))
}

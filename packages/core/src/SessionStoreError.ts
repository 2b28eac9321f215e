/**
 * SessionStoreError — the one error of the SessionStore seam and its reasons: a snapshot that is
 * not one (`Corrupt`), one written by a newer Condukt (`UnsupportedVersion`), a session id a store
 * refuses to turn into a file name (`InvalidSessionId`), and a store that cannot be reached or
 * written (`Unavailable`: a read-only directory, a full disk, a locked database). Each names where:
 * the file, or the table and row. `SessionStore` re-exports them all.
 */
import { Schema } from "effect"

/**
 * What was read is not a snapshot (bad JSON, a truncated file, a field of the wrong type); the
 * store leaves it as it was.
 *
 * @since 0.1.0
 * @category errors
 */
export class Corrupt extends Schema.TaggedError<Corrupt>()("Corrupt", { description: Schema.String }) {
  override get message() {
    return `not a session snapshot (${this.description})`
  }
}

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
 * A session id the store will not use as a name: it could escape the store's directory (`../x`,
 * `a/b`), is empty, holds a NUL, or is too long.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidSessionId extends Schema.TaggedError<InvalidSessionId>()("InvalidSessionId", {
  description: Schema.String
}) {
  override get message() {
    return `invalid session id (${this.description})`
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

/** @since 0.1.0 @category errors */
export const Reason = Schema.Union([Corrupt, UnsupportedVersion, InvalidSessionId, Unavailable])
export type Reason = typeof Reason.Type

/**
 * A store operation failed; `location` is the file, or `file#table/row`, it was about.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionStoreError extends Schema.TaggedError<SessionStoreError>()("SessionStoreError", {
  method: Schema.Literals(["open", "load", "save", "clear"]),
  sessionId: Schema.String,
  location: Schema.String,
  reason: Reason,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    const session = this.sessionId === "" ? "" : ` session ${this.sessionId}`
    return `SessionStore.${this.method}:${session} at ${this.location}: ${this.reason.message}`
  }
}

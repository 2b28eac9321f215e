/**
 * SessionId — the one rule for session ids, checked wherever an id comes in: every store's load,
 * save and clear, `Session.start`, and every `Sessions.ById` call (in one process or through a
 * cluster, before the id becomes an entity's). An id the rule refuses fails with one typed error,
 * `InvalidSessionId`, saying why; every other id is kept as written, and each store holds it so
 * that it round-trips and never meets another (docs/decisions/0078-one-rule-for-session-ids.md).
 *
 * An id is a key a store keeps and a name a person reads in a log line. Refused: the empty id and
 * one of whitespace only (it reads as no id); one longer than `MAX_LENGTH`; and any character that
 * is not visible text on one line: the control characters (C0, DEL, C1: `node:sqlite` reads TEXT
 * up to a NUL, so a session `alice\0x` read and extended alice's history on the cluster), the line
 * and paragraph separators, the bidirectional controls (U+202E makes `txt.exe` of what is stored
 * as `exe.txt`) and lone surrogates (not text: UTF-8 stores each as U+FFFD, so two such ids would
 * be one). Kept as written: `../x`, `/`, `\`, quotes and `;--`, `%00`, spaces inside or around,
 * letters of any script and case, and both spellings of `é` (one code point, or `e` and U+0301):
 * two ids, never normalized into one.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * The longest id, in UTF-16 code units (`string.length`): effect/cluster keeps a session's entity
 * id in a `VARCHAR(255)` column on Postgres, the narrowest place an id goes. 255 code units are at
 * most 765 bytes of UTF-8, within every store's key (a UUID has 36 characters).
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_LENGTH = 255

/**
 * An id the rule refuses, and why (`description`). The stores fail with it as their error's
 * reason (`SessionStoreError`), `Session.start` as its `SessionError`'s and `Sessions.ById` as its
 * `SessionsError`'s: `Effect.catchReason(…, "InvalidSessionId", …)` reads it the same way on each.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidSessionId extends Schema.TaggedError<InvalidSessionId>()("InvalidSessionId", {
  description: Schema.String
}) {
  override get message() {
    return `invalid session id (${this.description}): an id is 1 to ${MAX_LENGTH} characters of visible text on one line, without control characters, line separators, bidirectional controls or lone surrogates`
  }
}

/** The characters no id holds; `u` reads a lone surrogate as one code point, which `\p{Cs}` matches. */
const REFUSED = /[\p{Cc}\p{Zl}\p{Zp}\p{Bidi_Control}\p{Cs}]/u

const BLANK = /^\p{White_Space}+$/u

const codePoint = (char: string) => `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`

/** What the refused character is, as a person reads it. */
const kind = (char: string): string => {
  if (/\p{Cc}/u.test(char)) return "the control character"
  if (/\p{Zl}/u.test(char)) return "the line separator"
  if (/\p{Zp}/u.test(char)) return "the paragraph separator"
  if (/\p{Bidi_Control}/u.test(char)) return "the bidirectional control"
  return "the lone surrogate"
}

/**
 * Why `id` is not a session id; `undefined` when it is one.
 *
 * @since 0.1.0
 * @category guards
 */
export const check = (id: string): InvalidSessionId | undefined => {
  if (id.length === 0) return new InvalidSessionId({ description: "it is empty" })
  if (id.length > MAX_LENGTH) return new InvalidSessionId({ description: `it has ${id.length} characters, more than ${MAX_LENGTH}` })
  const refused = REFUSED.exec(id)
  if (refused !== null) {
    return new InvalidSessionId({ description: `it holds ${kind(refused[0])} ${codePoint(refused[0])} at index ${refused.index}` })
  }
  if (BLANK.test(id)) return new InvalidSessionId({ description: "it is only whitespace" })
  return undefined
}

/** How much of a refused id an error message shows. */
const SHOWN = 64

/**
 * The id as an error message shows it: as written when the rule takes it; else quoted, each
 * refused character escaped (`"alice\u0000x"`) and cut after 64 characters, so that a message
 * never carries a NUL, a line break or a bidirectional control into a log.
 *
 * @since 0.1.0
 * @category combinators
 */
export const show = (id: string): string => {
  if (check(id) === undefined) return id
  const shown = id.length > SHOWN ? id.slice(0, SHOWN) : id
  const escaped = shown.replace(/[\p{Cc}\p{Zl}\p{Zp}\p{Bidi_Control}\p{Cs}"\\]/gu, (char) =>
    char === "\"" || char === "\\" ? `\\${char}` : `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`)
  return id.length > SHOWN ? `"${escaped}"… (${id.length} characters)` : `"${escaped}"`
}

/**
 * sessionFileName — the name of a disk store's files for a session id: one name per id, so two
 * ids the one rule takes (`SessionId`) never share a file (docs/decisions/0078).
 *
 * The name spells the id's UTF-8 bytes: lowercase ASCII letters, digits, `_`, `-` and `.` (but
 * first) as they are, every other byte as `%XX` in upper-case hex (`Alice` is `%41lice`, `../x`
 * is `%2E.%2Fx`, `%41` is `%2541`). So a name is ASCII (nothing for HFS+ to normalize), never
 * holds `/` nor starts with `.`, and stays one to one where the file system folds case (macOS,
 * Windows): letters kept are lower case, the hex of an escape upper case, `%` always escaped. A
 * name longer than `MAX_NAME` is cut and ends with `~` and the id's SHA-256 (no spelled name holds
 * `~`); the store checks on load that a file's snapshot is the id's.
 */
import { createHash } from "node:crypto"

/**
 * The longest name spelled in full; a longer one is cut to 100 characters and made unique by the
 * id's SHA-256 (165 characters then). With `.json.tmp`, either stays within a name's 255 bytes.
 */
export const MAX_NAME = 200

/** The ASCII bytes a name keeps as they are (`.` but first). */
const KEPT = /^[a-z0-9_.-]$/

/** The ids whose files Condukt 0.1.0 named by the id as written (it refused every other). */
const LEGACY = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/

const encoder = new TextEncoder()

/** The name of the session's files, without their extension; the id is one the rule takes (no lone surrogate). */
export const fileName = (id: string): string => {
  let name = ""
  for (const byte of encoder.encode(id)) {
    const char = String.fromCharCode(byte)
    name += byte < 0x80 && KEPT.test(char) && !(char === "." && name === "") ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  }
  return name.length <= MAX_NAME ? name : `${name.slice(0, 100)}~${createHash("sha256").update(id).digest("hex")}`
}

/** The name Condukt 0.1.0 gave the session's files, when it is not `fileName`'s (the id has capital letters). */
export const legacyName = (id: string): string | undefined => (LEGACY.test(id) && fileName(id) !== id ? id : undefined)

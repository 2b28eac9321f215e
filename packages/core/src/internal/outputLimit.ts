/**
 * outputLimit — the one place that decides how much text a built-in tool may hand the model:
 * the head of the text, at most `MAX_LINES` lines and `MAX_BYTES` UTF-8 bytes (Condukt's limits),
 * and the exec result format shared by Bash and Command.
 *
 * A line is text ended by "\n"; a final "\n" ends the last line rather than starting an empty one,
 * so `seq 1 2000` is 2,000 lines and fits. When the text is cut, whole lines are kept (each counted
 * with its newline) and joined by "\n"; only a first line too long to fit on its own is cut inside,
 * and then on a character boundary, never inside a multi-byte character.
 */

/** @since 0.1.0 @category models */
export const MAX_LINES = 2000

/** @since 0.1.0 @category models */
export const MAX_BYTES = 50 * 1024

/** How much of a text is redacted before the cut: more than the cut can ever keep. */
const REDACT_CHARS = 2 * MAX_BYTES

/** @since 0.1.0 @category models */
export interface Limited {
  readonly text: string
  /** True when the text was cut. */
  readonly truncated: boolean
  /** How many lines `text` holds (a line cut inside counts as one). */
  readonly lines: number
}

/** The UTF-8 size of a string without encoding it (a lone surrogate encodes as U+FFFD, 3 bytes). @since 0.1.0 @category combinators */
export const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4
        i++
      } else bytes += 3
    } else bytes += 3
  }
  return bytes
}

/** The text's lines; a trailing "\n" does not start another line, and "" has none. @since 0.1.0 @category combinators */
export const splitLines = (text: string): Array<string> => {
  if (text === "") return []
  const lines = text.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  return lines
}

/** The longest prefix of `line` within `budget` bytes that ends on a character boundary. */
const cutLine = (line: string, budget: number): string => {
  let bytes = 0
  let end = 0
  for (const char of line) {
    bytes += utf8Length(char)
    if (bytes > budget) break
    end += char.length
  }
  return line.slice(0, end)
}

/**
 * The head of `text` within `MAX_LINES` lines and `MAX_BYTES` bytes; the text itself when it fits.
 *
 * @since 0.1.0
 * @category combinators
 */
export const limitOutput = (raw: string, redact?: (text: string) => string): Limited => {
  if (redact !== undefined) {
    // Only what can be shown is redacted (redaction costs more per character than the cut), and it
    // is redacted before the cut, so a cut never leaves half a secret behind: the head this keeps
    // is twice what the limit can show, so a secret split by this first cut is cut off below.
    if (raw.length <= REDACT_CHARS) return limitOutput(redact(raw))
    const limited = limitOutput(redact(raw.slice(0, REDACT_CHARS)))
    return { ...limited, truncated: true }
  }
  const text = raw
  const lines = splitLines(text)
  if (lines.length <= MAX_LINES && utf8Length(text) <= MAX_BYTES) {
    return { text, truncated: false, lines: lines.length }
  }
  const kept: Array<string> = []
  let used = 0
  for (const line of lines) {
    if (kept.length === MAX_LINES) break
    const cost = utf8Length(line) + 1
    if (used + cost > MAX_BYTES) break
    kept.push(line)
    used += cost
  }
  if (kept.length === 0) {
    // One huge first line (minified code, a blob): show its start rather than nothing.
    return { text: cutLine(lines[0] ?? "", MAX_BYTES), truncated: true, lines: 1 }
  }
  return { text: kept.join("\n"), truncated: true, lines: kept.length }
}

/**
 * Condukt's exec result text: the output (limited), then `(output truncated)` when the limit or
 * the sandbox's byte cap cut it, then `notice` (a limit the sandbox stopped the command at, a
 * timeout), then `(exit code: N)` when non-zero; present parts joined by one blank line. The
 * notes come after whatever the limit kept, so no output, however long, can push them out of
 * view. The output is returned as is when it stands alone; when a note follows, its final newline
 * is dropped so that exactly one blank line separates them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const formatExecResult = (
  output: string,
  exitCode: number | undefined,
  truncated: boolean,
  notice?: string | undefined,
  redact?: (text: string) => string
): string => {
  const limited = limitOutput(output, redact)
  const notes = [
    limited.truncated || truncated ? "(output truncated)" : "",
    notice ?? "",
    exitCode === undefined || exitCode === 0 ? "" : `(exit code: ${exitCode})`
  ].filter((note) => note !== "")
  if (notes.length === 0) return limited.text
  const text = limited.text.endsWith("\n") ? limited.text.slice(0, -1) : limited.text
  return [text, ...notes].filter((part) => part !== "").join("\n\n")
}

/**
 * lineWindow — Read's one pass over a file's bytes: it counts every line and keeps only the bytes
 * of the window of lines asked for, never more than `KEEP_BYTES`, so a 400 MB file costs a few
 * chunks of memory and no string bigger than what the model is shown.
 *
 * Lines are counted on bytes: "\n" (0x0A) never occurs inside a multi-byte UTF-8 character, so the
 * count is the text's count without decoding anything. A final "\n" ends the last line rather than
 * starting another (outputLimit's rule). What is kept starts on a line boundary; when the byte cap
 * cuts it, the end is moved back to a character boundary so that it decodes.
 */
import { MAX_BYTES } from "./outputLimit.ts"

/**
 * The most bytes of a window kept: one more than the output limit can show (so the limit still
 * sees that it must cut) plus the 3 a cut character can take.
 */
export const KEEP_BYTES = MAX_BYTES + 4

/** @since 0.1.0 @category models */
export interface Window {
  /** Lines in the whole file. */
  readonly lines: number
  /** Bytes in the whole file. */
  readonly bytes: number
  /** The window's bytes from its first line on, ending on a character boundary. */
  readonly kept: Uint8Array
  /** True when `KEEP_BYTES` stopped the keeping before the window's end. */
  readonly cut: boolean
}

/** @since 0.1.0 @category models */
export interface Scanner {
  readonly feed: (chunk: Uint8Array) => void
  readonly done: () => Window
}

const NEWLINE = 0x0a

/** `bytes` without a final character that is incomplete. */
const toCharBoundary = (bytes: Uint8Array): Uint8Array => {
  let lead = bytes.length - 1
  while (lead > 0 && (bytes[lead]! & 0xc0) === 0x80) lead--
  const first = bytes[lead] ?? 0
  const length = first < 0x80 ? 1 : first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : 2
  return lead + length > bytes.length ? bytes.subarray(0, lead) : bytes
}

/**
 * A scanner for the window of at most `maxLines` lines starting at line `from` (1-based).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (from: number, maxLines: number): Scanner => {
  // The window runs from just after newline number `startAt` to just after newline number `endAt`.
  const startAt = from - 1
  const endAt = startAt + maxLines
  let newlines = 0
  let size = 0
  let last = NEWLINE
  let windowStart: number | undefined = startAt === 0 ? 0 : undefined
  let windowEnd: number | undefined
  const kept: Array<Uint8Array> = []
  let keptBytes = 0

  const keep = (chunk: Uint8Array, base: number) => {
    if (windowStart === undefined) return
    const start = Math.max(windowStart, base) - base
    const end = Math.min(windowEnd ?? Infinity, windowStart + KEEP_BYTES, base + chunk.length) - base
    if (end > start) {
      kept.push(chunk.subarray(start, end))
      keptBytes += end - start
    }
  }

  return {
    feed: (chunk) => {
      if (chunk.length === 0) return
      const base = size
      for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, i + 1)) {
        newlines++
        if (newlines === startAt) windowStart = base + i + 1
        if (newlines === endAt) windowEnd = base + i + 1
      }
      keep(chunk, base)
      size += chunk.length
      last = chunk[chunk.length - 1]!
    },
    done: () => {
      const bytes = new Uint8Array(keptBytes)
      let at = 0
      for (const part of kept) {
        bytes.set(part, at)
        at += part.length
      }
      const cut = windowStart !== undefined && (windowEnd ?? size) - windowStart > KEEP_BYTES
      return {
        lines: newlines + (size > 0 && last !== NEWLINE ? 1 : 0),
        bytes: size,
        kept: cut ? toCharBoundary(bytes) : bytes,
        cut
      }
    }
  }
}

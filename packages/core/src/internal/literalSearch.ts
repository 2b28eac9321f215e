/**
 * literalSearch — finds a regex's literal text in raw bytes, so that `grepFiles` rejects most files
 * without decoding them.
 *
 * Node's `Buffer.indexOf` stops at every occurrence of the needle's first byte before comparing
 * the rest, so a needle starting with a common byte (`c` of `createContext`) crawls (2 GB/s here)
 * while one starting with a rare byte (`C` of `Context`) runs at twice that speed. The needle is
 * therefore the tail of the literal from its rarest byte on (at least 4 bytes long, as short
 * needles hit too often), and each hit checks the bytes before it.
 */

/** A literal split at its rarest byte: `tail` is searched for, `head` must precede it. */
export interface Needle {
  readonly head: Buffer
  readonly tail: Buffer
  readonly length: number
}

/**
 * Printable ASCII, tab and line breaks from most to least frequent, measured over the text files of
 * this repository's node_modules (64 KiB per file, source maps excluded); other bytes rank rarest.
 */
const byteFrequencyOrder =
  " et_sniroa\ncSdlEp*f()uhOTARm,CNIPLky.g0/bDMx#v\";X1=FUGB:w5K`9-2{}>HYV@3<4\t[]q'8|\\6QW7jzJ?&Z!+$%^~\r"

const rarity = (byte: number): number => {
  const rank = byteFrequencyOrder.indexOf(String.fromCharCode(byte))
  return rank === -1 ? byteFrequencyOrder.length : rank
}

const minimumTail = 4
const maximumLiteral = 4096

/**
 * The literal a pattern matches, when it is one: no regex syntax (escaped punctuation allowed).
 * Case-insensitive patterns have no single literal.
 */
export const literalOf = (pattern: string): string | undefined => {
  let out = ""
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!
    if (char === "\\") {
      const next = pattern[i + 1]
      if (next === undefined || /[0-9A-Za-z]/.test(next)) return undefined
      out += next
      i++
    } else if ("^$.|?*+()[]{}".includes(char)) return undefined
    else out += char
  }
  // Undecodable bytes become U+FFFD in the text, which the raw bytes do not contain; a literal
  // longer than a read chunk could not be found in one.
  return out.length === 0 || out.length > maximumLiteral || out.includes("\uFFFD") ? undefined : out
}

/** Splits `literal` at its rarest byte. */
export const make = (literal: string): Needle => {
  const bytes = Buffer.from(literal, "utf8")
  let split = 0
  for (let i = 1; i <= bytes.length - Math.min(minimumTail, bytes.length); i++) {
    if (rarity(bytes[i]!) > rarity(bytes[split]!)) split = i
  }
  return { head: bytes.subarray(0, split), tail: bytes.subarray(split), length: bytes.length }
}

/** Whether `chunk` holds the whole literal. */
export const occursIn = (chunk: Buffer, needle: Needle): boolean => {
  const headLength = needle.head.length
  for (let at = chunk.indexOf(needle.tail, headLength); at !== -1; at = chunk.indexOf(needle.tail, at + 1)) {
    if (headLength === 0 || needle.head.compare(chunk, at - headLength, at) === 0) return true
  }
  return false
}

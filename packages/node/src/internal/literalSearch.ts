/**
 * literalSearch — finds a regex's literal text in raw bytes, so that `grepFiles` rejects most files
 * without decoding them or running RE2 over them (RE2 in JavaScript matches at 40–190 MB/s here,
 * `Buffer.indexOf` at 2–4 GB/s: docs/decisions/0008).
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

/** How rare `byte` is in source text: higher is rarer. */
export const rarity = (byte: number): number => {
  const rank = byteFrequencyOrder.indexOf(String.fromCharCode(byte))
  return rank === -1 ? byteFrequencyOrder.length : rank
}

const minimumTail = 4
const maximumLiteral = 4096

const quantifier = /^\{\d+(,\d*)?\}/

/** Where the class `[` opened at `start` closes: a leading `]` is literal, `[:name:]` nests. */
const classClosing = (pattern: string, start: number): number => {
  let i = start + 1
  if (pattern[i] === "^") i++
  if (pattern[i] === "]") i++
  for (; i < pattern.length; i++) {
    const char = pattern[i]
    if (char === "\\") i++
    else if (char === "[" && pattern[i + 1] === ":") {
      const end = pattern.indexOf(":]", i + 2)
      if (end !== -1) i = end + 1
    } else if (char === "]") return i
  }
  return pattern.length
}

/** Where the group `(` or class `[` opened at `start` closes, escapes and inner classes honoured. */
export const closing = (pattern: string, start: number): number => {
  if (pattern[start] === "[") return classClosing(pattern, start)
  let depth = 0
  for (let i = start; i < pattern.length; i++) {
    const char = pattern[i]
    if (char === "\\") i++
    else if (char === "[") i = classClosing(pattern, i)
    else if (char === "(") depth++
    else if (char === ")" && --depth === 0) return i
  }
  return pattern.length
}

/**
 * The longest run of literal text that every match of a case-sensitive RE2 `pattern` contains,
 * read conservatively: a top-level `|`, a group setting flags (`(?i)`), or an escape it does not
 * know (`\x`, `\p`, `\Q`, `\z`), gives up; groups, classes and quantified atoms end a run.
 */
export const literalOf = (pattern: string): string | undefined => {
  const runs: Array<string> = []
  let run = ""
  let exact = true
  let lastAtom = ""
  let afterQuantifier = false
  const cut = () => {
    if (run.length > 0) runs.push(run)
    run = ""
    lastAtom = ""
  }
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!
    const quantified = "*+?".includes(char) ? char : char === "{" ? quantifier.exec(pattern.slice(i))?.[0] : undefined
    if (quantified !== undefined) {
      exact = false
      if (afterQuantifier && char === "?") continue
      // The atom before a quantifier may occur zero times (`*`, `?`, `{0,…}`) or repeat.
      if (lastAtom !== "" && !(quantified === "+" || /^\{[1-9]/.test(quantified))) run = run.slice(0, -lastAtom.length)
      cut()
      afterQuantifier = true
      i += quantified.length - 1
      continue
    }
    afterQuantifier = false
    if (char === "|") return undefined
    if (char === "\\") {
      const next = pattern[i + 1]
      if (next === undefined) return undefined
      i++
      if ("dDwWsSbBnrtfv".includes(next)) {
        exact = false
        cut()
      } else if (/[0-9A-Za-z]/.test(next)) return undefined
      else {
        run += next
        lastAtom = next
      }
    } else if (char === "(" || char === "[") {
      // `(?i)` and `(?i:…)` change what the text around them matches; only `(?:` and names are plain.
      if (char === "(" && pattern[i + 1] === "?" && !/^\(\?(:|P?<[A-Za-z_])/.test(pattern.slice(i, i + 5))) return undefined
      exact = false
      cut()
      i = closing(pattern, i)
    } else if (".^$".includes(char)) {
      exact = false
      cut()
    } else {
      const atom = String.fromCodePoint(pattern.codePointAt(i)!)
      run += atom
      lastAtom = atom
      i += atom.length - 1
    }
  }
  cut()
  const text = runs.reduce((longest, r) => r.length > longest.length ? r : longest, "")
  // Undecodable bytes become U+FFFD in the text, which the raw bytes do not contain; a literal
  // longer than a read chunk could not be found in one; a short one, unless it is the whole
  // pattern, proposes so many lines that decoding the file whole is cheaper.
  if (text.includes("\uFFFD") || text.length > maximumLiteral || text.length < (exact ? 1 : 3)) return undefined
  return text
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

/** Where the whole literal first occurs in `bytes` at or after `from`, or -1. */
export const indexIn = (bytes: Buffer, needle: Needle, from: number): number => {
  const headLength = needle.head.length
  for (
    let at = bytes.indexOf(needle.tail, from + headLength);
    at !== -1;
    at = bytes.indexOf(needle.tail, at + 1)
  ) {
    if (headLength === 0 || needle.head.compare(bytes, at - headLength, at) === 0) return at - headLength
  }
  return -1
}

/** An alternative of plain text: word characters, spaces and a few safe punctuation marks. */
const plainAlternative = /^[\w -]{3,}$/

/**
 * Texts one of which every match of a case-sensitive RE2 `pattern` contains: its required literal
 * (`literalOf`), or, for a top-level alternation of plain words (`useEffect|forwardRef`), each word.
 */
export const requiredOf = (pattern: string): ReadonlyArray<string> | undefined => {
  const literal = literalOf(pattern)
  if (literal !== undefined) return [literal]
  const alternatives = pattern.split("|")
  return alternatives.length > 1 && alternatives.length <= 16 && alternatives.every((a) => plainAlternative.test(a))
    ? alternatives
    : undefined
}

/** Where the first of `needles` first occurs in `bytes` at or after `from`, or -1. */
export const indexInAny = (bytes: Buffer, needles: ReadonlyArray<Needle>, from: number): number => {
  let first = -1
  for (const needle of needles) {
    // Only the part before the best hit so far can hold an earlier one.
    const at = indexIn(first === -1 ? bytes : bytes.subarray(0, first + needle.length - 1), needle, from)
    if (at !== -1 && (first === -1 || at < first)) first = at
  }
  return first
}

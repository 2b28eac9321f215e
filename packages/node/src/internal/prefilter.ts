/**
 * prefilter — what every match of a grep pattern contains, searched for in raw bytes, so that
 * `grepFiles` hands RE2 (40–190 MB/s in JavaScript) only the lines that can match, and skips RE2
 * altogether when the pattern is nothing but that text (docs/decisions/0008).
 *
 * Three searches, tried in order:
 * - a case-sensitive literal, or each word of a plain alternation (`literalSearch.ts`);
 * - a case-insensitive literal: the chunk decoded as Latin-1 (one character per byte, so offsets
 *   stay byte offsets) and lowercased by V8, then `indexOf` of the lowercased literal. Only ASCII
 *   other than `k` and `s` is used: RE2 folds `k` with U+212A (Kelvin) and `s` with U+017F (long s),
 *   which are not ASCII bytes, and folds no other non-ASCII character onto ASCII;
 * - a run of byte classes (`[0-9]{4}-[0-9]{2}`): its rarest single byte is searched for with
 *   `Buffer.indexOf`, and the classes around each hit are checked byte by byte.
 *
 * It refuses what it cannot read for certain (a top-level `|` of non-words, flag groups, `\p`,
 * `\Q`, classes holding non-ASCII or negated): those patterns get no prefilter and RE2 sees every
 * line. Every search is a bounded number of passes over the bytes, so linear in them.
 */
import * as LiteralSearch from "./literalSearch.ts"

/**
 * Candidate positions in a buffer. A candidate lies on a line that may match; none is missed.
 *
 * @since 0.1.0
 * @category models
 */
export interface Prefilter {
  /** The bytes a candidate spans, at most, minus one: how far reads must overlap not to miss one. */
  readonly overlap: number
  /** Every candidate is a match (the pattern is exactly the searched text), so RE2 may be skipped. */
  readonly exact: boolean
  /** A search of `bytes`: where the first candidate at or after `from` starts, or -1. */
  readonly over: (bytes: Buffer) => (from: number) => number
}

/** A set of bytes, one flag per byte value. */
type ByteSet = Uint8Array

/** The byte classes every match contains in a row, and whether the pattern is nothing more. */
interface Runs {
  readonly runs: ReadonlyArray<ReadonlyArray<ByteSet>>
  readonly exact: boolean
}

const maximumRun = 64
const minimumRun = 3

const byteSet = (codes: Iterable<number>): ByteSet => {
  const set = new Uint8Array(256)
  for (const code of codes) set[code] = 1
  return set
}
const range = (from: number, to: number): Array<number> => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const digits = range(48, 57)
const word = [...digits, ...range(65, 90), ...range(97, 122), 95]
const escapedBytes: Record<string, ReadonlyArray<number>> = { d: digits, w: word, t: [9], f: [12], v: [11] }

const isPunctuation = (char: string): boolean => /^[!-/:-@[-`{-~ ]$/.test(char)

/** The bytes of a simple ASCII class body (`0-9a-f_.`), or undefined for anything else. */
const classBytes = (body: string): Array<number> | undefined => {
  if (body === "" || body[0] === "^" || body[0] === "]" || body.includes("[:")) return undefined
  const bytes: Array<number> = []
  const single = (i: number): [Array<number>, number] | undefined => {
    const char = body[i]!
    if (char !== "\\") return char.charCodeAt(0) < 128 ? [[char.charCodeAt(0)], i + 1] : undefined
    const next = body[i + 1] ?? ""
    if (isPunctuation(next)) return [[next.charCodeAt(0)], i + 2]
    const escaped = escapedBytes[next]
    return escaped === undefined ? undefined : [[...escaped], i + 2]
  }
  for (let i = 0; i < body.length;) {
    const low = single(i)
    if (low === undefined) return undefined
    if (body[low[1]] === "-" && low[1] + 1 < body.length && low[0].length === 1) {
      const high = single(low[1] + 1)
      if (high === undefined || high[0].length !== 1 || high[0][0]! < low[0][0]!) return undefined
      bytes.push(...range(low[0][0]!, high[0][0]!))
      i = high[1]
    } else {
      bytes.push(...low[0])
      i = low[1]
    }
  }
  // Line breaks never occur inside a line; a class admitting one is left to RE2.
  return bytes.includes(10) || bytes.includes(13) ? undefined : bytes
}

const quantifier = /^(?:[*+?]|\{(\d+)(?:(,)(\d*))?\})/

/**
 * The runs of byte classes every match of a case-sensitive RE2 `pattern` contains, or undefined
 * when the pattern holds something this reading does not know. Quantified atoms end a run (`x+`
 * and `x{2,}` keep their required copies at both ends), groups, `.`, anchors and non-ASCII classes
 * end it; `exact` says the pattern is one run and nothing else.
 */
export const runsOf = (pattern: string): Runs | undefined => {
  const runs: Array<Array<ByteSet>> = []
  let run: Array<ByteSet> = []
  let atom: Array<ByteSet> | undefined
  let exact = true
  const cut = (next: Array<ByteSet> = []) => {
    if (run.length > 0) runs.push(run)
    run = next
    atom = undefined
    exact = false
  }
  const push = (sets: Array<ByteSet>) => {
    if (run.length + sets.length > maximumRun) cut()
    run.push(...sets)
    atom = sets
  }
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!
    const quantified = quantifier.exec(pattern.slice(i))
    if (quantified !== null) {
      i += quantified[0].length - 1
      if (pattern[i + 1] === "?") i++
      const min = quantified[0] === "+" ? 1 : quantified[1] === undefined ? 0 : Number(quantified[1])
      const fixed = quantified[1] !== undefined && (quantified[2] === undefined || quantified[3] === quantified[1])
      const repeated = atom
      if (repeated === undefined || min === 0) {
        if (repeated !== undefined) run.length -= repeated.length
        cut()
        continue
      }
      const copies = Array.from({ length: Math.min(min, maximumRun) - 1 }, () => repeated).flat()
      push(copies)
      if (min > maximumRun) cut()
      if (!fixed) cut(Array.from({ length: Math.min(min, maximumRun) }, () => repeated).flat())
      atom = undefined
      continue
    }
    if (char === "|") return undefined
    if (char === "\\") {
      const next = pattern[i + 1] ?? ""
      i++
      const escaped = escapedBytes[next]
      if (isPunctuation(next)) push([byteSet([next.charCodeAt(0)])])
      else if (escaped !== undefined) push([byteSet(escaped)])
      else if ("bBAznrsSDW".includes(next)) cut()
      else return undefined
    } else if (char === "[") {
      const end = LiteralSearch.closing(pattern, i)
      const bytes = classBytes(pattern.slice(i + 1, end))
      i = end
      if (bytes === undefined) cut()
      else push([byteSet(bytes)])
    } else if (char === "(") {
      if (pattern[i + 1] === "?" && !/^\(\?(:|P?<[A-Za-z_])/.test(pattern.slice(i, i + 5))) return undefined
      cut()
      i = LiteralSearch.closing(pattern, i)
    } else if (".^$".includes(char)) {
      cut()
    } else {
      const atomText = String.fromCodePoint(pattern.codePointAt(i)!)
      i += atomText.length - 1
      // Undecodable bytes read as U+FFFD, which the raw bytes do not hold; decoded text never
      // holds a lone surrogate, which UTF-8 encoding would turn into U+FFFD's bytes.
      if (char === "\n" || char === "\r" || /^[\uD800-\uDFFF\uFFFD]$/.test(atomText)) cut()
      else push([...Buffer.from(atomText, "utf8")].map((byte) => byteSet([byte])))
    }
  }
  if (run.length > 0) runs.push(run)
  return { runs, exact: exact && runs.length === 1 }
}

const members = (set: ByteSet): Array<number> => range(0, 255).filter((byte) => set[byte] === 1)

/** Each of `needles` searched for with `Buffer.indexOf` from its rarest byte on. */
const literals = (needles: ReadonlyArray<LiteralSearch.Needle>, exact: boolean): Prefilter => ({
  overlap: Math.max(...needles.map((needle) => needle.length)) - 1,
  exact,
  over: (bytes) => (from) => LiteralSearch.indexInAny(bytes, needles, from)
})

/** Each of `words` (lowercase ASCII that folds to ASCII only) in the lowercased Latin-1 text. */
const folded = (words: ReadonlyArray<string>, exact: boolean): Prefilter => ({
  overlap: Math.max(...words.map((text) => text.length)) - 1,
  exact,
  over: (bytes) => {
    const text = bytes.toString("latin1").toLowerCase()
    // Each word's next hit is kept, so that asking again from a later line never searches twice.
    const next = words.map(() => -2)
    return (from) => {
      let first = -1
      words.forEach((wanted, k) => {
        if (next[k] !== -1 && next[k]! < from) next[k] = text.indexOf(wanted, from)
        const at = next[k]!
        if (at !== -1 && (first === -1 || at < first)) first = at
      })
      return first
    }
  }
})

/** `run` found by its rarest single byte (`anchor`), the other classes checked around each hit. */
const classes = (run: ReadonlyArray<ByteSet>, anchor: number, exact: boolean): Prefilter => {
  const anchorByte = members(run[anchor]!)[0]!
  return {
    overlap: run.length - 1,
    exact,
    over: (bytes) => (from) => {
      for (let at = bytes.indexOf(anchorByte, from + anchor); at !== -1; at = bytes.indexOf(anchorByte, at + 1)) {
        const start = at - anchor
        if (start + run.length > bytes.length) return -1
        let k = 0
        while (k < run.length && run[k]![bytes[start + k]!] === 1) k++
        if (k === run.length) return start
      }
      return -1
    }
  }
}

/** The run with the rarest single byte to search for, and where that byte is in it. */
const bestRun = (shape: Runs): [ReadonlyArray<ByteSet>, number] | undefined => {
  let best: [ReadonlyArray<ByteSet>, number, number] | undefined
  for (const run of shape.runs) {
    if (run.length < minimumRun && !shape.exact) continue
    run.forEach((set, k) => {
      const only = members(set)
      if (only.length !== 1) return
      const rarity = LiteralSearch.rarity(only[0]!)
      if (best === undefined || rarity > best[2] || (rarity === best[2] && run.length > best[0].length)) {
        best = [run, k, rarity]
      }
    })
  }
  return best === undefined ? undefined : [best[0], best[1]]
}

/** The longest part of `text` that RE2 folds onto ASCII alone: ASCII without `k` and `s`. */
const foldablePart = (text: string): string =>
  text.split(/[^\x00-\x7f]|[kKsS]/).reduce((longest, part) => part.length > longest.length ? part : longest, "")

/** Whether `literal` is the whole of a pattern read as `shape`. */
const isWhole = (shape: Runs | undefined, literal: string): boolean =>
  shape !== undefined && shape.exact && shape.runs[0]!.length === Buffer.byteLength(literal, "utf8")

/**
 * The prefilter for `pattern`, or undefined when none is known to be safe.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (pattern: string, caseSensitive: boolean): Prefilter | undefined => {
  // A leading `(?i)` is the same as asking for a case-insensitive search of the rest.
  if (caseSensitive && pattern.startsWith("(?i)")) return make(pattern.slice(4), false)
  const shape = runsOf(pattern)
  const required = LiteralSearch.requiredOf(pattern)
  // A plain alternation's words are the whole pattern; a single literal may be only part of it.
  const exactly = (texts: ReadonlyArray<string>) => texts.length > 1 || isWhole(shape, texts[0]!)
  if (caseSensitive) {
    if (required !== undefined) return literals(required.map(LiteralSearch.make), exactly(required))
    const found = shape === undefined ? undefined : bestRun(shape)
    return found === undefined ? undefined : classes(found[0], found[1], shape!.exact)
  }
  if (required === undefined) return undefined
  const parts = required.map(foldablePart)
  const whole = parts.every((part, k) => part === required[k]) && exactly(required)
  if (parts.some((part) => part.length < minimumRun && !whole)) return undefined
  return folded(parts.map((part) => part.toLowerCase()), whole)
}

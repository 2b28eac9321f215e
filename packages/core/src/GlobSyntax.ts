/**
 * GlobSyntax — how a glob pattern is read: braces expanded into alternatives (at most 256, counted
 * before any is generated), each alternative cut into path segments, each segment a literal name,
 * `**`, or a test of one name compiled to RE2 (re2js), so a test runs in time linear in the name.
 *
 * RE2 has no lookahead, so a `!(…)` group is tried at each split of the name (quadratic, never
 * worse), one per segment and not nested. Everything refused is said in a phrase the caller puts
 * after "Invalid pattern <p>: ". What the dialect means, and the automaton that walks the
 * segments, are `GlobPattern`'s; this module only reads.
 */
import { Result } from "effect"
import { RE2JS } from "re2js"

const maxAlternatives = 256

/** Bounds the compiled source: each `!(…)` repeats the rest of its name, so it can double. */
const maxSourceLength = 65536

/**
 * A segment that matches any number of directories, none included.
 *
 * @since 0.1.0
 * @category models
 */
export const globstar = "**"

/**
 * A segment that matches one name.
 *
 * @since 0.1.0
 * @category models
 */
export interface Name {
  /** The name itself when the segment has no wildcard: compared, and usable as a `base`. */
  readonly literal: string | undefined
  readonly test: (name: string) => boolean
}

/** @since 0.1.0 @category models */
export type Segment = Name | typeof globstar

// minimatch's classes (what `path.matchesGlob` reads); `graph` and `print`, negations there, are not.
const posixClasses = new Map([
  ["alnum", "\\p{L}\\p{Nl}\\p{Nd}"],
  ["alpha", "\\p{L}\\p{Nl}"],
  ["ascii", "\\x00-\\x7f"],
  ["blank", "\\p{Zs}\\t"],
  ["cntrl", "\\p{Cc}"],
  ["digit", "\\p{Nd}"],
  ["lower", "\\p{Ll}"],
  ["punct", "\\p{P}"],
  ["space", "\\p{Z}\\t\\r\\n\\v\\f"],
  ["upper", "\\p{Lu}"],
  ["word", "\\p{L}\\p{Nl}\\p{Nd}\\p{Pc}"],
  ["xdigit", "A-Fa-f0-9"]
])

const quantifiers = new Map([["@", ""], ["?", "?"], ["*", "*"], ["+", "+"]])

const escapeRegExp = (char: string): string => /[\\^$.*+?()[\]{}|/]/.test(char) ? "\\" + char : char

const escapeClassMember = (char: string): string => /[\\\]^[-]/.test(char) ? "\\" + char : char

const numericRange = /^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$/
const letterRange = /^([a-zA-Z])\.\.([a-zA-Z])(?:\.\.(-?\d+))?$/

/** The members of `{from..to..step}`; `undefined` when `body` is no range, "too many" past the cap. */
const rangeOf = (body: string): ReadonlyArray<string> | "too many" | undefined => {
  const numeric = numericRange.exec(body)
  const match = numeric ?? letterRange.exec(body)
  if (match === null) return undefined
  const [from, to] = numeric === null
    ? [match[1]!.charCodeAt(0), match[2]!.charCodeAt(0)]
    : [Number(match[1]), Number(match[2])]
  const step = Math.abs(Number(match[3] ?? 1)) || 1
  if (Math.floor(Math.abs(to - from) / step) + 1 > maxAlternatives) return "too many"
  // `{01..10}` pads to the wider bound, as bash and Node do.
  const width = numeric !== null && [match[1]!, match[2]!].some((bound) => /^-?0\d/.test(bound))
    ? Math.max(match[1]!.length, match[2]!.length)
    : 0
  const show = (n: number): string =>
    numeric === null
      ? String.fromCharCode(n)
      : (n < 0 ? "-" : "") + String(Math.abs(n)).padStart(width - (n < 0 ? 1 : 0), "0")
  const members: Array<string> = []
  for (let n = from; from <= to ? n <= to : n >= to; n += from <= to ? step : -step) members.push(show(n))
  return members
}

/** Expands braces (nested, and ranges); `undefined` when there would be more than `maxAlternatives`. */
const expandBraces = (pattern: string): Array<string> | undefined => {
  let depth = 0
  let open = -1
  const commas: Array<number> = []
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]
    if (char === "\\") i++
    else if (char === "{") {
      if (depth++ === 0) open = i
    } else if (char === "," && depth === 1) commas.push(i)
    else if (char === "}" && depth > 0 && --depth === 0) {
      let members: ReadonlyArray<string>
      if (commas.length > 0) {
        const bounds = [open, ...commas, i]
        members = bounds.slice(1).map((end, k) => pattern.slice(bounds[k]! + 1, end))
      } else {
        const range = rangeOf(pattern.slice(open + 1, i))
        if (range === "too many") return undefined
        // `{x}` is literal, as in fast-glob; look for the next group.
        if (range === undefined) continue
        members = range
      }
      const out: Array<string> = []
      for (const member of members) {
        const expanded = expandBraces(pattern.slice(0, open) + member + pattern.slice(i + 1))
        if (expanded === undefined) return undefined
        out.push(...expanded)
        if (out.length > maxAlternatives) return undefined
      }
      return out
    }
  }
  return [pattern]
}

/** The `]` closing the class opened at `open`, with the class's source; `undefined` if unclosed. */
const characterClass = (text: string, open: number): { readonly source: string; readonly end: number } | undefined => {
  let i = open + 1
  const negated = text[i] === "!" || text[i] === "^"
  if (negated) i++
  let members = ""
  // The first member may be a literal `]`.
  for (const first = i; i < text.length; i++) {
    const char = text[i]!
    if (char === "]" && i > first) return { source: negated ? `[^/${members}]` : `[${members}]`, end: i }
    if (char === "[" && text[i + 1] === ":") {
      const close = text.indexOf(":]", i + 2)
      const posix = close === -1 ? undefined : posixClasses.get(text.slice(i + 2, close))
      if (posix !== undefined) {
        members += posix
        i = close + 1
        continue
      }
    }
    if (char === "\\" && i + 1 < text.length) members += escapeClassMember(text[++i]!)
    else members += char === "-" ? char : escapeClassMember(char)
  }
  return undefined
}

/** The `)` closing the group opened at `open`, nested groups and escapes skipped. */
const closingParen = (text: string, open: number): number | undefined => {
  let depth = 0
  for (let i = open; i < text.length; i++) {
    if (text[i] === "\\") i++
    else if (text[i] === "(") depth++
    else if (text[i] === ")" && --depth === 0) return i
  }
  return undefined
}

/** Splits an extglob's body at its top-level `|`. */
const splitAlternatives = (body: string): Array<string> => {
  const out: Array<string> = []
  let depth = 0
  let start = 0
  for (let i = 0; i < body.length; i++) {
    if (body[i] === "\\") i++
    else if (body[i] === "(") depth++
    else if (body[i] === ")") depth--
    else if (body[i] === "|" && depth === 0) {
      out.push(body.slice(start, i))
      start = i + 1
    }
  }
  out.push(body.slice(start))
  return out
}

type Token = string | { readonly negated: string }

interface Translation {
  /** RE2 sources, and at most one `!(…)` group (its alternatives' source). */
  readonly tokens: ReadonlyArray<Token>
  /** The unescaped text when there is no wildcard. */
  readonly literal: string | undefined
}

/**
 * A reason to refuse the pattern, as the model reads it after "Invalid pattern <p>: ".
 *
 * @since 0.1.0
 * @category models
 */
export type Refusal = string

const tooLarge: Refusal = "the pattern is too large"
const oneNegation: Refusal = "a path segment may hold one !(…) group, not inside another group"

/** The RE2 source of `text`, a segment or part of one, as tokens; or why it cannot be matched. */
const translate = (text: string, nested: boolean): Translation | Refusal => {
  const tokens: Array<Token> = []
  let literal = ""
  let magic = false
  let size = 0
  const push = (token: Token) => {
    tokens.push(token)
    size += typeof token === "string" ? token.length : token.negated.length
  }
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!
    const close = text[i + 1] === "(" && "!@?*+".includes(char) ? closingParen(text, i + 1) : undefined
    const klass = close === undefined && char === "[" ? characterClass(text, i) : undefined
    if (close !== undefined) {
      if (char === "!" && (nested || tokens.some((token) => typeof token !== "string"))) return oneNegation
      const alternatives: Array<string> = []
      for (const alternative of splitAlternatives(text.slice(i + 2, close))) {
        const inner = translate(alternative, true)
        if (typeof inner === "string") return inner
        alternatives.push(inner.tokens.join(""))
      }
      const group = alternatives.join("|")
      push(char === "!" ? { negated: group } : `(?:${group})${quantifiers.get(char)}`)
      magic = true
      i = close
    } else if (char === "\\" && i + 1 < text.length) {
      literal += text[++i]
      push(escapeRegExp(text[i]!))
    } else if (char === "*") {
      magic = true
      // A run of stars is one star.
      if (tokens.at(-1) !== "[^/]*") push("[^/]*")
    } else if (char === "?") {
      magic = true
      push("[^/]")
    } else if (klass !== undefined) {
      magic = true
      push(klass.source)
      i = klass.end
    } else {
      literal += char
      push(escapeRegExp(char))
    }
    if (size > maxSourceLength) return tooLarge
  }
  return { tokens, literal: magic ? undefined : literal }
}

/** RE2 (linear time, re2js) for a whole name; the failure is RE2's reason without its preamble. */
const exact = (source: string): Result.Result<(name: string) => boolean, Refusal> =>
  Result.try({
    try: () => {
      const compiled = RE2JS.compile(source)
      return (name: string) => compiled.testExact(name)
    },
    // re2js words it "error parsing regexp: <reason>: `<fragment>`"; the source is ours, not the caller's.
    catch: (error) =>
      (error instanceof Error ? error.message : String(error)).replace(/^error parsing regexp: /, "").replace(/: `[\s\S]*`$/, "")
  })

/**
 * The test for one name. Without `!(…)` it is one RE2 program. With one, Node's reading of
 * `x!(g)y` is: some split of the name has its head matching `x`, and its tail matching `*y` but
 * not `(g)y`; the splits are tried one by one, so a name of n characters costs O(n²), never more.
 */
const nameTest = (tokens: ReadonlyArray<Token>): Result.Result<(name: string) => boolean, Refusal> => {
  const at = tokens.findIndex((token) => typeof token !== "string")
  if (at === -1) return exact(tokens.join(""))
  const rest = tokens.slice(at + 1).join("")
  const negated = tokens[at] as { readonly negated: string }
  return Result.flatMap(exact(tokens.slice(0, at).join("")), (head) =>
    Result.flatMap(exact(`(?:${negated.negated})${rest}`), (refused) =>
      Result.map(exact(`[^/]*${rest}`), (tail) => (name: string) => {
        for (let split = 0; split <= name.length; split++) {
          const remainder = name.slice(split)
          if (head(name.slice(0, split)) && !refused(remainder) && tail(remainder)) return true
        }
        return false
      })))
}

const compileSegment = (segment: string, dot: boolean): Result.Result<Segment, Refusal> => {
  if (segment === globstar) return Result.succeed(globstar)
  const translation = translate(segment, false)
  if (typeof translation === "string") return Result.fail(translation)
  const literal = translation.literal
  if (literal !== undefined) return Result.succeed({ literal, test: (name) => name === literal })
  // A wildcard never matches a leading dot unless the segment itself starts with one.
  const guarded = !dot && !segment.startsWith(".")
  return Result.map(nameTest(translation.tokens), (test): Segment => ({
    literal: undefined,
    test: guarded ? (name) => name.charCodeAt(0) !== 46 && test(name) : test
  }))
}

/** One alternative's segments: `.` and inner empty segments dropped, runs of `**` merged. */
const segmentsOf = (alternative: string): Array<string> => {
  const parts = alternative.split("/").filter((part, i) => part !== "." && (part !== "" || i === 0))
  return parts.filter((part, i) => !(part === globstar && parts[i - 1] === globstar))
}

/**
 * The alternatives of `pattern`, each as its segments, or why the pattern cannot be matched. With
 * `dot` false a wildcard never matches a name starting with `.`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parse = (pattern: string, dot: boolean): Result.Result<ReadonlyArray<ReadonlyArray<Segment>>, Refusal> => {
  const expanded = expandBraces(pattern)
  if (expanded === undefined) return Result.fail(`more than ${maxAlternatives} brace alternatives`)
  const alternatives: Array<Array<Segment>> = []
  for (const alternative of expanded) {
    const segments: Array<Segment> = []
    for (const part of segmentsOf(alternative)) {
      const segment = compileSegment(part, dot)
      if (Result.isFailure(segment)) return Result.fail(segment.failure)
      segments.push(segment.success)
    }
    alternatives.push(segments)
  }
  return Result.succeed(alternatives)
}

/**
 * GlobPattern — the glob dialect of every sandbox: LocalSandbox's `grep` filter, VirtualSandbox's
 * `glob` and `grep` filter, and what a custom backend compiles its patterns with so that its
 * `glob` and `grep` read a pattern as those do (`@condukt/testing`'s SandboxConformance checks it).
 *
 * Syntax, fast-glob's (extglobs, POSIX classes and ranges as Node's `path.matchesGlob` reads them,
 * which is what LocalSandbox's grep used for those until this module): `*` and `?` within one
 * name; `**` as a whole segment for any number of directories, none included; `[…]`, `[!…]`,
 * `[^…]` and POSIX classes (`[[:alpha:]]`); `{a,b}` (nested) and ranges (`{1..3}`, `{01..10..2}`,
 * `{a..e}`), at most 256 once expanded; extglobs `@(a|b)`, `?(…)`, `*(…)`, `+(…)`
 * and `!(…)`; `\` escapes. Everything else is literal: a leading `!` negates nothing, and `$(…)`,
 * backticks, `;` and quotes match only names holding them, so a pattern never runs anything.
 * Matching is case-sensitive, against `/`-separated paths relative to the walk's root; `.` segments
 * are ignored, and a pattern starting with `/` matches no relative path (a backend that roots such
 * patterns elsewhere, as VirtualSandbox's glob does at `/`, strips the `/` first). With `dot: false`
 * (grep's filter) a wildcard never matches a name starting with `.`, so `*` and `**` do not go into
 * dot directories unless the pattern names them (`.github/**`); `dot: true` lets them (glob's).
 *
 * It is an automaton over path segments rather than one test per path, so a walk prunes: the
 * `State` of a directory is the set of segment positions reached in it (`root`, then `enter` per
 * subdirectory, `undefined` when nothing below can match, so the directory is never read), and a
 * file costs one test per live position (`matches`). `base` is the literal directory prefix every
 * match shares, where a walk may start.
 *
 * Every name test runs on RE2 (re2js), in time linear in the name, so no pattern can stall the
 * event loop (docs/decisions/0008): `*a*a*a*a*a*a*a*a` against a long name costs what `*` does.
 * Extglobs, POSIX classes and ranges keep Node's `path.matchesGlob` meaning (`x!(a)y` is an `x…y`
 * name whose middle is not `a`); RE2 has no lookahead, so a `!(…)` group is matched by trying each
 * split of the name (quadratic in the name, never worse), and a segment may hold one such group,
 * not nested in another. Refused, with a description: more than 256 alternatives once braces are
 * expanded (counted before anything is generated, so `{1..10000000}` costs nothing), a second or
 * nested `!(…)`, a class range out of order, a pattern too large to compile.
 */
import { Result } from "effect"
import { RE2JS } from "re2js"

/**
 * Where a walk stands in a directory: the segment positions reached there.
 *
 * @since 0.1.0
 * @category models
 */
export type State = ReadonlyArray<number>

/** @since 0.1.0 @category models */
export interface Options {
  /** Whether wildcards match names starting with `.` [false]. */
  readonly dot?: boolean | undefined
}

/** @since 0.1.0 @category models */
export interface GlobPattern {
  /** The literal leading directories every match starts with ("" when none). */
  readonly base: string
  /** The state at the walk's root. */
  readonly root: State
  /** The state inside subdirectory `name`, or `undefined` when nothing below it can match. */
  readonly enter: (state: State, name: string) => State | undefined
  /** Whether the file `name`, in a directory with `state`, matches. */
  readonly matches: (state: State, name: string) => boolean
}

const maxAlternatives = 256

/** Bounds the compiled source: each `!(…)` repeats the rest of its name, so it can double. */
const maxSourceLength = 65536

const globstar = "**"

interface Name {
  /** The name itself when the segment has no wildcard: compared, and usable as a `base`. */
  readonly literal: string | undefined
  readonly test: (name: string) => boolean
}

type Segment = Name | typeof globstar

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

/** A reason to refuse the pattern, as the model reads it after "Invalid pattern <p>: ". */
type Refusal = string

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

const literalOf = (segment: Segment): string | undefined => segment === globstar ? undefined : segment.literal

/** The literal directories every alternative starts with. */
const commonBase = (alternatives: ReadonlyArray<ReadonlyArray<Segment>>): string => {
  const first = alternatives[0] ?? []
  const base: Array<string> = []
  for (let i = 0; i < first.length - 1; i++) {
    const segment = first[i]!
    const literal = literalOf(segment)
    if (literal === undefined || literal === "") break
    if (!alternatives.every((segments) => i < segments.length - 1 && literalOf(segments[i]!) === literal)) break
    base.push(literal)
  }
  return base.join("/")
}

const automaton = (alternatives: ReadonlyArray<ReadonlyArray<Segment>>, dot: boolean): GlobPattern => {
  // All alternatives in one array, each followed by `undefined`: a position is an index, the
  // position after it is the next index, and the last segment is the one before an `undefined`.
  const flat: Array<Segment | undefined> = []
  const starts: Array<number> = []
  for (const segments of alternatives) {
    starts.push(flat.length)
    flat.push(...segments, undefined)
  }
  const visible = (name: string): boolean => dot || name.charCodeAt(0) !== 46
  // A globstar may match no directory at all, so the position after it is live too.
  const closure = (positions: ReadonlyArray<number>): Array<number> => {
    const out: Array<number> = []
    for (let position of positions) {
      for (let segment = flat[position]; segment !== undefined; segment = flat[++position]) {
        if (!out.includes(position)) out.push(position)
        if (segment !== globstar) break
      }
    }
    return out
  }
  return {
    base: commonBase(alternatives),
    root: closure(starts),
    enter: (state, name) => {
      const next: Array<number> = []
      for (const position of state) {
        const segment = flat[position]!
        if (segment === globstar) {
          if (visible(name)) next.push(position)
        } else if (flat[position + 1] !== undefined && segment.test(name)) next.push(position + 1)
      }
      const live = closure(next)
      return live.length === 0 ? undefined : live
    },
    matches: (state, name) => {
      for (const position of state) {
        if (flat[position + 1] !== undefined) continue
        const segment = flat[position]!
        if (segment === globstar ? visible(name) : segment.test(name)) return true
      }
      return false
    }
  }
}

/**
 * Compiles `pattern`, matched against paths relative to a walk's root, or says why it cannot.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (pattern: string, options?: Options): Result.Result<GlobPattern, string> => {
  const dot = options?.dot ?? false
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
  return Result.succeed(automaton(alternatives, dot))
}

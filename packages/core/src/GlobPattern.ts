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
import { globstar, parse, type Segment } from "./GlobSyntax.ts"

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
  return Result.map(parse(pattern, dot), (alternatives) => automaton(alternatives, dot))
}

/**
 * globMatch — the `glob` filter of `LocalSandbox.grep`, applied while walking so that directories
 * which cannot hold a match are never read.
 *
 * It speaks the common subset of fast-glob's syntax (`*`, `?`, `**`, `[…]`, `{a,b}`, `\` escapes)
 * with fast-glob's defaults: case-sensitive, and wildcards never match a name starting with `.`
 * (a pattern names dot entries explicitly, as in `.github/**`). A pattern is a list of `/`-separated
 * segments run as a small automaton: the state of a directory is the set of segment positions
 * reached in it, so a file costs one regex test per live position. Anything richer (extglobs,
 * POSIX classes, `{1..3}` ranges, `!` negation) falls back to Node's `path.matchesGlob`, slower
 * but complete; the fallback prunes only dot directories.
 */
import * as NodePath from "node:path"

/** Positions reached in a directory, encoded as `alternative * stride + segment`. */
export type State = ReadonlyArray<number>

/** @since 0.1.0 @category models */
export interface GlobMatch {
  readonly root: State
  /** The state inside directory `name`, or `undefined` when nothing below it can match. */
  readonly enter: (state: State, name: string) => State | undefined
  /** Whether file `name` (at `relativePath` from the walk root) matches. */
  readonly matches: (state: State, name: string, relativePath: string) => boolean
}

const globstar = "**"
const stride = 1 << 16
const maxAlternatives = 256
const unsupported = /[!+@*?]\(|\[\[:|^!|\{[^}]*\.\.[^}]*\}/

type Segment = RegExp | typeof globstar

const escapeRegExp = (char: string): string => /[\\^$.*+?()[\]{}|/]/.test(char) ? "\\" + char : char

const compileSegment = (segment: string): Segment => {
  if (segment === globstar) return globstar
  let source = segment.startsWith(".") ? "" : "(?!\\.)"
  for (let i = 0; i < segment.length; i++) {
    const char = segment[i]!
    if (char === "\\" && i + 1 < segment.length) source += escapeRegExp(segment[++i]!)
    else if (char === "*") source += "[^/]*"
    else if (char === "?") source += "[^/]"
    else if (char === "[") {
      // The first character of a class (after an optional negation) may be a literal `]`.
      let end = i + 1
      if (segment[end] === "!" || segment[end] === "^") end++
      if (segment[end] === "]") end++
      while (end < segment.length && segment[end] !== "]") end += segment[end] === "\\" ? 2 : 1
      if (end >= segment.length) {
        source += "\\["
        continue
      }
      const body = segment.slice(i + 1, end)
      const negated = body.startsWith("!") || body.startsWith("^")
      const members = (negated ? body.slice(1) : body).replace(/\\?([\]\\^])/g, "\\$1")
      source += negated ? `[^/${members}]` : `[${members}]`
      i = end
    } else source += escapeRegExp(char)
  }
  return new RegExp(`^${source}$`)
}

/** Expands `{a,b}` alternatives (nested ones too); `undefined` when there would be too many. */
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
      if (commas.length === 0) {
        // `{x}` is literal in fast-glob; keep scanning after it.
        open = -1
        continue
      }
      const bounds = [open, ...commas, i]
      const prefix = pattern.slice(0, open)
      const suffix = pattern.slice(i + 1)
      const out: Array<string> = []
      for (let k = 0; k + 1 < bounds.length; k++) {
        const expanded = expandBraces(prefix + pattern.slice(bounds[k]! + 1, bounds[k + 1]) + suffix)
        if (expanded === undefined) return undefined
        out.push(...expanded)
        if (out.length > maxAlternatives) return undefined
      }
      return out
    }
  }
  return [pattern]
}

const segmentsOf = (pattern: string): Array<Segment> => {
  const parts = pattern.split("/").filter((part, i) => part !== "." && (part !== "" || i === 0))
  // Consecutive globstars mean the same as one.
  const collapsed = parts.filter((part, i) => !(part === globstar && parts[i - 1] === globstar))
  return collapsed.map(compileSegment)
}

const automaton = (alternatives: ReadonlyArray<ReadonlyArray<Segment>>): GlobMatch => {
  const segmentAt = (position: number): Segment | undefined =>
    alternatives[Math.floor(position / stride)]![position % stride]
  const isLast = (position: number): boolean =>
    position % stride === alternatives[Math.floor(position / stride)]!.length - 1
  // A globstar may match no directory at all, so the position after it is live too.
  const closure = (positions: Iterable<number>): Array<number> => {
    const out: Array<number> = []
    for (let position of positions) {
      out.push(position)
      while (segmentAt(position) === globstar) out.push(++position)
    }
    return [...new Set(out)]
  }
  const root = closure(alternatives.map((_, i) => i * stride))
  return {
    root,
    enter: (state, name) => {
      const next: Array<number> = []
      for (const position of state) {
        const segment = segmentAt(position)
        if (segment === undefined) continue
        if (segment === globstar) {
          if (!name.startsWith(".")) next.push(position)
        } else if (segment.test(name)) next.push(position + 1)
      }
      const live = closure(next).filter((position) => segmentAt(position) !== undefined)
      return live.length === 0 ? undefined : live
    },
    matches: (state, name) => {
      for (const position of state) {
        if (!isLast(position)) continue
        const segment = segmentAt(position)!
        if (segment === globstar ? !name.startsWith(".") : segment.test(name)) return true
      }
      return false
    }
  }
}

const fallback = (pattern: string): GlobMatch => {
  const entersDotDirectories = /(^|\/)\./.test(pattern)
  return {
    root: [],
    enter: (state, name) => entersDotDirectories || !name.startsWith(".") ? state : undefined,
    matches: (_, __, relativePath) => NodePath.matchesGlob(relativePath, pattern)
  }
}

/**
 * Compiles a glob pattern, matched against paths relative to the directory being walked.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (pattern: string): GlobMatch => {
  const normalized = pattern.startsWith("./") ? pattern.slice(2) : pattern
  if (unsupported.test(normalized)) return fallback(normalized)
  const alternatives = expandBraces(normalized)
  if (alternatives === undefined) return fallback(normalized)
  return automaton(alternatives.map(segmentsOf))
}

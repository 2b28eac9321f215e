/**
 * globPattern — a glob compiled to one RegExp over `/`-separated relative paths, for the virtual
 * sandbox's `glob` and for `grep`'s file filter.
 *
 * The pattern never reaches a shell: `$(…)`, backticks, `;` and quotes are ordinary characters
 * that match only files named with them, so an "unsafe" pattern finds nothing and runs nothing.
 * Syntax: `*`, `?`, `**` as a whole segment (any depth, none included), `[…]` and `[!…]`,
 * `{a,b}` (nested, at most `maxAlternatives`), `\` escapes; everything else is literal (no
 * extglobs). With `dot: false` a wildcard never matches a name starting with `.` and the walk does
 * not enter dot directories unless the pattern names one (fast-glob's default, what grep's filter
 * uses, as LocalSandbox's does); with `dot: true` it does (what glob uses, like Local's fast-glob).
 */
import { Result } from "effect"

/** @since 0.1.0 @category models */
export interface GlobPattern {
  /** Whether a path relative to the walk's root matches. */
  readonly test: (path: string) => boolean
  /** The literal leading directories every match starts with ("" when none), so the walk starts there. */
  readonly base: string
  /** Whether the walk should enter the directory at `path` (relative, like `test`'s paths). */
  readonly enters: (path: string) => boolean
}

const maxAlternatives = 256
const magic = /[*?[\\]/

const escapeRegExp = (text: string): string => text.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&")

/** Expands `{a,b}` (nested too); `undefined` when there would be more than `maxAlternatives`. */
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
      // `{x}` without a comma is literal, as in fast-glob; look for the next group.
      if (commas.length === 0) continue
      const bounds = [open, ...commas, i]
      const out: Array<string> = []
      for (let k = 0; k + 1 < bounds.length; k++) {
        const expanded = expandBraces(
          pattern.slice(0, open) + pattern.slice(bounds[k]! + 1, bounds[k + 1]) + pattern.slice(i + 1)
        )
        if (expanded === undefined) return undefined
        out.push(...expanded)
        if (out.length > maxAlternatives) return undefined
      }
      return out
    }
  }
  return [pattern]
}

const segmentSource = (segment: string, dot: boolean): string => {
  let source = ""
  for (let i = 0; i < segment.length; i++) {
    const char = segment[i]!
    if (char === "\\" && i + 1 < segment.length) source += escapeRegExp(segment[++i]!)
    else if (char === "*") source += "[^/]*"
    else if (char === "?") source += "[^/]"
    else if (char === "[") {
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
  return dot || segment.startsWith(".") ? source : `(?!\\.)${source}`
}

const alternativeSource = (segments: ReadonlyArray<string>, dot: boolean): string => {
  const name = dot ? "[^/]+" : "(?!\\.)[^/]+"
  let source = ""
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1
    if (segment === "**") source += last ? `(?:${name}/)*${name}` : `(?:${name}/)*`
    else source += segmentSource(segment, dot) + (last ? "" : "/")
  })
  return source
}

const segmentsOf = (pattern: string): Array<string> => {
  const parts = pattern.split("/").filter((part) => part !== "" && part !== ".")
  return parts.filter((part, i) => !(part === "**" && parts[i - 1] === "**"))
}

/** The literal directories every alternative starts with. */
const commonBase = (alternatives: ReadonlyArray<ReadonlyArray<string>>): Array<string> => {
  const first = alternatives[0] ?? []
  const base: Array<string> = []
  for (let i = 0; i < first.length - 1; i++) {
    const segment = first[i]!
    if (segment === "**" || magic.test(segment)) break
    if (!alternatives.every((segments) => i < segments.length - 1 && segments[i] === segment)) break
    base.push(segment)
  }
  return base
}

/**
 * Compiles `pattern` (relative; a leading `./` is dropped), or explains why it cannot.
 *
 * @since 0.1.0
 * @category constructors
 */
export const compile = (pattern: string, options: { readonly dot: boolean }): Result.Result<GlobPattern, string> => {
  const expanded = expandBraces(pattern)
  if (expanded === undefined) return Result.fail(`more than ${maxAlternatives} brace alternatives`)
  const alternatives = expanded.map(segmentsOf).filter((segments) => segments.length > 0)
  if (alternatives.length === 0) return Result.succeed({ test: () => false, base: "", enters: () => false })
  const regex = new RegExp(`^(?:${alternatives.map((segments) => alternativeSource(segments, options.dot)).join("|")})$`)
  const deepest = alternatives.some((segments) => segments.includes("**"))
    ? Number.POSITIVE_INFINITY
    : Math.max(...alternatives.map((segments) => segments.length - 1))
  const namesDot = alternatives.some((segments) => segments.some((segment) => segment.startsWith(".")))
  const skipsDot = !options.dot && !namesDot
  return Result.succeed({
    test: (path) => regex.test(path),
    base: commonBase(alternatives).join("/"),
    enters: (path) => {
      const names = path.split("/")
      return names.length <= deepest && !(skipsDot && names[names.length - 1]!.startsWith("."))
    }
  })
}

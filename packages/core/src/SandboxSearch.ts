/**
 * SandboxSearch — the two search capabilities of a sandbox, `glob` and `grep`, as every backend
 * reads them: their options and results, the limits they apply, and grep's pattern dialect.
 *
 * A limit is a request, so it is clamped, never refused. A grep pattern is RE2 (re2js) on every
 * backend, matched in time linear in the line, so no pattern a model writes can stall the event
 * loop; lookaround and backreferences are refused with a sentence saying so. Glob patterns have a
 * module of their own (`GlobPattern`). `Sandbox` re-exports all of this.
 */
import { Result } from "effect"
import { RE2JS } from "re2js"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface GlobOptions {
  readonly cwd?: string | undefined
  readonly limit?: number | undefined
}

/** @since 0.1.0 @category models */
export interface GrepOptions {
  /** Directory or file to search, relative to the sandbox cwd. */
  readonly path?: string | undefined
  /** Glob filter on the files searched (default every non-hidden file). */
  readonly glob?: string | undefined
  readonly caseSensitive?: boolean | undefined
  readonly limit?: number | undefined
}

/** @since 0.1.0 @category models */
export interface GrepMatch {
  readonly path: string
  readonly lineNumber: number
  readonly line: string
}

/**
 * A file `grep` meant to search and did not, with why in a few words (`unreadable`).
 *
 * @since 0.1.0
 * @category models
 */
export interface SkippedFile {
  readonly path: string
  readonly why: string
}

/** @since 0.1.0 @category models */
export interface GrepResult {
  /** Matching lines in path order, at most `limit`. */
  readonly matches: ReadonlyArray<GrepMatch>
  /** Files that were not searched (or not to their end), so "no match" is never claimed for them. */
  readonly skipped: ReadonlyArray<SkippedFile>
}

// ---------------------------------------------------------------------------------------------
// Limits and the grep pattern dialect
// ---------------------------------------------------------------------------------------------

/** `glob`'s limit when none is given. */
export const DEFAULT_GLOB_LIMIT = 1000
/** `grep`'s limit when none is given. */
export const DEFAULT_GREP_LIMIT = 200
/** The largest `glob` or `grep` limit honoured. */
export const MAX_LIMIT = 100_000

/**
 * A `glob` or `grep` limit as backends apply it: a limit is a request, so it is clamped to
 * 1..`MAX_LIMIT`, never refused.
 *
 * @since 0.1.0
 * @category combinators
 */
export const clampLimit = (limit: number | undefined, fallback: number): number =>
  limit === undefined || Number.isNaN(limit) ? fallback : Math.min(MAX_LIMIT, Math.max(1, Math.floor(limit)))

/** The longest `grep` pattern compiled: RE2 programs grow with the pattern, and memory with them. */
export const MAX_PATTERN_LENGTH = 4096

/** The largest RE2 program compiled (instructions; counted repeats such as `x{1000}` multiply). */
const maxProgramSize = 100_000

/** What the model reads after every refusal, so it can rewrite the pattern. */
const dialectHint = "Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences"

/**
 * A compiled `grep` pattern: whether a line (without its line break) holds a match.
 *
 * @since 0.1.0
 * @category models
 */
export interface LinePattern {
  readonly test: (line: string) => boolean
}

/**
 * `grep`'s pattern dialect, the same on every backend: RE2 syntax (re2js), case-insensitive on
 * request, matched in time linear in the line, so no pattern can stall the event loop. The
 * failure says what RE2 refused and what it accepts.
 *
 * @since 0.1.0
 * @category constructors
 */
export const compilePattern = (pattern: string, caseSensitive: boolean): Result.Result<LinePattern, string> => {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    return Result.fail(`the pattern is longer than ${MAX_PATTERN_LENGTH} characters. ${dialectHint}.`)
  }
  return Result.flatMap(
    Result.try({
      try: () => RE2JS.compile(pattern, caseSensitive ? 0 : RE2JS.CASE_INSENSITIVE),
      // re2js words it "error parsing regexp: <reason>: `<fragment>`".
      catch: (error) =>
        `${(error instanceof Error ? error.message : String(error)).replace(/^error parsing regexp: /, "")}. ${dialectHint}.`
    }),
    (compiled) =>
      compiled.programSize() > maxProgramSize
        ? Result.fail(`the pattern compiles to more than ${maxProgramSize} instructions (counted repeats multiply). ${dialectHint}.`)
        : Result.succeed(compiled)
  )
}

/**
 * Grep — search file contents by regular expression through the sandbox (a capability a sandbox
 * may lack), answered as `path:line_number: line`, one match per line.
 *
 * The pattern is compiled here first, in the shared RE2 dialect (`Sandbox.compilePattern`), so an
 * invalid one gets the same `Invalid regex: …` sentence, saying what RE2 accepts, on every sandbox.
 * As with Glob, one match more than `limit` is asked for so the model learns when it did not see
 * everything, and the list obeys the output limit. Files the sandbox could not search are named
 * after the list, so "no matches" is never claimed for a file nobody read.
 */
import { Effect, Result, Schema } from "effect"
import { limitOutput } from "../internal/outputLimit.ts"
import * as Sandbox from "../Sandbox.ts"
import * as Tool from "../Tool.ts"
import { fromSandbox, ToolError } from "./ToolError.ts"

const DEFAULT_LIMIT = 200
const MAX_LIMIT = 10_000
/** Skipped files named in the note; the rest are counted. */
const MAX_SKIPPED_NAMED = 10

const Parameters = Schema.Struct({
  pattern: Schema.String.annotate({ description: "Regular expression to search for (RE2 syntax)" }),
  path: Schema.optionalKey(
    Schema.String.annotate({ description: "Directory or file to search in (default: the working directory)" })
  ),
  glob: Schema.optionalKey(Schema.String.annotate({ description: 'Glob filter for the files to search (e.g. "**/*.ts")' })),
  case_sensitive: Schema.Boolean.annotate({ description: "Match case-sensitively (default true)" }).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed(true))
  ),
  limit: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_LIMIT }))
    .annotate({ description: `Maximum number of matches to return (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})` })
    .pipe(Schema.withDecodingDefaultKey(Effect.succeed(DEFAULT_LIMIT)))
})

const compile = (pattern: string, caseSensitive: boolean) =>
  Result.match(Sandbox.compilePattern(pattern, caseSensitive), {
    onSuccess: () => Effect.void,
    onFailure: (reason) => Effect.fail(new ToolError({ message: `Invalid regex: ${reason}` }))
  })

/** `(skipped 2 files: a.log (too large), b (unreadable))`, or "" when every file was searched. */
const skippedNote = (skipped: ReadonlyArray<Sandbox.SkippedFile>): string => {
  if (skipped.length === 0) return ""
  const named = skipped.slice(0, MAX_SKIPPED_NAMED).map((file) => `${file.path} (${file.why})`)
  if (skipped.length > MAX_SKIPPED_NAMED) named.push(`${skipped.length - MAX_SKIPPED_NAMED} more`)
  return `(skipped ${skipped.length} ${skipped.length === 1 ? "file" : "files"}: ${named.join(", ")})`
}

/**
 * Searches file contents by regular expression.
 *
 * @since 0.1.0
 * @category models
 */
export const Grep = Tool.make("Grep", {
  // It only reads: a call cut off by a crash runs again when the session resumes.
  retrySafe: true,
  description: [
    "Search file contents by regex. Returns matching lines as `path:line_number: line`.",
    "The regex is RE2 syntax, as in ripgrep and Go: no lookaround and no backreferences.",
    "Filter the file set with `glob` and the search root with `path`.",
    `Limited to ${DEFAULT_LIMIT} matches by default.`
  ].join(" "),
  parameters: Parameters,
  call: Effect.fn("Grep.call")(function*(args: typeof Parameters.Type, { redact, sandbox }: Tool.Context) {
    const { pattern, limit } = args
    yield* compile(pattern, args.case_sensitive)
    const result = yield* Effect.mapError(
      sandbox.grep(pattern, { path: args.path, glob: args.glob, caseSensitive: args.case_sensitive, limit: limit + 1 }),
      fromSandbox((reason) => {
        switch (reason._tag) {
          case "NotSupported":
            return "Grep is not supported by the active sandbox"
          case "InvalidPattern":
            return reason.pattern === pattern ? `Invalid regex: ${reason.description}` : `Grep failed: ${reason.message}`
          default:
            return `Grep failed: ${reason.message}`
        }
      })
    )
    const note = skippedNote(result.skipped)
    const withNote = (text: string) => note === "" ? text : `${text}\n\n${note}`
    const matches = result.matches
    if (matches.length === 0) return withNote(`No matches for ${pattern}`)
    const list = limitOutput(matches.slice(0, limit).map((m) => `${m.path}:${m.lineNumber}: ${m.line}`).join("\n"), redact)
    const more = list.truncated
      ? "(output truncated)"
      : matches.length > limit
      ? `(only the first ${limit} matches are shown; narrow the pattern or raise limit)`
      : ""
    return withNote(more === "" ? list.text : `${list.text}\n\n${more}`)
  })
})

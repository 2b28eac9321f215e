/**
 * Glob — find files by glob pattern through the sandbox (a capability a sandbox may lack).
 *
 * The answer is Condukt's: a count line, then one path per line. We ask the sandbox for one path
 * more than `limit` so the model learns when it did not see everything, and the list itself obeys
 * the shared output limit.
 */
import { Effect, Schema } from "effect"
import { limitOutput } from "../internal/outputLimit.ts"
import * as Tool from "../Tool.ts"
import { fromSandbox } from "./ToolError.ts"

const DEFAULT_LIMIT = 1000
const MAX_LIMIT = 10_000

const Parameters = Schema.Struct({
  pattern: Schema.String.annotate({ description: 'Glob pattern to match (e.g. "**/*.ts", "src/**/*.{ts,tsx}")' }),
  cwd: Schema.optionalKey(
    Schema.String.annotate({ description: "Base directory to search in (relative to the working directory, or absolute)" })
  ),
  limit: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_LIMIT }))
    .annotate({ description: `Maximum number of paths to return (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})` })
    .pipe(Schema.withDecodingDefaultKey(Effect.succeed(DEFAULT_LIMIT)))
})

/**
 * Finds files by glob pattern.
 *
 * @since 0.1.0
 * @category models
 */
export const Glob = Tool.make("Glob", {
  // It only reads: a call cut off by a crash runs again when the session resumes.
  retrySafe: true,
  description: [
    "Find files by glob pattern (e.g. **/*.ts). Returns matching paths relative to the search directory,",
    `sorted, dotfiles included. Limited to ${DEFAULT_LIMIT} paths by default.`
  ].join(" "),
  parameters: Parameters,
  call: Effect.fn("Glob.call")(function*({ pattern, cwd, limit }: typeof Parameters.Type, { sandbox }: Tool.Context) {
    const paths = yield* Effect.mapError(
      sandbox.glob(pattern, { cwd, limit: limit + 1 }),
      fromSandbox((reason) =>
        reason._tag === "NotSupported" ? "Glob is not supported by the active sandbox" : `Glob failed: ${reason.message}`
      )
    )
    if (paths.length === 0) return `No files matched ${pattern}`
    const shown = paths.slice(0, limit)
    const list = limitOutput([`${shown.length} match(es) for ${pattern}:`, ...shown].join("\n"))
    const note = list.truncated
      ? "(output truncated)"
      : paths.length > limit
      ? `(only the first ${limit} paths are shown; narrow the pattern or raise limit)`
      : ""
    return note === "" ? list.text : `${list.text}\n\n${note}`
  })
})

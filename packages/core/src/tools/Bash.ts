/**
 * Bash — one shell command in the session's sandbox, answered with its combined stdout and stderr
 * (limited to `MAX_LINES` lines / `MAX_BYTES` bytes) and its exit code when non-zero.
 *
 * A non-zero exit is a result, not a failure: the model reads the output and decides. Each call is
 * a fresh shell (`cd` and `export` do not persist), the session's secrets are its environment, and
 * the timeout kills the whole process tree. The `timeout` argument is the command's running time:
 * the executor grants it (plus a margin) whatever its own default, a wait for a process permit is
 * not part of it, and a call that runs out reads what it printed so far, then the timeout. A
 * sandbox limit's sentence (`ExecResult.limit`) comes after the output, so no output can push it
 * out of view. Runs alone (`concurrent: false`): commands change files.
 */
import { Duration, Effect, Redacted, Schema } from "effect"
import { formatExecResult, MAX_BYTES, MAX_LINES } from "../internal/outputLimit.ts"
import * as Tracing from "../Tracing.ts"
import * as Tool from "../Tool.ts"
import { fromSandbox } from "./ToolError.ts"

const DEFAULT_TIMEOUT_SECONDS = 120
// Timers cannot wait beyond ~24 days, and an hour is already longer than any one call should take.
const MAX_TIMEOUT_SECONDS = 3600

const Parameters = Schema.Struct({
  command: Schema.String.annotate({ description: "Bash command to execute" }),
  cwd: Schema.optionalKey(
    Schema.String.annotate({ description: "Directory to run the command in (relative to the working directory, or absolute)" })
  ),
  timeout: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_TIMEOUT_SECONDS }))
    .annotate({ description: `Timeout in seconds (default ${DEFAULT_TIMEOUT_SECONDS}, at most ${MAX_TIMEOUT_SECONDS})` })
    .pipe(Schema.withDecodingDefaultKey(Effect.succeed(DEFAULT_TIMEOUT_SECONDS)))
})

/** The session's secrets as the command's environment; none when it has none (no copy of the host's). */
const environment = (secrets: Tool.Context["secrets"]): Record<string, string> | undefined => {
  let env: Record<string, string> | undefined
  // No prototype: a secret may be named like one of Object's own keys (`__proto__`).
  for (const name of Object.keys(secrets)) (env ??= Object.create(null) as Record<string, string>)[name] = Redacted.value(secrets[name]!)
  return env
}

// Combinators, not a generator: a call waiting for a process permit holds this frame all along.
const call = ({ command, cwd, timeout }: typeof Parameters.Type, context: Tool.Context) =>
  Effect.mapBoth(context.sandbox.exec(command, { cwd, env: environment(context.secrets), timeout: Duration.seconds(timeout) }), {
    onFailure: fromSandbox((reason) =>
      reason._tag === "Timeout"
        ? formatExecResult(
          reason.output ?? "",
          undefined,
          reason.truncated ?? false,
          `Command timed out after ${timeout} seconds`,
          context.redact
        )
        : `Command failed: ${reason.message}`
    ),
    onSuccess: (result) => formatExecResult(result.output, result.exitCode, result.truncated, result.limit, context.redact)
  })

/**
 * Runs a bash command through the sandbox.
 *
 * @since 0.1.0
 * @category models
 */
export const Bash = Tool.make("Bash", {
  description: [
    "Runs a bash script in the working directory and returns everything it printed, stdout and stderr",
    `interleaved, at most ${MAX_LINES} lines and ${MAX_BYTES / 1024}KB, then its exit code unless that is 0.`,
    "Each call gets a new shell, so cd, export and functions are gone by the next call.",
    `cwd picks another directory; timeout is in seconds (${DEFAULT_TIMEOUT_SECONDS} unless given).`
  ].join(" "),
  parameters: Parameters,
  concurrent: false,
  usesSecrets: true,
  timeout: ({ timeout }) => Duration.seconds(timeout),
  call: (args: typeof Parameters.Type, context: Tool.Context) => Tracing.span(call(args, context), "Bash.call")
})

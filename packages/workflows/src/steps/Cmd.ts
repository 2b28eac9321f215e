/**
 * Cmd — a `cmd` step: `argv` run through the run's sandbox (each argument single-quoted, so no
 * shell syntax in them means anything), in the step's `cwd` with its `env`. The result is data,
 * `{ ok, stdout, exit_code }` (stdout is stdout and stderr interleaved, as the sandbox gives it): a
 * non-zero exit does not fail the run. Fails the run when the command cannot run at all
 * (sandbox error, the deadline `CMD_TIMEOUT`), and when its output passes `max_output_bytes`
 * (default `DEFAULT_MAX_OUTPUT_BYTES`): a cut output would pass for the whole one downstream, so
 * the step fails, naming the limit and how to raise it (the run's sandbox collects up to the
 * largest limit of its steps).
 */
import { Duration, Effect } from "effect"
import * as Template from "../Template.ts"
import { failed, type Fields, type StepContext } from "./StepContext.ts"

/** How long one `cmd` step may run before its process group is killed. */
export const CMD_TIMEOUT = Duration.hours(1)

/** Bytes of output a `cmd` step accepts unless it says `max_output_bytes` (10 MiB, the sandboxes' own default). */
export const DEFAULT_MAX_OUTPUT_BYTES = 10 * 1024 * 1024

/** The step's output limit. */
export const maxOutputBytes = (fields: Readonly<Record<string, unknown>>): number => {
  const given = fields["max_output_bytes"]
  return typeof given === "number" && given > 0 ? given : DEFAULT_MAX_OUTPUT_BYTES
}

/** UTF-8 bytes of `text` past `max`; counted only when the text could be that long. */
const exceeds = (text: string, max: number) => text.length * 3 > max && new TextEncoder().encode(text).length > max

const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`

/** @since 0.1.0 @category constructors */
export const run = Effect.fnUntraced(function*(id: string, fields: Fields, context: StepContext) {
  const argv = fields["argv"]
  if (!Array.isArray(argv) || typeof argv[0] !== "string" || argv[0] === "") {
    return yield* failed("CmdFailed", id, "argv must start with the program to run, a non-empty string")
  }
  const command = argv.map((arg: Expression) => quote(Template.stringify(arg))).join(" ")
  const env = fields["env"] as Readonly<Record<string, string>> | undefined
  const cwd = typeof fields["cwd"] === "string" ? fields["cwd"] : undefined
  const result = yield* Effect.mapError(
    context.sandbox.exec(command, { cwd, env, timeout: CMD_TIMEOUT }),
    (error) => failed("CmdFailed", id, `could not run ${argv[0]}: ${error.message}`, error)
  )
  const max = maxOutputBytes(fields)
  if (result.truncated || exceeds(result.output, max)) {
    return yield* failed(
      "OutputTooLarge",
      id,
      // The run's own sandbox collects at least `max`, so its cut means the step's limit was passed.
      exceeds(result.output, max) || context.maxOutputBytes !== undefined
        ? `the output of ${argv[0]} passed ${max} bytes (max_output_bytes); raise max_output_bytes on the step, or write the output to a file and read what you need`
        : `the output of ${argv[0]} was cut by the sandbox at its output limit; give the run a sandbox with a larger maxOutputBytes`
    )
  }
  return { ok: result.exitCode === 0, stdout: result.output, exit_code: result.exitCode }
})

type Expression = Parameters<typeof Template.stringify>[0]

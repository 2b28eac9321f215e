/**
 * Cmd — a `cmd` step: `argv` run through the run's sandbox (each argument single-quoted, so no
 * shell syntax in them means anything), in the step's `cwd` with its `env`. The result is data,
 * `{ ok, stdout, exit_code }` (stdout is stdout and stderr interleaved, as the sandbox gives it): a
 * non-zero exit does not fail the run. Fails the run when the command cannot run at all
 * (sandbox error, the deadline `CMD_TIMEOUT`).
 */
import { Duration, Effect } from "effect"
import * as Template from "../Template.ts"
import { failed, type Fields, type StepContext } from "./StepContext.ts"

/** How long one `cmd` step may run before its process group is killed. */
export const CMD_TIMEOUT = Duration.hours(1)

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
  return { ok: result.exitCode === 0, stdout: result.output, exit_code: result.exitCode }
})

type Expression = Parameters<typeof Template.stringify>[0]

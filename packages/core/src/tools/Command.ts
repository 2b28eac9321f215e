/**
 * Command — a tool for one trusted executable (`git`, `gh`), run directly on the host: no shell,
 * the model's `args` reach the program verbatim, and its environment carries the tool's `env` and
 * the session's secrets, which the model never sees: the values of both are secrets (those of 4
 * bytes or more), replaced by `[REDACTED:NAME]` in what the program prints before the model, the
 * events or the history get it.
 *
 * It runs on the host, not in the Sandbox: the point is to reach a host program. It runs where the
 * agent works, the sandbox's working directory, as the originals do (`context.cwd`), and takes a
 * model `cwd` relative to it or absolute, refused (a `ToolError` the model reads) when its real path
 * leaves the sandbox's host directories (its cwd and allowed paths), resolved as the sandbox's
 * `allowedPaths` are (`RealPath`). A tool given its own `cwd` runs there instead, and a model `cwd`
 * must stay below it. A sandbox whose cwd is not a host directory (a VirtualSandbox's virtual path)
 * leaves the process's working directory as the default.
 *
 * Where the session's sandbox confines its commands (`Sandbox.runConfined`: a LocalSandbox with
 * `confine`), the program runs confined the same way unless the tool opts out (`confine: false`,
 * for a trusted program that needs the network or host credentials; docs/decisions/0059). Each run
 * holds a permit of the program's ProcessBudget, and its `timeout` argument is the process's running time, from its start: the wait for a permit
 * is not counted (it has the budget's `maxWait` as its own bound; docs/decisions/0037). Its
 * answer has Bash's shape (combined output limited to `MAX_LINES` lines / `MAX_BYTES` bytes,
 * `(output truncated)`, `(exit code: N)`; on timeout, the output so far and then the timeout),
 * and a non-zero exit is a result, not a failure. Refuses: shell syntax in arguments (`;`, `|`,
 * `$(…)` are just characters) and inheriting the host environment beyond the `ProcessRunner`'s
 * allow-list. The program's `ProcessRunner` runs it (`Condukt.layer` provides the Node one).
 */
import { Duration, Effect, FileSystem, Path, Redacted, Schema } from "effect"
import { formatExecResult, MAX_BYTES, MAX_LINES } from "../internal/outputLimit.ts"
import * as RealPath from "../RealPath.ts"
import * as Redactor from "../Redactor.ts"
import * as ProcessBudget from "../ProcessBudget.ts"
import * as ProcessRunner from "../ProcessRunner.ts"
import * as Tool from "../Tool.ts"
import { ToolError } from "./ToolError.ts"

const DEFAULT_TIMEOUT_SECONDS = 120
// Timers cannot wait beyond ~24 days, and an hour is already longer than any one call should take.
const MAX_TIMEOUT_SECONDS = 3600

/** @since 0.1.0 @category models */
export interface Options {
  /** The executable: a name looked up in PATH, or a path. */
  readonly command: string
  /**
   * The host directory it runs in, and below which a model `cwd` must stay. Default: the sandbox's
   * working directory, a model `cwd` inside its host directories (the process's cwd where the
   * sandbox's is not on the host: a VirtualSandbox).
   */
  readonly cwd?: string | undefined
  /**
   * Variables added to the host allow-list (session secrets override them). Their values are
   * secrets: what the program prints of one (4 bytes or more) reaches the model as `[REDACTED:NAME]`.
   */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** The tool's name (default: the command's basename in PascalCase, `git-lfs` → `GitLfs`). */
  readonly name?: string | undefined
  readonly description?: string | undefined
  /**
   * `true` (default): when the session's sandbox confines its commands (`runConfined`: a
   * LocalSandbox with `confine`), the program runs confined the same way — no network, credentials
   * hidden, writes only where the sandbox allows. `false`: it always runs on the host, with the
   * user's rights (a trusted program that needs the network or its credentials: `gh`).
   */
  readonly confine?: boolean | undefined
}

const Parameters = Schema.Struct({
  args: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({ description: "Arguments, one per element, passed as-is (no shell)" })
  ),
  cwd: Schema.optionalKey(
    Schema.String.annotate({ description: "Directory to run in, inside the working directory (relative to it, or absolute)" })
  ),
  timeout: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_TIMEOUT_SECONDS })).annotate({
      description: `Timeout in seconds (default ${DEFAULT_TIMEOUT_SECONDS}, at most ${MAX_TIMEOUT_SECONDS})`
    })
  )
})

// `git` → `Git`, `/usr/bin/git-lfs` → `GitLfs`: the basename, each word capitalised, separators dropped.
const defaultName = (command: string): string =>
  (command.split("/").pop() ?? "")
    .split(/[^A-Za-z0-9]+/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("")

const defaultDescription = (command: string): string =>
  [
    `Runs ${command} itself, with no shell in between: every element of args reaches it unchanged,`,
    "so quotes, globs, pipes, redirections and $(...) mean nothing special.",
    `Returns what it printed, stdout and stderr interleaved, at most ${MAX_LINES} lines and ${MAX_BYTES / 1024}KB,`,
    "then its exit code unless that is 0.",
    `cwd picks another directory; timeout is in seconds (${DEFAULT_TIMEOUT_SECONDS} unless given).`
  ].join(" ")

/** Where a call runs by default (`root`), and the directories a model `cwd` must stay inside. */
interface Place {
  readonly root: string
  readonly roots: ReadonlyArray<string>
}

/**
 * The tool's own `cwd` when it has one; else the sandbox's working directory with its host
 * directories, when that directory is on the host; else the process's working directory.
 */
const placeOf = (path: Path.Path, cwd: string | undefined, sandbox: Tool.Context["sandbox"]): Place => {
  if (cwd !== undefined) {
    const root = path.resolve(cwd)
    return { root, roots: [root] }
  }
  const hosts = sandbox.hostDirectories?.() ?? [sandbox.cwd]
  if (path.isAbsolute(sandbox.cwd) && hosts.includes(sandbox.cwd)) return { root: sandbox.cwd, roots: hosts }
  const root = path.resolve(".")
  return { root, roots: [root] }
}

const outside = (given: string, { roots }: Place): string =>
  roots.length === 1
    ? `Command failed: cwd ${given} is outside ${roots[0]}, the directory this tool runs in; give a directory inside it`
    : `Command failed: cwd ${given} is outside ${roots.join(", ")}, the directories this tool runs in; give a directory inside one`

/** The real directory to run in: `given` against the place's root, refused when its real path leaves its roots. */
const locate = (place: Place, given: string | undefined) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    if (given === undefined) return place.root
    // `..` stays in the walked path, so it applies to the real directory, as the kernel does.
    const walked = path.isAbsolute(given) ? given : `${place.root}/${given}`
    return yield* Effect.mapError(RealPath.check(fs, walked, path.resolve(place.root, given), place.roots), (reason) =>
      new ToolError({ message: reason._tag === "OutsideAllowedPaths" ? outside(given, place) : `Command failed: ${reason.message}` }))
  })

/**
 * The tool's `env` values and the session's secrets in one exact-match pass (a secret wins its
 * name), then the session's redaction: an env value is a secret the session does not know of.
 */
const redactorOf = (env: Readonly<Record<string, string>> | undefined, context: Tool.Context): (text: string) => string => {
  const own = Object.fromEntries(
    Object.entries(env ?? {}).filter(([name]) => !(name in context.secrets)).map(([name, value]) => [name, Redacted.make(value)])
  )
  if (Object.keys(own).length === 0) return context.redact
  const values = Redactor.secrets(context.secrets, own)
  return (text) => context.redact(values.redact(text))
}

/**
 * A tool that runs `options.command` on the host with the model's arguments.
 *
 * Not concurrent: the programs worth exposing this way (git above all) change files and take
 * repository locks, so two calls at once would fail on each other's `index.lock`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const Command = (
  options: Options
): Tool.Tool<FileSystem.FileSystem | Path.Path | ProcessBudget.ProcessBudget | ProcessRunner.ProcessRunner> => {
  if (options.command === "") throw new TypeError("Command tool requires a command")
  return Tool.make(options.name ?? defaultName(options.command), {
    description: options.description ?? defaultDescription(options.command),
    parameters: Parameters,
    concurrent: false,
    usesSecrets: true,
    timeout: ({ timeout }) => Duration.seconds(timeout ?? DEFAULT_TIMEOUT_SECONDS),
    call: Effect.fn("Command.call")(function*({ args, cwd, timeout }: typeof Parameters.Type, context: Tool.Context) {
      const seconds = timeout ?? DEFAULT_TIMEOUT_SECONDS
      const directory = yield* locate(placeOf(yield* Path.Path, options.cwd, context.sandbox), cwd)
      const redact = redactorOf(options.env, context)
      const secrets = Object.fromEntries(Object.entries(context.secrets).map(([name, value]) => [name, Redacted.value(value)]))
      const env = { ...options.env, ...secrets }
      const confined = options.confine === false ? undefined : context.sandbox.runConfined
      if (confined !== undefined) {
        // The sandbox holds the process permit itself.
        const ran = yield* Effect.mapError(
          confined(options.command, args ?? [], { cwd: directory, env, timeout: Duration.seconds(seconds) }),
          (error) =>
            new ToolError({
              message: error.reason._tag === "Timeout"
                ? formatExecResult(error.reason.output ?? "", undefined, error.reason.truncated ?? false, `Command timed out after ${seconds} seconds`, redact)
                : `Command failed: ${redact(error.reason.message)}`
            })
        )
        return formatExecResult(ran.output, ran.exitCode, ran.truncated, undefined, redact)
      }
      const budget = yield* ProcessBudget.ProcessBudget
      const runner = yield* ProcessRunner.ProcessRunner
      const command = ProcessRunner.make(options.command, args ?? [], {
        cwd: directory,
        env,
        timeout: Duration.seconds(seconds)
      })
      const result = yield* Effect.mapError(
        budget.withPermit(runner.run(command)),
        (error) =>
          new ToolError({
            message: error._tag === "PermitTimeout"
              ? `Command failed: ${redact(error.message)}`
              : error.reason._tag === "TimedOut"
              ? formatExecResult(error.reason.output, undefined, error.reason.truncated, `Command timed out after ${seconds} seconds`, redact)
              : `Command failed: ${redact(error.message)}`
          })
      )
      return formatExecResult(result.output, result.exitCode, result.truncated, undefined, redact)
    })
  })
}

/**
 * ProcessRunner — the seam through which core starts host processes: `Tools.Command`,
 * `Secret.onePassword` and MCP's stdio transport describe a `Command` (an inert value) and the
 * service runs it. The Node backend (`@condukt/node`'s `NodeProcessRunner.layer`) runs each
 * as the leader of its own process group and kills the whole group, grandchildren included, on
 * every way out; `@condukt/testing`'s `ScriptedProcesses` answers from a script and records every
 * command, so callers are tested without a process.
 *
 * A command's environment is what it names and nothing more: the runner starts every child from
 * the host's allow-list (PATH, HOME, USER, LANG, TMPDIR… plus TERM=dumb, PAGER=cat, GIT_PAGER=cat),
 * adds the host variables `passHost` names, then `env`. Two ways to run: `run` to completion
 * (output collected and bounded, stderr merged as written or kept apart, a timeout that kills the
 * group), and `spawn` for a long-lived process the caller talks to (stdin written, stdout and
 * stderr handed over as they arrive) whose group ends with the spawn's scope: stdin EOF, then
 * SIGTERM, then SIGKILL, `CLOSE_GRACE` apart. Refuses: shell interpretation of arguments, and
 * inheriting the host environment beyond the allow-list.
 */
import { Context, Duration, type Effect, Schema, type Scope } from "effect"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * One process to start, described: nothing runs until a `ProcessRunner` is given it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Command {
  readonly _tag: "Command"
  /** The executable: a name looked up on PATH, or a path. */
  readonly file: string
  /** Passed as-is, one element per argument (no shell). */
  readonly args: ReadonlyArray<string>
  /** Where it runs: relative to the host process's working directory; absent, the user's home. */
  readonly cwd: string | undefined
  /** Variables added to the host allow-list (they override it). */
  readonly env: Readonly<Record<string, string>>
  /** Further host variables passed through by name; `OP_*` passes every name with that prefix. */
  readonly passHost: ReadonlyArray<string>
  /** `run` only: kill the group and fail with `TimedOut` after this long. */
  readonly timeout: Duration.Duration | undefined
  /** `run` only: output kept (bytes, default 10 MiB); `truncated` is then true. */
  readonly maxOutputBytes: number | undefined
  /** `run` only: `merged` (stderr joins `output` as written) or `apart` (collected into `stderr`). */
  readonly stderr: "merged" | "apart"
}

/** @since 0.1.0 @category models */
export interface CommandOptions {
  readonly cwd?: string | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly passHost?: ReadonlyArray<string> | undefined
  readonly timeout?: Duration.Input | undefined
  readonly maxOutputBytes?: number | undefined
  readonly stderr?: "merged" | "apart" | undefined
}

/** What `run` gives once the process has exited. @since 0.1.0 @category models */
export interface RunResult {
  /** stdout, with stderr interleaved as written unless kept apart (UTF-8, invalid bytes replaced). */
  readonly output: string
  /** The leader's exit code, or 128 + the signal's number when a signal ended it. */
  readonly exitCode: number
  readonly truncated: boolean
  /** What the process wrote to stderr when it was kept apart; "" otherwise. */
  readonly stderr: string
}

/**
 * Where a spawned process's output goes, chunk by chunk as it arrives, and what the caller hears
 * of its end: `exit` with the leader's exit code, `close` once its output pipes have closed too.
 *
 * @since 0.1.0
 * @category models
 */
export interface Handlers {
  readonly stdout: (chunk: Uint8Array) => void
  readonly stderr: (chunk: Uint8Array) => void
  readonly exit: (exitCode: number) => void
  readonly close: () => void
}

/**
 * A running spawned process. Closing the scope `spawn` ran in ends it: EOF on stdin, SIGTERM to
 * its group after `CLOSE_GRACE`, SIGKILL after as long again; the scope closes once it has exited.
 *
 * @since 0.1.0
 * @category models
 */
export interface Process {
  /** Its process id (the group's id on a host that has groups). */
  readonly pid: number
  /** Writes to its stdin; false when stdin is closed (the process is gone), and nothing is written. */
  readonly write: (chunk: string | Uint8Array) => boolean
}

/** Between stdin EOF and SIGTERM, and between SIGTERM and SIGKILL, when a spawn's scope closes. */
export const CLOSE_GRACE = Duration.seconds(1)

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/**
 * The process could not be started; `description` says why in a few words (`command not found`,
 * `permission denied`, `working directory /x does not exist`).
 *
 * @since 0.1.0
 * @category errors
 */
export class SpawnFailed extends Schema.TaggedError<SpawnFailed>()("SpawnFailed", {
  description: Schema.String
}) {
  override get message() {
    return this.description
  }
}

/**
 * The time ran out and the group was killed; `output` is what it wrote until then.
 *
 * @since 0.1.0
 * @category errors
 */
export class TimedOut extends Schema.TaggedError<TimedOut>()("TimedOut", {
  timeoutMs: Schema.Finite,
  output: Schema.String,
  truncated: Schema.Boolean
}) {
  override get message() {
    return `Timed out after ${this.timeoutMs}ms`
  }
}

/** @since 0.1.0 @category errors */
export const Reason = Schema.Union([SpawnFailed, TimedOut])
export type Reason = typeof Reason.Type

/**
 * The one error of the seam: which executable, and why (`reason`).
 *
 * @since 0.1.0
 * @category errors
 */
export class ProcessRunnerError extends Schema.TaggedError<ProcessRunnerError>()("ProcessRunnerError", {
  file: Schema.String,
  reason: Reason
}) {
  override get message() {
    return this.reason._tag === "SpawnFailed"
      ? `Cannot run ${this.file}: ${this.reason.description}`
      : `${this.file} timed out after ${this.reason.timeoutMs}ms`
  }
}

// ---------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface Service {
  /** Runs `command` to its exit and gives its output; its group is dead when this ends, however it ends. */
  readonly run: (command: Command) => Effect.Effect<RunResult, ProcessRunnerError>
  /** Starts `command` for as long as the current scope lasts, its output going to `handlers`. */
  readonly spawn: (command: Command, handlers: Handlers) => Effect.Effect<Process, ProcessRunnerError, Scope.Scope>
}

/**
 * The program's process runner (`Condukt.layer` provides the Node one).
 *
 * @since 0.1.0
 * @category services
 */
export class ProcessRunner extends Context.Service<ProcessRunner, Service>()("@condukt/core/ProcessRunner") {}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * Describes `file` run with `args`; nothing runs yet.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (file: string, args: ReadonlyArray<string> = [], options: CommandOptions = {}): Command => ({
  _tag: "Command",
  file,
  args,
  cwd: options.cwd,
  env: options.env ?? {},
  passHost: options.passHost ?? [],
  timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
  maxOutputBytes: options.maxOutputBytes,
  stderr: options.stderr ?? "merged"
})

/**
 * processGroup — runs one executable as the leader of its own process group and guarantees that
 * the whole group (grandchildren included) is dead when the Effect ends: on exit, on timeout and
 * on interruption. This is the one module allowed to call node:child_process and process.kill.
 *
 * The call is over when the leader exits, not when the pipes close: a background grandchild
 * (`sleep 100 &`) holds the pipe open, and is killed with the rest of the group at that moment.
 * Killing loses nothing already written: the pipe is then read to EOF, which comes as soon as the
 * dead members' descriptors close. Timeout and interruption send SIGTERM first, SIGKILL after.
 *
 * stdout and stderr share one pipe, so the output interleaves exactly as written (two pipes read
 * on arrival put `echo a; echo b >&2; echo c` out of order). The child does the merge itself:
 * - a POSIX shell run as `<shell> -c SCRIPT …` gets `exec 2>&1; ` before SCRIPT, on the same line
 *   so error line numbers and `$LINENO` are unchanged; it costs nothing (bench/exec.ts);
 * - any other executable runs as `/bin/sh -c 'exec "$@" 2>&1' sh FILE ARGS…`: the arguments are
 *   positional parameters, never parsed by the shell. The extra exec of dash costs ≈ 0.3 ms, about
 *   a sixth of a bare spawn, which is why shells skip it: LocalSandbox runs every exec through one.
 * Both start with a wait for the program's word on descriptor 3 (`LISTED`), sent once the group is
 * on the reaper's list: a program killed between the spawn and the listing leaves nothing running.
 * What the child writes to the original stderr before the merge (a shell's syntax error on the
 * first line) still arrives, through the separate stderr pipe. The one visible trace of the prefix:
 * bash quotes a first line it cannot parse, and `$BASH_EXECUTION_STRING` holds it.
 *
 * Refuses: shell interpretation of arguments, stdin (always /dev/null), inheriting the host
 * environment (`env` is complete; `baseEnv` is the allow-list callers start from).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import type { Writable } from "node:stream"
import * as path from "node:path"
import { Deferred, Effect, Exit, Option } from "effect"
import * as ProcessRunner from "@condukt/core/ProcessRunner"
import * as Reaper from "./reaper.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface RunOptions {
  readonly file: string
  readonly args: ReadonlyArray<string>
  /** Absolute working directory. */
  readonly cwd: string
  /** The complete environment of the child (nothing is inherited implicitly). */
  readonly env: Readonly<Record<string, string>>
  /** Kill the group and fail with `TimedOut` after this many milliseconds. */
  readonly timeoutMs?: number | undefined
  /** Stop collecting output after this many bytes (default 10 MiB); `truncated` is then true. */
  readonly maxOutputBytes?: number | undefined
  /** `merged` (default): stderr joins `output` as written; `apart`: it is collected into `stderr`. */
  readonly stderr?: "merged" | "apart" | undefined
  /**
   * When set, the child gets a Node IPC channel on descriptor 4 (`NODE_CHANNEL_FD`), and what comes
   * through it — a message and the socket sent with it — is given here (a confined command's
   * network forwarder hands its connections over this way).
   */
  readonly onMessage?: ((message: unknown, handle: unknown) => void) | undefined
}

/** What the runner's `run` gives, and the group leader's process id. @since 0.1.0 @category models */
export interface RunResult extends ProcessRunner.RunResult {
  readonly pid: number
}

/**
 * Why a run failed: the process runner's own error (ADR 0044), naming the executable, with reason
 * `SpawnFailed` (its `description` says why in a few words: `command not found`…) or `TimedOut`
 * (the group has been killed; `output` is what it wrote until then).
 *
 * @since 0.1.0
 * @category errors
 */
export type RunError = ProcessRunner.ProcessRunnerError

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

export const DEFAULT_MAX_OUTPUT_BYTES = 10 * 1024 * 1024

/**
 * Between SIGTERM and SIGKILL on timeout or interruption: enough for a well-behaved tool to flush
 * and remove its lock files (git's index.lock), short enough not to hold up a cancelled turn.
 */
export const TERMINATE_GRACE_MS = 500

/**
 * Once the leader has exited and its group is killed, EOF follows as soon as the killed members
 * are scheduled to die (hundreds of ms on a loaded host); a process that left the group (setsid)
 * while holding the pipe withholds it for good. We stop waiting after this.
 */
const DRAIN_AFTER_EXIT_MS = 200

const HOST_VARIABLES = [
  "PATH", "HOME", "USER", "LOGNAME", "HOSTNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TMP", "TEMP"
] as const

/** Every variable of the host process's environment (for a caller that picks some by prefix). */
export const hostVariables = (): ReadonlyArray<readonly [string, string]> =>
  Object.entries(process.env).flatMap(([name, value]) => (value === undefined ? [] : [[name, value] as const]))

/** The user's home directory: where a tool that needs no particular directory runs. */
export const homeDirectory = (): string => os.homedir()

/**
 * The host variables a child sees by default (those that are set), plus TERM=dumb PAGER=cat
 * GIT_PAGER=cat so no program waits on a pager or paints a terminal.
 *
 * @since 0.1.0
 * @category constructors
 */
export const baseEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const name of HOST_VARIABLES) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  env.TERM = "dumb"
  env.PAGER = "cat"
  env.GIT_PAGER = "cat"
  return env
}

// ---------------------------------------------------------------------------------------------
// The command line that merges stderr into stdout
// ---------------------------------------------------------------------------------------------

const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh"])

/**
 * The first words of every command: it waits for the program's word on descriptor 3, sent once its
 * group is on the reaper's list (reaper.ts), and exits without running anything if the program died
 * first (EOF). A program killed between the spawn and the listing leaves no command running.
 */
const LISTED = "read -r condukt_go <&3 || exit 125; unset condukt_go; exec 3<&-; "
// dash exports PWD even when the caller's environment has none; unset it to keep `env` complete.
const WRAPPER = `${LISTED}exec "$@" 2>&1`
const WRAPPER_UNSET_PWD = `${LISTED}unset PWD; exec "$@" 2>&1`
const APART = `${LISTED}exec "$@"`
const APART_UNSET_PWD = `${LISTED}unset PWD; exec "$@"`

// Plain Node helpers: a missing or unreadable path is an answer here, not an error.
const statOrUndefined = (p: string): fs.Stats | undefined => {
  try {
    return fs.statSync(p)
  } catch {
    return undefined
  }
}

const isExecutable = (p: string): boolean => {
  try {
    fs.accessSync(p, fs.constants.X_OK)
    return true
  } catch {
    return false
  }
}

type Lookup = "found" | "ENOENT" | "EACCES"

/**
 * Finds `file` the way execvp would (PATH from the child's env), only to report a missing or
 * non-executable file as SpawnFailed: behind the wrapper, sh would turn it into exit code 127.
 */
const lookup = (file: string, cwd: string, env: Readonly<Record<string, string>>): Lookup => {
  const candidates = file.includes("/")
    ? [path.resolve(cwd, file)]
    : (env.PATH ?? "/usr/bin:/bin").split(":").map((dir) => path.resolve(cwd, dir, file))
  let denied = false
  for (const candidate of candidates) {
    const stats = statOrUndefined(candidate)
    if (stats === undefined || !stats.isFile()) continue
    if (isExecutable(candidate)) return "found"
    denied = true
  }
  return denied ? "EACCES" : "ENOENT"
}

/** `file` could not be started: its message is `Cannot run <file>: <description>`. */
const cannotRun = (file: string, description: string): RunError =>
  new ProcessRunner.ProcessRunnerError({ file, reason: new ProcessRunner.SpawnFailed({ description }) })

/** Why `options.file` could not start in `options.cwd`, from the spawn's error code. */
export const spawnFailed = (options: Pick<RunOptions, "file" | "cwd">, code: string | undefined, detail: string): RunError => {
  const cwd = statOrUndefined(options.cwd)
  const reason = cwd === undefined
    ? `working directory ${options.cwd} does not exist`
    : !cwd.isDirectory()
    ? `working directory ${options.cwd} is not a directory`
    : code === "ENOENT"
    ? (options.file.includes("/") ? "no such file" : "command not found")
    : code === "EACCES"
    ? "permission denied"
    : detail
  return cannotRun(options.file, reason)
}

export interface CommandLine {
  readonly file: string
  readonly args: ReadonlyArray<string>
}

/** What is spawned for `options`: the merge of stderr, and first the wait for the listing (`LISTED`). */
export const commandLine = (options: RunOptions): Effect.Effect<CommandLine, RunError> =>
  Effect.suspend(() => {
    // execve cannot carry a NUL byte; say so rather than let Node quote the argument back.
    if (options.file.includes("\0") || options.args.some((arg) => arg.includes("\0"))) {
      const reason = "an argument contains a NUL byte"
      return Effect.fail(cannotRun(options.file, reason))
    }
    const [flag, script, ...rest] = options.args
    const found = () => lookup(options.file, options.cwd, options.env)
    if (flag === "-c" && script !== undefined && SHELLS.has(path.basename(options.file)) && options.stderr !== "apart") {
      return Effect.succeed({ file: options.file, args: ["-c", `${LISTED}exec 2>&1; ${script}`, ...rest] })
    }
    const lookedUp = found()
    if (lookedUp !== "found") return Effect.fail(spawnFailed(options, lookedUp, lookedUp))
    // Two pipes, nothing merged, with `stderr: "apart"`.
    const wrapper = options.stderr === "apart"
      ? "PWD" in options.env ? APART : APART_UNSET_PWD
      : "PWD" in options.env ? WRAPPER : WRAPPER_UNSET_PWD
    return Effect.succeed({ file: "/bin/sh", args: ["-c", wrapper, "sh", options.file, ...options.args] })
  })

// ---------------------------------------------------------------------------------------------
// A running group
// ---------------------------------------------------------------------------------------------

/** Sends `signal` to the whole group; false when nobody is left to receive it. */
export const signalGroup = (pgid: number, signal: "SIGTERM" | "SIGKILL"): boolean => {
  try {
    process.kill(-pgid, signal)
    return true
  } catch {
    // ESRCH: the group is empty. EPERM would mean a member changed credentials; nothing to do.
    return false
  }
}

/** Output kept up to a cap: what a run collects of its pipes. */
export interface Collector {
  readonly push: (chunk: Uint8Array) => void
  readonly text: () => string
  readonly truncated: () => boolean
}

/** A collector keeping `maxBytes` at most (the rest is read and dropped, `truncated` set). */
export const makeCollector = (maxBytes: number): Collector => {
  const chunks: Array<Uint8Array> = []
  let bytes = 0
  let truncated = false
  return {
    // Past the cap, chunks are still read (so the child never blocks on a full pipe) and dropped.
    push: (chunk) => {
      if (truncated) return
      const room = maxBytes - bytes
      if (chunk.length <= room) {
        chunks.push(chunk)
        bytes += chunk.length
        return
      }
      if (room > 0) chunks.push(chunk.subarray(0, room))
      bytes = maxBytes
      truncated = true
    },
    // When cut, `stream: true` holds back a character split by the cap instead of showing U+FFFD.
    text: () =>
      bytes === 0 ? "" : new TextDecoder("utf-8", { ignoreBOM: true }).decode(Buffer.concat(chunks), { stream: truncated }),
    truncated: () => truncated
  }
}

interface Group {
  readonly child: ChildProcess
  /** The leader's pid, which is also the group id; undefined when the spawn failed. */
  readonly pgid: number | undefined
  readonly output: Collector
  readonly errors: Collector | undefined
  /** The leader's exit code (or 128 + signal), or why it never started. */
  readonly exited: Deferred.Deferred<number, RunError>
  readonly closed: Deferred.Deferred<void>
  /** Set once SIGKILL went to the group (or found it empty): nothing more to signal. */
  killed: boolean
}

const killGroup = (group: Group): void => {
  if (group.pgid === undefined || group.killed) return
  group.killed = true
  signalGroup(group.pgid, "SIGKILL")
  Reaper.forget(group.pgid)
}

const ignore = (): void => {}

const start = (options: RunOptions, line: CommandLine): Effect.Effect<Group, RunError> =>
  Effect.try({
    try: () => {
      const child = spawn(line.file, line.args, {
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: options.onMessage === undefined ? ["ignore", "pipe", "pipe", "pipe"] : ["ignore", "pipe", "pipe", "pipe", "ipc"]
      })
      // Killed with this process, should it die before the group ends (reaper.ts); only then may
      // the command run (LISTED).
      if (child.pid !== undefined) Reaper.watch(child.pid)
      const listed = child.stdio[3] as Writable | null
      listed?.on("error", ignore)
      listed?.end("\n")
      if (options.onMessage !== undefined) {
        child.on("message", options.onMessage)
        // The channel must not keep the host's event loop alive, nor fail it when the child goes.
        child.channel?.unref()
        child.on("error", ignore)
      }
      const group: Group = {
        child,
        pgid: child.pid,
        output: makeCollector(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES),
        errors: options.stderr === "apart" ? makeCollector(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES) : undefined,
        exited: Deferred.makeUnsafe(),
        closed: Deferred.makeUnsafe(),
        killed: false
      }
      child.stdout?.on("data", group.output.push)
      child.stderr?.on("data", (group.errors ?? group.output).push)
      // A read error on a pipe only ends the output early; unhandled, it would crash the host.
      child.stdout?.on("error", ignore)
      child.stderr?.on("error", ignore)
      child.once("error", (error: NodeJS.ErrnoException) => {
        Deferred.doneUnsafe(group.exited, Effect.fail(spawnFailed(options, error.code, error.message)))
      })
      child.once("exit", (code, signal) => {
        // Nothing the call started may outlive the leader; what is already in the pipe stays readable.
        killGroup(group)
        const exitCode = code ?? 128 + (signal === null ? 0 : os.constants.signals[signal])
        Deferred.doneUnsafe(group.exited, Effect.succeed(exitCode))
      })
      child.once("close", () => Deferred.doneUnsafe(group.closed, Effect.void))
      return group
    },
    // spawn throws synchronously only for input execve cannot take (a NUL byte in `env`, say).
    catch: (error) => spawnFailed(options, undefined, error instanceof Error ? error.message : String(error))
  })

/** SIGTERM to the group; SIGKILL once the leader has exited or the grace period ran out. */
const terminate = (group: Group): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (group.pgid === undefined || group.killed) return Effect.void
    if (!signalGroup(group.pgid, "SIGTERM")) {
      // Found empty: off the reaper's list too, or a later group given the same id would be killed with this program.
      group.killed = true
      Reaper.forget(group.pgid)
      return Effect.void
    }
    // The leader's exit already kills the group, so waiting on it is the poll, without polling.
    return Deferred.await(group.exited).pipe(
      Effect.exit,
      Effect.timeoutOption(TERMINATE_GRACE_MS),
      Effect.andThen(Effect.sync(() => killGroup(group)))
    )
  })

const release = (group: Group, exit: Exit.Exit<unknown, unknown>): Effect.Effect<void> =>
  Effect.andThen(
    Exit.isFailure(exit) ? terminate(group) : Effect.void,
    Effect.sync(() => {
      killGroup(group)
      group.child.stdout?.destroy()
      group.child.stderr?.destroy()
    })
  )

/**
 * Waits for EOF on the pipe once the group is dead, so what it wrote last is not lost. When the wait
 * ends by its deadline, one more turn of the event loop reads what is already in the pipe: the
 * leader's last output can be read a turn after its exit is seen, and a loop stalled that long (by
 * a thousand spawns at once, each blocking it until its child has exec'd) fires the deadline
 * before that read (an empty output for `sleep 60 & echo done`, tests: LocalBurst.test.ts).
 */
const drained = (group: Group): Effect.Effect<void> =>
  Deferred.isDoneUnsafe(group.closed)
    ? Effect.void
    : Effect.flatMap(
      Effect.timeoutOption(Deferred.await(group.closed), DRAIN_AFTER_EXIT_MS),
      (closed) => Option.isSome(closed) ? Effect.void : Effect.yieldNow
    )

const awaitExit = (group: Group, file: string, timeoutMs: number | undefined): Effect.Effect<number, RunError> => {
  const exited = Deferred.await(group.exited)
  if (timeoutMs === undefined || !Number.isFinite(timeoutMs) || timeoutMs <= 0) return exited
  return Effect.flatMap(Effect.timeoutOption(exited, timeoutMs), (exitCode) =>
    Option.isSome(exitCode)
      ? Effect.succeed(exitCode.value)
      : terminate(group).pipe(
        Effect.andThen(drained(group)),
        Effect.andThen(Effect.suspend(() =>
          Effect.fail(
            new ProcessRunner.ProcessRunnerError({
              file,
              reason: new ProcessRunner.TimedOut({ timeoutMs, output: group.output.text(), truncated: group.output.truncated() })
            })
          )
        ))
      ))
}

const collect = (group: Group, exitCode: number): Effect.Effect<RunResult> =>
  Effect.andThen(
    drained(group),
    Effect.sync((): RunResult => ({
      output: group.output.text(),
      exitCode,
      truncated: group.output.truncated(),
      pid: group.pgid ?? 0,
      stderr: group.errors?.text() ?? ""
    }))
  )

/**
 * Runs `file` with `args` (no shell interpretation) as a new process group and returns its
 * combined output once the leader exits; the group is killed on every way out.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = Effect.fnUntraced(function*(options: RunOptions) {
  const line = yield* commandLine(options)
  return yield* Effect.acquireUseRelease(
    start(options, line),
    (group) => Effect.flatMap(awaitExit(group, options.file, options.timeoutMs), (exitCode) => collect(group, exitCode)),
    release
  )
})

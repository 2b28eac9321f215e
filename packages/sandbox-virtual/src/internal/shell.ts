/**
 * shell — the just-bash interpreter behind `VirtualSandbox.exec`: limits, deadlines, and turning
 * everything just-bash does into a result or a typed error.
 *
 * Limits are just-bash's hardened profile with the caller's overrides. A call's timeout has to be
 * just-bash's own deadline: a busy loop in the interpreter never yields to the event loop, so no
 * timer (Effect's included) fires before the loop ends, while just-bash checks its deadline
 * between statements and races every command against it. The deadline is fixed per `Bash`
 * instance, so a call with a timeout shorter than the wall time runs in a twin over the same
 * filesystem (its constructor costs ~30 µs where an `echo` costs ~300 µs); the last twin is kept
 * for the next such call. A call's `env` is exported, as a process's environment is in bash
 * (`bash -c` sees it): just-bash exports only what its constructor was given, and a command's
 * own `exec` (`xargs`, `find -exec`) starts from that too, so a call with `env` also runs in a
 * twin built with it, kept while the env stays the same (a session's secrets, call after call).
 * When the call's own deadline passes it fails with `Timeout` carrying
 * what just-bash kept of the output (3.4.2 keeps nothing: it drops a script's output when the
 * deadline passes or the script is aborted, its `timeout` command included); when the wall time
 * passes first the result says so (exit 124), like every other limit (exit 126).
 *
 * just-bash reports a limit as the last line of stderr, after all of stdout: a long output would
 * push it out of what the Bash tool keeps. So that line leaves the output and becomes the result's
 * `limit`, reworded for the model (just-bash's "increase executionLimits.…" is advice for the
 * host, not for it); an output cut at `maxOutputSize` is also marked `truncated`.
 *
 * Every call gets the fiber's AbortSignal, so an interrupted call (an aborted turn, a closed
 * session) stops at the interpreter's next statement. just-bash then fences each command, which
 * costs ~10 % of an `echo`; that is the price of interruption that really stops. That signal also
 * ends a script's own `timeout`s on time (`timeout.ts`: its `aborted` reads their deadlines), and
 * `timeout` is this interpreter's own, on the caller's thread and on a worker alike.
 *
 * just-bash rejects instead of answering for some filesystem failures (a redirect onto a
 * read-only mount, losing the output so far); those become exit code 1 and one line
 * (`bash: write failed: read-only file system`). Any other rejection is a bug in the interpreter:
 * a `Failed` reason carrying the cause.
 *
 * Given `workers` (a `WorkerPool`), a call runs on a worker instead: the same interpreter, built
 * there with the same limits and deadline, over this thread's filesystem by message. Its answer
 * goes through the same turning into a result; a worker lost (terminated, crashed, its pool
 * closed) is a rejection, so `Failed`. The pool ends a call the interpreter cannot (a command that
 * never reaches a statement boundary) at its deadline with just-bash's own answer: `Timeout`.
 */
import { Sandbox } from "@condukt/core"
import { Effect } from "effect"
import { Bash, type BashOptions, type CustomCommand, type IFileSystem } from "just-bash"
import type { WorkerPool } from "../WorkerPool.ts"
import * as CommandLookups from "./commandLookups.ts"
import * as FsError from "./fsError.ts"
import * as Timeout from "./timeout.ts"
import * as Protocol from "./workerProtocol.ts"

/** just-bash's limit names, for what we let callers override. */
export type ExecutionLimits = NonNullable<BashOptions["executionLimits"]>

/** @since 0.1.0 @category models */
export interface Run {
  /** Absolute directory to run in. */
  readonly cwd: string
  readonly env: Readonly<Record<string, string>> | undefined
  readonly timeoutMs: number | undefined
}

/** @since 0.1.0 @category models */
export interface Shell {
  readonly run: (command: string, options: Run) => Effect.Effect<Sandbox.ExecResult, Sandbox.SandboxError>
}

/** just-bash's hardened wall time per exec. */
const hardenedWallTimeMs = 30_000
/** How just-bash reports a passed deadline, for the script or one command ("sleep exceeded its …"). */
const deadlinePassed = /exceeded (?:its )?execution deadline/

/**
 * How just-bash words a breached limit (exit 126): "bash: seq: output size limit exceeded (…)". A
 * script can print the same line itself; it then only misleads itself.
 */
const limitBreached = /^bash: .*(?:limit exceeded|output size exceeded|too many (?:commands executed|iterations))/
const outputCapped = /output size (?:limit )?exceeded/
/** just-bash's advice to the host, which the model can do nothing with. */
const hostAdvice = /, increase executionLimits\.\w+$/

/** The call's own deadline passed; `output` is what the script printed until then. */
class DeadlinePassed {
  readonly output: string
  constructor(output: string) {
    this.output = output
  }
}

const fail = (reason: Sandbox.Reason) => new Sandbox.SandboxError({ method: "exec", reason })

/** stderr without its last line, and that line ("" when stderr is empty). */
const splitLastLine = (stderr: string): readonly [rest: string, last: string] => {
  const body = stderr.endsWith("\n") ? stderr.slice(0, -1) : stderr
  const cut = body.lastIndexOf("\n")
  return [body.slice(0, cut + 1), body.slice(cut + 1)]
}

/** Turns just-bash's answer into the contract's: a limit's message moved out of the output. */
const resultOf = (stdout: string, stderr: string, exitCode: number, ownDeadline: boolean): Sandbox.ExecResult | DeadlinePassed => {
  if (exitCode !== 124 && exitCode !== 126) return { output: stdout + stderr, exitCode, truncated: false }
  const [rest, last] = splitLastLine(stderr)
  const breached = exitCode === 124 ? deadlinePassed.test(last) : limitBreached.test(last)
  if (!breached) return { output: stdout + stderr, exitCode, truncated: false }
  if (exitCode === 124 && ownDeadline) return new DeadlinePassed(stdout + rest)
  return {
    output: stdout + rest,
    exitCode,
    truncated: outputCapped.test(last),
    limit: `The sandbox stopped the command: ${last.replace(/^bash: /, "").replace(hostAdvice, "")}.`
  }
}

/**
 * "EROFS: read-only file system, write '/a'" → "bash: write failed: read-only file system". The
 * path is left out: it is relative to the mounted filesystem, so it would mislead.
 */
const rejectionResult = (errno: FsError.Errno, budgetBytes: number): Sandbox.ExecResult => ({
  output: `bash: ${errno.operation ?? "write"} failed: ${
    errno.code === "ENOSPC" ? FsError.noSpace(budgetBytes) : errno.description
  }\n`,
  exitCode: 1,
  truncated: false
})

/**
 * A `Bash`'s attributes as built, put back before each of its execs. just-bash 3.4.2 gives an exec
 * its own copy of some of the interpreter's state (the variables, functions, options, cwd) but
 * shares the sets of attributes (readonly, exported, integer, upper- and lowercase, namerefs…)
 * with every later exec: `readonly R=1` in one call refused `R=2` in the next, and a name
 * `export`ed once stayed exported. An exec is stateless (a process's environment on the host
 * starts over too), so each starts from the sets the interpreter was built with; set before the
 * exec starts, a running exec keeps the ones it started with.
 */
const freshAttributes = (bash: Bash): (() => void) => {
  const state = (bash as unknown as { readonly state?: Record<string, unknown> }).state
  // A just-bash that keeps its state elsewhere (another version): nothing to put back, rather than
  // no sandbox at all (VirtualSandbox.test's statelessness tests say which).
  if (typeof state !== "object" || state === null) return () => {}
  // The sets only: the maps an exec reads (variables, arrays, functions) it copies itself, and the
  // command hash table is a cache, shared on purpose. Sets created later are created on an exec's copy.
  const built = Object.entries(state).flatMap(([key, value]) => (value instanceof Set ? [[key, new Set(value)] as const] : []))
  return () => {
    for (const [key, value] of built) state[key] = new Set(value)
  }
}

/** @since 0.1.0 @category models */
export interface Options {
  readonly fs: IFileSystem
  readonly cwd: string
  readonly home: string
  /** Overrides of the hardened profile. */
  readonly limits: ExecutionLimits
  /** The in-memory filesystem's byte budget, for the message when it is used up. */
  readonly budgetBytes: number
  /** Commands that replace just-bash's own of the same name. */
  readonly commands?: ReadonlyArray<CustomCommand> | undefined
  /** just-bash's defense-in-depth box around each command (VirtualSandbox's option). */
  readonly defenseInDepth: boolean
  /**
   * Run each call on one of these workers instead of this thread (`WorkerPool`); the worker's
   * custom commands are its own (`rm`, `timeout`), `commands` serve this thread's interpreter.
   */
  readonly workers?: WorkerPool | undefined
}

/**
 * An interpreter over `fs`, starting in `cwd`, with `limits` over the hardened profile.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = ({ budgetBytes, commands, cwd, defenseInDepth, fs, home, limits, workers }: Options): Shell => {
  const wallTimeMs = limits.maxExecutionTimeMs ?? hardenedWallTimeMs
  /** An interpreter with this deadline, exporting `env` and HOME. */
  const interpreter = (deadlineMs: number, env: Run["env"] = undefined): { readonly bash: Bash; readonly fresh: () => void } => {
    const bash = new Bash({
      fs,
      cwd,
      env: { ...env, HOME: env?.["HOME"] ?? home },
      executionLimitProfile: "hardened",
      defenseInDepth,
      executionLimits: { ...limits, maxExecutionTimeMs: deadlineMs },
      customCommands: [...(commands ?? []), Timeout.command]
    })
    return { bash, fresh: freshAttributes(bash) }
  }
  const main = interpreter(wallTimeMs)
  let twin: { readonly key: string; readonly bash: Bash; readonly fresh: () => void } | undefined
  /** The interpreter for a call, its attributes as built. */
  const bashFor = (timeoutMs: number | undefined, env: Run["env"]): Bash => {
    const deadlineMs = timeoutMs === undefined || timeoutMs >= wallTimeMs ? wallTimeMs : timeoutMs
    const entries = env === undefined ? [] : Object.entries(env)
    const key = entries.length === 0 && deadlineMs === wallTimeMs ? undefined : JSON.stringify([deadlineMs, entries])
    if (key !== undefined && twin?.key !== key) twin = { key, ...interpreter(deadlineMs, env) }
    const chosen = key === undefined ? main : twin!
    chosen.fresh()
    return chosen.bash
  }

  const methods = workers === undefined ? [] : Protocol.fsMethods.filter((method) => typeof fs[method] === "function")
  /** The call on a worker: the same interpreter, built there, over this thread's filesystem. */
  const remote = (pool: WorkerPool, command: string, directory: string, env: Run["env"], timeoutMs: number | undefined) =>
  (signal: AbortSignal) =>
    CommandLookups.answer(fs, command, (script) => main.bash.transform(script).ast).then((known) =>
      pool.run({
        setup: {
          cwd,
          home,
          defenseInDepth,
          methods,
          limits: { ...limits, maxExecutionTimeMs: timeoutMs !== undefined && timeoutMs < wallTimeMs ? timeoutMs : wallTimeMs }
        },
        command,
        cwd: directory,
        env,
        known
      }, fs, signal)
    )

  return {
    run: (command, { cwd: directory, env, timeoutMs }) => {
      const ownDeadline = timeoutMs !== undefined && timeoutMs <= wallTimeMs
      const onWorker = workers === undefined ? undefined : remote(workers, command, directory, env, timeoutMs)
      // The outcome is settled on the promise (one Effect step, not three: this is the hot path,
      // see bench/virtual.ts): a result, a refused write turned into a result, or a rejection
      // that `catch` types.
      return Effect.tryPromise({
        try: (signal) =>
          (onWorker !== undefined ? onWorker(signal) : bashFor(timeoutMs, env).exec(
            command,
            // rawScript: keep the script as written (just-bash otherwise strips leading
            // whitespace from every line, quoted strings included).
            env === undefined
              ? { signal: Timeout.watch(signal), cwd: directory, rawScript: true }
              : { signal: Timeout.watch(signal), cwd: directory, env: { ...env }, rawScript: true }
          )).then(
            (result): Sandbox.ExecResult | Promise<never> => {
              const outcome = resultOf(result.stdout, result.stderr, result.exitCode, ownDeadline)
              return outcome instanceof DeadlinePassed ? Promise.reject(outcome) : outcome
            },
            (cause: unknown): Sandbox.ExecResult | Promise<never> => {
              const errno = FsError.errnoOf(cause)
              return errno === undefined ? Promise.reject(cause) : rejectionResult(errno, budgetBytes)
            }
          ),
        catch: (cause) =>
          cause instanceof DeadlinePassed
            ? fail(new Sandbox.Timeout({
              timeoutMs: timeoutMs ?? wallTimeMs,
              // Nothing kept is just-bash dropping it, not a silent command: say nothing rather than "".
              ...(cause.output === "" ? {} : { output: cause.output, truncated: false })
            }))
            : fail(new Sandbox.Failed({ description: `The shell failed: ${FsError.messageOf(cause)}`, cause }))
      })
    }
  }
}

/**
 * spawnGroup — a long-lived process (an MCP stdio server) as the leader of its own process group,
 * for as long as a scope lasts. Its stdin is written by the caller; stdout and stderr go to the
 * caller's handlers as they arrive. Closing the scope ends the whole group: stdin EOF, then SIGTERM
 * to the group after the grace period, SIGKILL after as long again, and the leader's exit is
 * awaited. Once the leader is gone the group gets SIGKILL anyway, so no grandchild (the real server
 * behind `npx`, `uvx` or `sh -c`) outlives it. `processGroup.ts` runs a process to completion; this
 * is its long-lived sibling and shares its group signalling and its spawn diagnosis.
 *
 * The file runs as given, exec'd by a shell that first waits until the group is on the reaper's
 * list (processGroup's `LISTED`) and never parses the arguments.
 *
 * Refuses: shell interpretation of the caller's arguments, inheriting the host environment (`env`
 * is complete).
 */
import { spawn as nodeSpawn } from "node:child_process"
import * as os from "node:os"
import { Deferred, Effect, type Scope } from "effect"
import type { Writable } from "node:stream"
import { type CommandLine, commandLine, type RunError, signalGroup, spawnFailed } from "./processGroup.ts"
import * as Reaper from "./reaper.ts"

/** @since 0.1.0 @category models */
export interface SpawnOptions {
  readonly file: string
  readonly args: ReadonlyArray<string>
  /** Absolute working directory. */
  readonly cwd: string
  /** The complete environment of the child. */
  readonly env: Readonly<Record<string, string>>
  /** Between EOF and SIGTERM, and between SIGTERM and SIGKILL, when the scope closes. */
  readonly graceMs: number
  readonly stdout: (chunk: Uint8Array) => void
  readonly stderr: (chunk: Uint8Array) => void
  readonly exit: (exitCode: number) => void
  readonly close: () => void
}

/** @since 0.1.0 @category models */
export interface Spawned {
  readonly pid: number
  readonly write: (chunk: string | Uint8Array) => boolean
}

const ignore = (): void => {}

interface Running extends Spawned {
  readonly exited: Deferred.Deferred<number>
  readonly endInput: () => void
}

const start = (options: SpawnOptions): Effect.Effect<Running, RunError> =>
  Effect.flatMap(commandLine({ ...options, stderr: "apart" }), (line) => started(options, line))

const started = (options: SpawnOptions, line: CommandLine): Effect.Effect<Running, RunError> =>
  Effect.callback<Running, RunError>((resume) => {
    const child = nodeSpawn(line.file, [...line.args], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe", "pipe"]
    })
    const exited = Deferred.makeUnsafe<number>()
    child.once("error", (error: NodeJS.ErrnoException) => {
      // Only a failed spawn matters here; a later error (a failed kill) shows as the exit.
      if (child.pid === undefined) resume(Effect.fail(spawnFailed(options, error.code, error.message)))
    })
    child.once("spawn", () => {
      const pid = child.pid!
      // Killed with this process, should it die before the group ends (reaper.ts); only then may
      // the server start (processGroup's LISTED).
      Reaper.watch(pid)
      const listed = child.stdio[3] as Writable | null
      listed?.on("error", ignore)
      listed?.end("\n")
      resume(Effect.succeed({
        pid,
        exited,
        write: (chunk) => {
          const stdin = child.stdin
          if (stdin === null || stdin.destroyed || stdin.writableEnded) return false
          stdin.write(chunk)
          return true
        },
        endInput: () => child.stdin?.end()
      }))
    })
    child.once("exit", (code, signal) => {
      // Nothing the process started may outlive it.
      if (child.pid !== undefined) {
        signalGroup(child.pid, "SIGKILL")
        Reaper.forget(child.pid)
      }
      const exitCode = code ?? 128 + (signal === null ? 0 : os.constants.signals[signal])
      Deferred.doneUnsafe(exited, Effect.succeed(exitCode))
      options.exit(exitCode)
    })
    child.once("close", options.close)
    child.stdout?.on("data", options.stdout)
    child.stderr?.on("data", options.stderr)
    // A broken pipe shows as the process's exit; unhandled, it would crash the host.
    child.stdin?.on("error", ignore)
    child.stdout?.on("error", ignore)
    child.stderr?.on("error", ignore)
  })

/** EOF, SIGTERM to the group, SIGKILL; done once the leader has exited and the group is killed. */
const terminate = (running: Running, graceMs: number): Effect.Effect<void> =>
  Effect.suspend(() => {
    const exited = Deferred.await(running.exited)
    if (Deferred.isDoneUnsafe(running.exited)) return Effect.sync(() => signalGroup(running.pid, "SIGKILL"))
    running.endInput()
    return exited.pipe(
      Effect.timeoutOption(graceMs),
      Effect.flatMap((done) =>
        done._tag === "Some" ? Effect.void : Effect.andThen(
          Effect.sync(() => signalGroup(running.pid, "SIGTERM")),
          Effect.timeoutOption(exited, graceMs)
        )
      ),
      Effect.andThen(Effect.sync(() => signalGroup(running.pid, "SIGKILL"))),
      Effect.andThen(exited),
      Effect.asVoid
    )
  })

/**
 * Starts `options.file` as a new process group owned by the current scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const spawn = (options: SpawnOptions): Effect.Effect<Spawned, RunError, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(start(options), (running) => terminate(running, options.graceMs)),
    (running): Spawned => ({ pid: running.pid, write: running.write })
  )

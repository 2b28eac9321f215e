/** Runs a command and collects its output (for root tests). */
import { NodeServices } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as path from "node:path"

export const root = path.resolve(import.meta.dirname, "../..")

const text = <E>(stream: Stream.Stream<Uint8Array, E>) => stream.pipe(Stream.decodeText(), Stream.mkString)

const spawn = <A, E>(
  command: ChildProcess.Command,
  collect: (handle: ChildProcessSpawner.ChildProcessHandle) => Effect.Effect<A, E>
) =>
  Effect.scoped(Effect.flatMap(ChildProcessSpawner.ChildProcessSpawner.use((spawner) => spawner.spawn(command)), collect))
    .pipe(Effect.provide(NodeServices.layer))

/** Runs `file` from the repository root, with this process's environment plus `env`; combined output. */
export const exec = (file: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  spawn(
    ChildProcess.make(file, args, { cwd: root, env, extendEnv: true, forceKillAfter: "2 seconds" }),
    (handle) =>
      Effect.map(
        Effect.all([text(handle.all), handle.exitCode], { concurrency: "unbounded" }),
        ([output, exitCode]) => ({ output, exitCode: Number(exitCode) })
      )
  )

/** Runs `file` in `cwd` with exactly `env` (nothing inherited); stdout and stderr apart. */
export const execIn = (cwd: string, file: string, args: ReadonlyArray<string>, env: Record<string, string | undefined>) =>
  spawn(
    ChildProcess.make(file, args, { cwd, env, extendEnv: false, forceKillAfter: "2 seconds" }),
    (handle) =>
      Effect.map(
        Effect.all([text(handle.stdout), text(handle.stderr), handle.exitCode], { concurrency: "unbounded" }),
        ([stdout, stderr, exitCode]) => ({ stdout, stderr, exitCode: Number(exitCode) })
      )
  )

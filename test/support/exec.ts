/** Runs a command from the repository root and collects its combined output (for root tests). */
import { NodeServices } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as path from "node:path"

export const root = path.resolve(import.meta.dirname, "../..")

export const exec = (file: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.scoped(Effect.gen(function*() {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const handle = yield* spawner.spawn(
      ChildProcess.make(file, args, { cwd: root, env, extendEnv: true, forceKillAfter: "2 seconds" })
    )
    const [output, exitCode] = yield* Effect.all([
      handle.all.pipe(Stream.decodeText(), Stream.mkString),
      handle.exitCode
    ], { concurrency: "unbounded" })
    return { output, exitCode: Number(exitCode) }
  })).pipe(Effect.provide(NodeServices.layer))

/**
 * NodeProcessRunner — the `ProcessRunner` of a Node host: every command runs as the leader of its
 * own process group (`internal/processGroup.ts` to completion, `internal/spawnGroup.ts` long-lived)
 * and the whole group, grandchildren included, dies on exit, timeout, interruption or scope close.
 *
 * The host's allow-list (`processGroup.baseEnv`) and the variables a command passes through by name
 * are read from the host when it runs (these commands are few; LocalSandbox's hot path is its own). A relative `cwd` is resolved against
 * the process's working directory; none means the user's home. This module belongs to the Node host
 * and moves with it when the packages split (docs/decisions/0044).
 */
import * as path from "node:path"
import { Duration, Effect, Layer } from "effect"
import * as ProcessGroup from "../internal/processGroup.ts"
import * as SpawnGroup from "../internal/spawnGroup.ts"
import * as ProcessRunner from "@condukt/core/ProcessRunner"

/** The host variables `passHost` names: exact names, or every name with the prefix before a final `*`. */
const passed = (names: ReadonlyArray<string>): Record<string, string> => {
  const env: Record<string, string> = {}
  if (names.length === 0) return env
  for (const [name, value] of ProcessGroup.hostVariables()) {
    if (names.some((wanted) => wanted.endsWith("*") ? name.startsWith(wanted.slice(0, -1)) : name === wanted)) env[name] = value
  }
  return env
}

const environment = (command: ProcessRunner.Command): Record<string, string> => ({
  ...ProcessGroup.baseEnv(),
  ...passed(command.passHost),
  ...command.env
})

const directory = (command: ProcessRunner.Command): string =>
  command.cwd === undefined ? ProcessGroup.homeDirectory() : path.resolve(command.cwd)

/**
 * The runner over the host's processes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): ProcessRunner.Service => {
  const graceMs = Duration.toMillis(ProcessRunner.CLOSE_GRACE)
  return ProcessRunner.ProcessRunner.of({
    run: (command) =>
      Effect.suspend(() =>
        ProcessGroup.run({
          file: command.file,
          args: command.args,
          cwd: directory(command),
          env: environment(command),
          timeoutMs: command.timeout === undefined ? undefined : Duration.toMillis(command.timeout),
          maxOutputBytes: command.maxOutputBytes,
          stderr: command.stderr
        })
      ).pipe(
        Effect.map((result): ProcessRunner.RunResult => ({
          output: result.output,
          exitCode: result.exitCode,
          truncated: result.truncated,
          stderr: result.stderr
        })),
        Effect.withSpan("NodeProcessRunner.run", { attributes: { file: command.file } })
      ),
    spawn: (command, handlers) =>
      Effect.suspend(() =>
        SpawnGroup.spawn({
          file: command.file,
          args: command.args,
          cwd: directory(command),
          env: environment(command),
          graceMs,
          ...handlers
        })
      ).pipe(
        Effect.withSpan("NodeProcessRunner.spawn", { attributes: { file: command.file } })
      )
  })
}

/**
 * The Node process runner (`Condukt.layer` provides it).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ProcessRunner.ProcessRunner> = Layer.sync(ProcessRunner.ProcessRunner, () => make())

/**
 * ScriptedProcesses — a `ProcessRunner` that starts no process: each command gets the answer a
 * script gives it, and every command is recorded, so what runs processes (`Tools.Command`,
 * `Secret.onePassword`, an MCP stdio server) is tested on what it asked for (file, args, cwd, env)
 * and on what it makes of the answer.
 *
 * `run` answers with the script's result (exit 0 and no output unless it says otherwise) or fails
 * with the reason it gives (`SpawnFailed`, `TimedOut`). `spawn` hands the script a process to drive:
 * it reads what the caller writes to stdin, writes stdout and stderr, and exits when it decides;
 * when the spawn's scope closes first, its stdin ends and it exits with code 0, as a well-behaved
 * server does on EOF. Everything happens when it is called (no timers, no clock): output written
 * in answer to a write reaches the caller's handlers before `write` returns.
 */
import { ProcessRunner } from "@condukt/core"
import { Context, Effect, Layer, Ref, type Scope } from "effect"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * What a command run to completion answers: its result (missing fields: exit code 0, no output),
 * or why it could not run.
 *
 * @since 0.1.0
 * @category models
 */
export type Answer =
  | {
    readonly output?: string | undefined
    readonly stderr?: string | undefined
    readonly exitCode?: number | undefined
    readonly truncated?: boolean | undefined
  }
  | ProcessRunner.Reason

/**
 * A spawned scripted process, as its script sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScriptedProcess {
  readonly stdout: (text: string) => void
  readonly stderr: (text: string) => void
  /** Ends the process with `exitCode`; what it writes afterwards is dropped. */
  readonly exit: (exitCode: number) => void
}

/**
 * How a spawned command behaves: what it does with each chunk written to its stdin (a function),
 * or why it could not start.
 *
 * @since 0.1.0
 * @category models
 */
export type Behaviour = ((input: string) => void) | ProcessRunner.SpawnFailed

/** @since 0.1.0 @category models */
export interface Script {
  /** The answer of each command run to completion (default: exit 0, no output). */
  readonly run?: ((command: ProcessRunner.Command) => Answer) | undefined
  /** The behaviour of each spawned command (default: it reads its stdin and writes nothing). */
  readonly spawn?: ((command: ProcessRunner.Command, process: ScriptedProcess) => Behaviour) | undefined
}

/** @since 0.1.0 @category models */
export interface Service {
  /** Every command run or spawned so far, in order. */
  readonly commands: Effect.Effect<ReadonlyArray<ProcessRunner.Command>>
}

/**
 * What the scripted runner recorded.
 *
 * @since 0.1.0
 * @category services
 */
export class ScriptedProcesses extends Context.Service<ScriptedProcesses, Service>()("@condukt/testing/ScriptedProcesses") {}

/**
 * Every command run or spawned so far, in order.
 *
 * @since 0.1.0
 * @category combinators
 */
export const commands: Effect.Effect<ReadonlyArray<ProcessRunner.Command>, never, ScriptedProcesses> = ScriptedProcesses.use(
  (recorded) => recorded.commands
)

// ---------------------------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------------------------

const encoder = new TextEncoder()
const decoder = new TextDecoder()

const failed = (command: ProcessRunner.Command, reason: ProcessRunner.Reason) => new ProcessRunner.ProcessRunnerError({ file: command.file, reason })

const isReason = (answer: Answer): answer is ProcessRunner.Reason => "_tag" in answer

const answered = (command: ProcessRunner.Command, answer: Answer): Effect.Effect<ProcessRunner.RunResult, ProcessRunner.ProcessRunnerError> =>
  isReason(answer)
    ? Effect.fail(failed(command, answer))
    : Effect.succeed({
      output: answer.output ?? "",
      exitCode: answer.exitCode ?? 0,
      truncated: answer.truncated ?? false,
      stderr: answer.stderr ?? ""
    })

/** Reads and discards: a process with nothing to say. */
const silent = (): Behaviour => () => {}

const spawned = (
  script: Script,
  command: ProcessRunner.Command,
  handlers: ProcessRunner.Handlers,
  pid: number
): Effect.Effect<ProcessRunner.Process, ProcessRunner.ProcessRunnerError, Scope.Scope> => {
  let exited = false
  const process: ScriptedProcess = {
    stdout: (text) => {
      if (!exited) handlers.stdout(encoder.encode(text))
    },
    stderr: (text) => {
      if (!exited) handlers.stderr(encoder.encode(text))
    },
    exit: (exitCode) => {
      if (exited) return
      exited = true
      handlers.exit(exitCode)
      handlers.close()
    }
  }
  const behaviour = (script.spawn ?? silent)(command, process)
  if (typeof behaviour !== "function") return Effect.fail(failed(command, behaviour))
  return Effect.as(
    // The scope's end is the caller's EOF: the process exits at once, as a server does on EOF.
    Effect.addFinalizer(() => Effect.sync(() => process.exit(0))),
    {
      pid,
      write: (chunk) => {
        if (exited) return false
        behaviour(typeof chunk === "string" ? chunk : decoder.decode(chunk))
        return true
      }
    }
  )
}

/**
 * A scripted runner and its record, as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (script: Script = {}): Layer.Layer<ProcessRunner.ProcessRunner | ScriptedProcesses> =>
  Layer.effectContext(Effect.gen(function*() {
    const recorded = yield* Ref.make<ReadonlyArray<ProcessRunner.Command>>([])
    let pids = 1000
    const record = (command: ProcessRunner.Command) => Ref.update(recorded, (all) => [...all, command])
    const runner = ProcessRunner.ProcessRunner.of({
      run: (command) => Effect.andThen(record(command), Effect.suspend(() => answered(command, script.run?.(command) ?? {}))),
      spawn: (command, handlers) => Effect.andThen(record(command), Effect.suspend(() => spawned(script, command, handlers, ++pids)))
    })
    return Context.make(ProcessRunner.ProcessRunner, runner).pipe(
      Context.add(ScriptedProcesses, ScriptedProcesses.of({ commands: Ref.get(recorded) }))
    )
  }))

import { assert, describe, it } from "@effect/vitest"
import { ProcessRunner } from "@condukt/core"
import { Effect, Exit, Scope } from "effect"
import * as ScriptedProcesses from "../src/ScriptedProcesses.ts"

const decoder = new TextDecoder()

/** Handlers that keep what a spawned process said, and how it ended. */
const listener = () => {
  const heard: Array<string> = []
  const handlers: ProcessRunner.Handlers = {
    stdout: (chunk) => heard.push(`out:${decoder.decode(chunk)}`),
    stderr: (chunk) => heard.push(`err:${decoder.decode(chunk)}`),
    exit: (exitCode) => heard.push(`exit:${exitCode}`),
    close: () => heard.push("close")
  }
  return { heard, handlers }
}

describe("ScriptedProcesses", () => {
  it.effect("run answers what the script says and records the command as described", () =>
    Effect.gen(function*() {
      const runner = yield* ProcessRunner.ProcessRunner
      const git = ProcessRunner.make("git", ["status", "--short"], { cwd: "/repo", env: { GH_TOKEN: "t" }, timeout: "5 seconds" })
      const result = yield* runner.run(git)
      assert.deepStrictEqual(result, { output: " M a.ts\n", exitCode: 0, truncated: false, stderr: "" })
      const other = yield* runner.run(ProcessRunner.make("true"))
      assert.deepStrictEqual(other, { output: "", exitCode: 0, truncated: false, stderr: "" })
      assert.deepStrictEqual(yield* ScriptedProcesses.commands, [git, ProcessRunner.make("true")])
    }).pipe(Effect.provide(ScriptedProcesses.layer({
      run: (command) => command.file === "git" ? { output: " M a.ts\n" } : {}
    }))))

  it.effect("a reason for an answer fails the run with ProcessRunnerError carrying it", () =>
    Effect.gen(function*() {
      const runner = yield* ProcessRunner.ProcessRunner
      const missing = yield* Effect.flip(runner.run(ProcessRunner.make("gh")))
      assert.strictEqual(missing.message, "Cannot run gh: command not found")
      const slow = yield* Effect.flip(runner.run(ProcessRunner.make("sleep", ["9"])))
      assert.deepStrictEqual(slow.reason, new ProcessRunner.TimedOut({ timeoutMs: 100, output: "so far", truncated: false }))
      assert.strictEqual(slow.message, "sleep timed out after 100ms")
    }).pipe(Effect.provide(ScriptedProcesses.layer({
      run: (command) =>
        command.file === "gh"
          ? new ProcessRunner.SpawnFailed({ description: "command not found" })
          : new ProcessRunner.TimedOut({ timeoutMs: 100, output: "so far", truncated: false })
    }))))

  it.effect("a spawned process reads what is written, answers on stdout and stderr, and exits when it says", () =>
    Effect.gen(function*() {
      const runner = yield* ProcessRunner.ProcessRunner
      const { heard, handlers } = listener()
      const process = yield* runner.spawn(ProcessRunner.make("server"), handlers)
      assert.isTrue(process.write("ping\n"))
      assert.isTrue(process.write(new TextEncoder().encode("quit\n")))
      assert.isFalse(process.write("late\n"))
      assert.deepStrictEqual(heard, ["out:pong\n", "err:bye\n", "exit:3", "close"])
      assert.deepStrictEqual(yield* ScriptedProcesses.commands, [ProcessRunner.make("server")])
    }).pipe(Effect.provide(ScriptedProcesses.layer({
      spawn: (_command, process) => (input) => {
        if (input === "ping\n") process.stdout("pong\n")
        if (input === "quit\n") {
          process.stderr("bye\n")
          process.exit(3)
        }
      }
    }))))

  it.effect("closing the spawn's scope ends its input: the process exits with 0", () =>
    Effect.gen(function*() {
      const runner = yield* ProcessRunner.ProcessRunner
      const { heard, handlers } = listener()
      const scope = yield* Scope.make()
      const process = yield* Scope.provide(runner.spawn(ProcessRunner.make("server"), handlers), scope)
      assert.deepStrictEqual(heard, [])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(heard, ["exit:0", "close"])
      assert.isFalse(process.write("after\n"))
    }).pipe(Effect.provide(ScriptedProcesses.layer())))

  it.effect("a SpawnFailed behaviour fails the spawn", () =>
    Effect.gen(function*() {
      const runner = yield* ProcessRunner.ProcessRunner
      const error = yield* Effect.flip(runner.spawn(ProcessRunner.make("nope"), listener().handlers))
      assert.strictEqual(error.message, "Cannot run nope: permission denied")
    }).pipe(Effect.provide(ScriptedProcesses.layer({ spawn: () => new ProcessRunner.SpawnFailed({ description: "permission denied" }) }))))
})

/**
 * The Node runner on real processes: the environment it builds, where commands run, and a spawned
 * group that dies whole (grandchildren included) when its scope closes, politely or not.
 */
import { assert, describe, it } from "@effect/vitest"
import { Processes } from "@condukt/testing"
import { Effect, Exit, Queue, Scope } from "effect"
import * as os from "node:os"
import * as NodeProcessRunner from "../../src/processRunner/Node.ts"
import * as ProcessRunner from "@condukt/core/ProcessRunner"

const runner = NodeProcessRunner.make()

/** Spawns `script` under sh in a scope of its own; each stdout line arrives on the queue. */
const spawnSh = (script: string) =>
  Effect.gen(function*() {
    const lines = yield* Queue.unbounded<string>()
    const exits = yield* Queue.unbounded<number>()
    const scope = yield* Scope.make()
    const decoder = new TextDecoder()
    const child = yield* Scope.provide(
      runner.spawn(ProcessRunner.make("sh", ["-c", script], { cwd: "." }), {
        stdout: (chunk) => decoder.decode(chunk).split("\n").filter((l) => l !== "").forEach((l) => Queue.offerUnsafe(lines, l)),
        stderr: () => {},
        exit: (code) => Queue.offerUnsafe(exits, code),
        close: () => {}
      }),
      scope
    )
    return { child, lines, exits, scope }
  })

describe("NodeProcessRunner", () => {
  it.live("runs with the host allow-list, the passed-through host variables and the command's env, nothing else", () =>
    Effect.gen(function*() {
      process.env.CONDUKT_RUNNER_TEST_A = "a"
      process.env.CONDUKT_RUNNER_OTHER = "hidden"
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          delete process.env.CONDUKT_RUNNER_TEST_A
          delete process.env.CONDUKT_RUNNER_OTHER
        })
      )
      const result = yield* runner.run(ProcessRunner.make("env", [], { passHost: ["CONDUKT_RUNNER_TEST_*"], env: { GIVEN: "1", TERM: "xterm" } }))
      const names = result.output.trim().split("\n").map((line) => line.split("=")[0]).sort()
      const host = ["PATH", "HOME", "USER", "LOGNAME", "HOSTNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TMP", "TEMP"]
        .filter((name) => process.env[name] !== undefined)
      assert.deepStrictEqual(names, [...host, "CONDUKT_RUNNER_TEST_A", "GIT_PAGER", "GIVEN", "PAGER", "TERM"].sort())
      assert.include(result.output, "TERM=xterm\n")
    }))

  it.live("runs in the home directory without a cwd, and a relative cwd from the process's", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* runner.run(ProcessRunner.make("pwd"))).output, `${os.homedir()}\n`)
      assert.strictEqual((yield* runner.run(ProcessRunner.make("pwd", [], { cwd: "." }))).output, `${process.cwd()}\n`)
    }))

  it.live("a timeout fails with TimedOut and what was printed; a missing file with SpawnFailed", () =>
    Effect.gen(function*() {
      const slow = yield* Effect.flip(runner.run(ProcessRunner.make("sh", ["-c", "echo started; exec sleep 1000"], { timeout: "200 millis" })))
      assert.deepStrictEqual(slow.reason, new ProcessRunner.TimedOut({ timeoutMs: 200, output: "started\n", truncated: false }))
      const missing = yield* Effect.flip(runner.run(ProcessRunner.make("condukt-no-such-command")))
      assert.strictEqual(missing.message, "Cannot run condukt-no-such-command: command not found")
      const spawned = yield* Effect.flip(Effect.scoped(runner.spawn(ProcessRunner.make("condukt-no-such-command"), {
        stdout: () => {},
        stderr: () => {},
        exit: () => {},
        close: () => {}
      })))
      assert.strictEqual(spawned.message, "Cannot run condukt-no-such-command: command not found")
    }))

  it.live("a spawned process reads stdin and writes stdout; closing its scope ends it with EOF", () =>
    Effect.gen(function*() {
      const { child, lines, exits, scope } = yield* spawnSh("while read line; do echo \"got $line\"; done; exit 7")
      assert.isTrue(child.write("one\n"))
      assert.strictEqual(yield* Queue.take(lines), "got one")
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* Queue.take(exits), 7)
      assert.isFalse(child.write("late\n"))
    }))

  it.live("closing the scope kills the whole group, a grandchild that ignores EOF and SIGTERM included", () =>
    Effect.gen(function*() {
      const { child, lines, scope } = yield* spawnSh("trap '' TERM; sleep 1000 & echo $!; while :; do sleep 1; done")
      const grandchild = Number(yield* Queue.take(lines))
      yield* Scope.close(scope, Exit.void)
      yield* Processes.awaitDeath(child.pid)
      yield* Processes.awaitDeath(grandchild)
    }))
})

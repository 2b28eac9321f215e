/**
 * What the `condukt run --durable` tests share: a workflow of three cmd steps whose second waits
 * (until a file `resume` exists) in a `sleep` whose pid it writes, one whose second fails until a
 * file `marker` exists (then waits the same way), the steps' run counts (files
 * the steps append to), and the real CLI started as a child process (Node itself, not the shell
 * shim in front of it, so a signal reaches the CLI and its pid is the one a lease names).
 */
import { Processes } from "@condukt/testing"
import { assert } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { root } from "../../../test/support/exec.ts"

export const env = { PATH: `${path.join(root, "node_modules/.bin")}:/usr/bin:/bin`, HOME: os.tmpdir() }

/**
 * A cmd step that counts its runs in `<name>.count`; until a file `resume` exists it then waits
 * (a `sleep` whose pid it writes to `sleeper.pid`, for the test to wait on and end), else prints `name`.
 */
export const hangingCmd = (name: string, needs: ReadonlyArray<string>) => `  cmd "${name}" {
    needs = ${JSON.stringify(needs)}
    argv = ["sh", "-c", "echo run >> ${name}.count; if [ ! -f resume ]; then sleep 300 & echo $! > sleeper.pid; wait; fi; echo ${name}"]
  }
`

export const THREE = `workflow "three" {
  cmd "one" {
    argv = ["sh", "-c", "echo run >> one.count; echo one"]
  }
${hangingCmd("two", ["one"])}  cmd "three" {
    needs = ["two"]
    argv = ["sh", "-c", "echo run >> three.count; echo three"]
  }
  output = "\${task.one.stdout}\${task.two.stdout}\${task.three.stdout}"
}
`

/**
 * Three cmd steps whose second fails (its output passes its `max_output_bytes`) until a file
 * `marker` exists, then waits as `hangingCmd`'s does until a file `resume` exists; each step
 * counts its runs.
 */
export const FLAKY = `workflow "flaky" {
  cmd "one" {
    argv = ["sh", "-c", "echo run >> one.count; echo one"]
  }
  cmd "two" {
    needs = ["one"]
    max_output_bytes = 16
    argv = ["sh", "-c", "echo run >> two.count; if [ ! -f marker ]; then echo more than two may say; exit 0; fi; if [ ! -f resume ]; then sleep 300 & echo $! > sleeper.pid; wait; fi; echo two"]
  }
  cmd "three" {
    needs = ["two"]
    argv = ["sh", "-c", "echo run >> three.count; echo three"]
  }
  output = "\${task.one.stdout}\${task.two.stdout}\${task.three.stdout}"
}
`

/** What step two of FLAKY fails with while `marker` is missing. */
export const FLAKY_FAILURE = "step two: the output of sh passed 16 bytes (max_output_bytes); raise max_output_bytes on the step, " +
  "or write the output to a file and read what you need"

/** How many times each step ran, from the files the steps append to. */
export const counts = (dir: string, names: ReadonlyArray<string>) =>
  Object.fromEntries(names.map((name) => {
    const file = path.join(dir, `${name}.count`)
    return [name, fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").length - 1 : 0]
  }))

/** A CLI process started by `spawn`: its pid, what it printed so far, and its end. */
export interface Started {
  readonly pid: number
  readonly stdout: () => string
  readonly stderr: () => string
  /** Its exit code and signal, once it has ended and its output is read. */
  readonly exited: Effect.Effect<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
}

/**
 * `condukt <args>` started in `dir` with exactly `processEnv`; killed with the scope if it is
 * still running then (a test that failed half-way), with the step it waits in.
 */
export const spawn = (dir: string, args: ReadonlyArray<string>, processEnv: Record<string, string>): Effect.Effect<Started, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const node = path.join(root, "node_modules/node/bin/node")
      const bin = path.join(root, "packages/cli/src/bin.ts")
      const cli = child.spawn(node, [bin, ...args], { cwd: dir, env: processEnv, stdio: ["ignore", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      cli.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
      cli.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
        cli.once("close", (code, signal) => resolve({ code, signal }))
      })
      return { cli, started: { pid: cli.pid!, stdout: () => stdout, stderr: () => stderr, exited: Effect.promise(() => closed) } }
    }),
    ({ cli }) =>
      Effect.sync(() => {
        if (cli.exitCode !== null || cli.signalCode !== null) return
        cli.kill("SIGKILL")
        const sleeper = path.join(dir, "sleeper.pid")
        const pid = fs.existsSync(sleeper) ? Number(fs.readFileSync(sleeper, "utf8")) : 0
        if (pid > 0) process.kill(pid, "SIGKILL")
      })
  ).pipe(Effect.map(({ started }) => started))

/** Ends the step waiting in `dir` (its `sleep`), so the step goes on; its pid file is removed. */
export const endSleeper = (dir: string) =>
  Effect.gen(function*() {
    const sleeper = yield* Processes.awaitPidFile(path.join(dir, "sleeper.pid"))
    fs.rmSync(path.join(dir, "sleeper.pid"))
    process.kill(sleeper, "SIGKILL")
    yield* Processes.awaitDeath(sleeper)
  })

/** The lease (seconds) of a run `runKilled` kills: how long it keeps the run refused after its death. */
export const KILLED_LEASE = 1

/**
 * `condukt run <args>` in `dir` with a lease of `KILLED_LEASE` seconds, SIGKILLed once its step
 * has written sleeper.pid; the sleeper is ended too. Returns once the dead process's lease has
 * lapsed (it renewed it last before it died; the lease is on this host's clock, SQLite's or the
 * local Postgres's), with what it printed on stderr and the run id its first line names.
 */
export const runKilled = (dir: string, args: ReadonlyArray<string>, processEnv: Record<string, string>) =>
  Effect.gen(function*() {
    const cli = yield* spawn(dir, ["run", ...args], { ...processEnv, CONDUKT_DURABLE_LEASE: String(KILLED_LEASE) })
    const sleeper = yield* Processes.awaitPidFile(path.join(dir, "sleeper.pid"))
    process.kill(cli.pid, "SIGKILL")
    assert.strictEqual((yield* cli.exited).signal, "SIGKILL")
    process.kill(sleeper, "SIGKILL")
    yield* Processes.awaitDeath(sleeper)
    fs.rmSync(path.join(dir, "sleeper.pid"))
    yield* Effect.sleep(KILLED_LEASE * 1000 + 250)
    const stderr = cli.stderr()
    const runId = /^run ([0-9a-f]{16}) /.exec(stderr)?.[1]
    assert.isDefined(runId, stderr)
    return { stderr, runId: runId!, pid: cli.pid }
  })

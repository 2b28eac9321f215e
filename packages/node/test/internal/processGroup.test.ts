/**
 * processGroup against real processes: exit codes, merged output, cwd and env, the output cap,
 * spawn failures, and the one promise that matters most — no process the call started survives
 * it, whether the leader exits, times out or is interrupted.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { chmodSync, readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Writable } from "node:stream"
import { Effect, Fiber } from "effect"
import * as ProcessRunner from "@condukt/core/ProcessRunner"
import * as ProcessGroup from "../../src/internal/processGroup.ts"
import { Processes, TempDir } from "@condukt/testing"

const tempDir = TempDir.make("condukt-pg-")

const bash = (script: string, cwd: string, extra: Partial<ProcessGroup.RunOptions> = {}) =>
  ProcessGroup.run({ file: "bash", args: ["-c", script], cwd, env: ProcessGroup.baseEnv(), ...extra })

/** SIGKILL is delivered asynchronously: wait (bounded) for the process to finish dying (a zombie counts). */
const assertDies = (pid: number) => Processes.awaitDeath(pid)

/** The pid a child wrote to `file`, once the whole line is there. */
const waitForFile = (file: string) => Processes.awaitPidFile(file)

describe("processGroup.run", () => {
  it.live("returns the exit code, or 128 + the signal number", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      assert.strictEqual((yield* bash("exit 0", dir)).exitCode, 0)
      assert.strictEqual((yield* bash("exit 3", dir)).exitCode, 3)
      assert.strictEqual((yield* bash("kill -TERM $$", dir)).exitCode, 143)
    }))

  it.live("merges stdout and stderr in the order they were written", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const script = "echo a; echo b >&2; echo c"
      assert.strictEqual((yield* bash(script, dir)).output, "a\nb\nc\n")
      // Not `<shell> -c …`: the /bin/sh wrapper does the merge.
      const wrapped = yield* ProcessGroup.run({
        file: "bash",
        args: ["--norc", "-c", script],
        cwd: dir,
        env: ProcessGroup.baseEnv()
      })
      assert.strictEqual(wrapped.output, "a\nb\nc\n")
    }))

  it.live("still collects what a shell writes to stderr before the merge (a syntax error)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const result = yield* bash("echo never; if", dir)
      assert.deepStrictEqual(
        [result.output, result.exitCode],
        ["bash: -c: line 2: syntax error: unexpected end of file\n", 2]
      )
    }))

  it.live("passes arguments without shell interpretation", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const result = yield* ProcessGroup.run({
        file: "printf",
        args: ["%s|", "a;b", "$(whoami)", "*", "'q'"],
        cwd: dir,
        env: ProcessGroup.baseEnv()
      })
      assert.deepStrictEqual(result, { output: "a;b|$(whoami)|*|'q'|", exitCode: 0, truncated: false, pid: result.pid, stderr: "" })
    }))

  it.live("runs in the given working directory", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const result = yield* ProcessGroup.run({ file: "pwd", args: ["-P"], cwd: dir, env: ProcessGroup.baseEnv() })
      assert.strictEqual(result.output, `${dir}\n`)
    }))

  it.live("gives the child exactly the environment passed, nothing inherited", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const result = yield* ProcessGroup.run({ file: "/usr/bin/env", args: [], cwd: dir, env: { ONLY: "this one" } })
      assert.strictEqual(result.output, "ONLY=this one\n")
    }))

  it.live("baseEnv keeps the allow-listed host variables and sets the pager variables", () =>
    Effect.sync(() => {
      const env = ProcessGroup.baseEnv()
      assert.strictEqual(env.PATH, process.env.PATH)
      assert.strictEqual(env.TERM, "dumb")
      assert.strictEqual(env.PAGER, "cat")
      assert.strictEqual(env.GIT_PAGER, "cat")
      const allowed = ["PATH", "HOME", "USER", "LOGNAME", "HOSTNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TMP", "TEMP"]
      assert.deepStrictEqual(
        Object.keys(env).filter((name) => !allowed.includes(name)).sort(),
        ["GIT_PAGER", "PAGER", "TERM"]
      )
    }))

  it.live("caps the output, keeps draining, and cuts on a character boundary", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const apart = yield* bash("echo out; echo err >&2; echo more", dir, { stderr: "apart" })
      assert.deepStrictEqual([apart.output, apart.stderr], ["out\nmore\n", "err\n"])
      // 10 MB through a 64 KiB pipe: finishing at all proves the pipe kept being read past the cap.
      const flood = yield* bash("head -c 10000000 /dev/zero | tr '\\0' x", dir, { maxOutputBytes: 5 })
      assert.deepStrictEqual(flood, { output: "xxxxx", exitCode: 0, truncated: true, pid: flood.pid, stderr: "" })
      const split = yield* bash("printf 'a\\303\\251'", dir, { maxOutputBytes: 2 })
      assert.strictEqual(split.output, "a")
      assert.isTrue(split.truncated)
      const exact = yield* bash("printf abc", dir, { maxOutputBytes: 3 })
      assert.deepStrictEqual([exact.output, exact.truncated], ["abc", false])
    }))

  it.live("replaces invalid UTF-8 with U+FFFD", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      assert.strictEqual((yield* bash("printf 'a\\377b'", dir)).output, "a\uFFFDb")
    }))

  it.live("returns when the leader exits and kills the background grandchild it left", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const result = yield* bash("sleep 1000 & echo $!", dir)
      assert.strictEqual(result.exitCode, 0)
      yield* assertDies(Number(result.output))
    }))

  it.live("on timeout, fails with the output so far and leaves no process behind", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const error = yield* Effect.flip(bash("sleep 1000 & echo $!; sleep 1000", dir, { timeoutMs: 1000 }))
      const reason = error.reason
      assert.strictEqual(reason._tag, "TimedOut")
      if (reason._tag !== "TimedOut") return
      assert.strictEqual(reason.timeoutMs, 1000)
      assert.match(reason.output, /^\d+\n$/)
      yield* assertDies(Number(reason.output))
    }))

  it.live("on timeout, a group that ignores SIGTERM is killed after the grace period", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const error = yield* Effect.flip(bash("trap '' TERM; sleep 1000 & echo $!; sleep 1000", dir, { timeoutMs: 500 }))
      const reason = error.reason
      assert.strictEqual(reason._tag, "TimedOut")
      if (reason._tag !== "TimedOut") return
      yield* assertDies(Number(reason.output))
    }))

  it.live("on interruption, kills the whole group before the interruption completes", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pidfile = join(dir, "pid")
      const fiber = yield* Effect.forkChild(bash(`sleep 1000 & echo $! > ${pidfile}; sleep 1000`, dir), {
        startImmediately: true
      })
      const grandchild = yield* waitForFile(pidfile)
      yield* Fiber.interrupt(fiber)
      yield* assertDies(grandchild)
    }))

  it.live("on interruption, a group that ignores SIGTERM still gets SIGKILL", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const pidfile = join(dir, "pid")
      const fiber = yield* Effect.forkChild(bash(`trap '' TERM; sleep 1000 & echo $! > ${pidfile}; sleep 1000`, dir), {
        startImmediately: true
      })
      const grandchild = yield* waitForFile(pidfile)
      yield* Fiber.interrupt(fiber)
      yield* assertDies(grandchild)
    }))

  it.live("fails with SpawnFailed naming a missing executable", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const env = ProcessGroup.baseEnv()
      const missing = yield* Effect.flip(ProcessGroup.run({ file: "condukt-no-such-command", args: [], cwd: dir, env }))
      assert.deepStrictEqual(
        missing,
        new ProcessRunner.ProcessRunnerError({
          file: "condukt-no-such-command",
          reason: new ProcessRunner.SpawnFailed({ description: "command not found" })
        })
      )
      const missingPath = yield* Effect.flip(ProcessGroup.run({ file: "./nope", args: [], cwd: dir, env }))
      assert.strictEqual(missingPath.message, "Cannot run ./nope: no such file")
      const missingShell = yield* Effect.flip(ProcessGroup.run({ file: "/no/such/bash", args: ["-c", "true"], cwd: dir, env }))
      assert.strictEqual(missingShell.message, "Cannot run /no/such/bash: no such file")
    }))

  it.live("fails with SpawnFailed for an argument execve cannot carry", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const error = yield* Effect.flip(ProcessGroup.run({ file: "printf", args: ["a\0b"], cwd: dir, env: ProcessGroup.baseEnv() }))
      assert.strictEqual(error.message, "Cannot run printf: an argument contains a NUL byte")
    }))

  it.live("fails with SpawnFailed for a file that is not executable", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      writeFileSync(join(dir, "script"), "#!/bin/sh\necho hi\n")
      chmodSync(join(dir, "script"), 0o644)
      const error = yield* Effect.flip(ProcessGroup.run({ file: "./script", args: [], cwd: dir, env: ProcessGroup.baseEnv() }))
      assert.strictEqual(error.message, "Cannot run ./script: permission denied")
    }))

  it.live("fails with SpawnFailed naming a missing working directory", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const cwd = join(dir, "missing")
      const env = ProcessGroup.baseEnv()
      const viaShell = yield* Effect.flip(ProcessGroup.run({ file: "bash", args: ["-c", "true"], cwd, env }))
      assert.strictEqual(viaShell.message, `Cannot run bash: working directory ${cwd} does not exist`)
      const viaWrapper = yield* Effect.flip(ProcessGroup.run({ file: "ls", args: [], cwd, env }))
      assert.strictEqual(viaWrapper.message, `Cannot run ls: working directory ${cwd} does not exist`)
    }))
})

/** Spawns what `run` would for `options`, sends the word on descriptor 3 or only closes it; the exit code. */
const spawnLine = (options: ProcessGroup.RunOptions, word: boolean) =>
  Effect.flatMap(ProcessGroup.commandLine(options), (line) =>
    Effect.callback<number>((resume) => {
      const child = spawn(line.file, [...line.args], { cwd: options.cwd, env: options.env, stdio: ["ignore", "ignore", "ignore", "pipe"] })
      child.once("exit", (code) => resume(Effect.succeed(code ?? -1)))
      const listed = child.stdio[3] as Writable
      listed.on("error", () => {})
      listed.end(word ? "\n" : "")
    }))

describe("processGroup, the wait for the listing", () => {
  it.live("a command runs only once its program says its group is listed; told nothing (its program dead), it exits 125 having run nothing", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const env = ProcessGroup.baseEnv()
      const forms = (marker: string): ReadonlyArray<ProcessGroup.RunOptions> => [
        { file: "bash", args: ["-c", `echo ran > ${marker}-shell`], cwd: dir, env },
        { file: "touch", args: [`${marker}-file`], cwd: dir, env },
        { file: "touch", args: [`${marker}-apart`], cwd: dir, env, stderr: "apart" }
      ]
      for (const options of forms("dead")) assert.strictEqual(yield* spawnLine(options, false), 125)
      for (const options of forms("listed")) assert.strictEqual(yield* spawnLine(options, true), 0)
      assert.deepStrictEqual(readdirSync(dir).sort(), ["listed-apart", "listed-file", "listed-shell"])
    })))
})

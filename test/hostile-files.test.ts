/**
 * Hostile files through the real tools, under the liveness probe: named pipes (issue 13.3),
 * endless devices (13.4) and a 400 MB text file (13.5), on a LocalSandbox and on a VirtualSandbox
 * through a host mount. Each call must answer with its exact text while the event loop keeps
 * ticking (longest gap < 2 s), a bystander session keeps completing runs, and memory stays under
 * 1 GiB of peak RSS (the fixed code reads a few 256 KiB chunks at a time; before the fix a 400 MB
 * read peaked at 2.7 GB and /dev/zero grew without bound).
 */
import { Sandbox, Tools } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { probe } from "./support/liveness.ts"

const { Edit, Read, Write } = Tools

/** Peak RSS allowed while a hostile call runs: far above what chunked reads need, far below 2.7 GB. */
const MAX_RSS_BYTES = 1024 ** 3

/** A temporary host directory, removed with the test's scope. */
const hostDir = Effect.acquireRelease(
  Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-hostile-")))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const local = (cwd: string) =>
  Effect.map(Layer.build(LocalSandbox.layer({ cwd }).pipe(Layer.provide(Condukt.layer))), (c) => Context.get(c, Sandbox.Sandbox))

const virtualWithMount = (host: string) =>
  VirtualSandbox.make({ mounts: [{ hostPath: host, path: "/mnt/host", mode: "read-write" }] })

/** What the model reads from one call: the result, or the failure's text. */
const answer = <A, R>(effect: Effect.Effect<A, string | { readonly message: string }, R>) =>
  Effect.match(effect, {
    onFailure: (error) => `Error: ${typeof error === "string" ? error : error.message}`,
    onSuccess: (result): A | string => result
  })

const assertLively = (liveness: { maxGapMs: number; trivialRuns: number; peakRssBytes: number }) => {
  assert.isBelow(liveness.maxGapMs, 2000)
  assert.isAbove(liveness.trivialRuns, 0)
  assert.isBelow(liveness.peakRssBytes, MAX_RSS_BYTES)
}

/** `mib` MiB of 64-byte lines, written in 1 MiB blocks; returns the line count. */
const writeLines = (file: string, mib: number) => {
  const line = "x".repeat(63) + "\n"
  const block = Buffer.from(line.repeat((1024 * 1024) / 64))
  const fd = fs.openSync(file, "w")
  for (let i = 0; i < mib; i++) fs.writeSync(fd, block)
  fs.closeSync(fd)
  return (mib * 1024 * 1024) / 64
}

describe("hostile files", () => {
  it.live("a named pipe is refused by Read, Edit and Write on Local, six times over, and file tools and exec still work", () =>
    Effect.gen(function*() {
      const dir = yield* hostDir
      execFileSync("mkfifo", [path.join(dir, "pipe")])
      fs.writeFileSync(path.join(dir, "ok.txt"), "fine\n")
      const sandbox = yield* local(dir)
      const context = ToolCall.context(sandbox)
      const liveness = yield* probe(Effect.gen(function*() {
        const refusals = yield* Effect.forEach(
          [1, 2, 3, 4, 5, 6],
          () => answer(ToolCall.run(Read, { path: "pipe" }, context)),
          { concurrency: "unbounded" }
        )
        const edit = yield* answer(ToolCall.run(Edit, { path: "pipe", old_text: "a", new_text: "b" }, context))
        const write = yield* answer(ToolCall.run(Write, { path: "pipe", content: "x" }, context))
        const after = yield* answer(ToolCall.run(Read, { path: "ok.txt" }, context))
        const exec = yield* sandbox.exec("echo alive")
        return { refusals, edit, write, after, exec: exec.output }
      }))
      assert.deepStrictEqual(liveness.result, {
        refusals: Array(6).fill("Error: Cannot read pipe: it is a named pipe, not a regular file"),
        edit: "Error: Cannot edit pipe: it is a named pipe, not a regular file",
        write: "Error: Cannot write to pipe: it is a named pipe, not a regular file",
        after: "fine\n",
        exec: "alive\n"
      })
      assertLively(liveness)
    }))

  it.live("a named pipe in a host mount is refused by Read, Write and cat on Virtual, and the sandbox still works", () =>
    Effect.gen(function*() {
      const dir = yield* hostDir
      execFileSync("mkfifo", [path.join(dir, "pipe")])
      fs.writeFileSync(path.join(dir, "ok.txt"), "fine\n")
      const sandbox = yield* virtualWithMount(dir)
      const context = ToolCall.context(sandbox)
      const liveness = yield* probe(Effect.gen(function*() {
        const refusals = yield* Effect.forEach(
          [1, 2, 3, 4, 5, 6],
          () => answer(ToolCall.run(Read, { path: "/mnt/host/pipe" }, context)),
          { concurrency: "unbounded" }
        )
        const write = yield* answer(ToolCall.run(Write, { path: "/mnt/host/pipe", content: "x" }, context))
        const cat = yield* sandbox.exec("cat /mnt/host/pipe; echo x > /mnt/host/pipe; cat /mnt/host/ok.txt")
        return { refusals, write, cat }
      }))
      assert.deepStrictEqual(liveness.result, {
        refusals: Array(6).fill("Error: Cannot read /mnt/host/pipe: it is a named pipe, not a regular file"),
        write: "Error: Cannot write to /mnt/host/pipe: it is a named pipe, not a regular file",
        // just-bash's cat words every read failure so; what matters is that it returns.
        cat: {
          output: "bash: write failed: not a regular file (a named pipe)\n",
          exitCode: 1,
          truncated: false
        }
      })
      assertLively(liveness)
    }))

  it.live("/dev/zero and /dev/urandom are refused by Read on Local and through a mount of /dev on Virtual", () =>
    Effect.gen(function*() {
      const dir = yield* hostDir
      const context = ToolCall.context(yield* local(dir))
      const virtual = ToolCall.context(yield* VirtualSandbox.make({ mounts: [{ hostPath: "/dev", path: "/mnt/dev", mode: "read-only" }] }))
      const liveness = yield* probe(Effect.all([
        answer(ToolCall.run(Read, { path: "/dev/zero" }, context)),
        answer(ToolCall.run(Read, { path: "/dev/urandom" }, context)),
        answer(ToolCall.run(Read, { path: "/mnt/dev/zero" }, virtual)),
        answer(ToolCall.run(Read, { path: "/mnt/dev/urandom" }, virtual))
      ]))
      assert.deepStrictEqual(liveness.result, [
        "Error: Cannot read /dev/zero: it is a character device, not a regular file",
        "Error: Cannot read /dev/urandom: it is a character device, not a regular file",
        "Error: Cannot read /mnt/dev/zero: it is a character device, not a regular file",
        "Error: Cannot read /mnt/dev/urandom: it is a character device, not a regular file"
      ])
      assertLively(liveness)
    }))

  it.live("a 400 MB text file: Read shows its window and counts every line; Edit and Virtual refuse it whole", () =>
    Effect.gen(function*() {
      const dir = yield* hostDir
      const lines = writeLines(path.join(dir, "big.txt"), 400)
      const context = ToolCall.context(yield* local(dir))
      const virtual = ToolCall.context(yield* virtualWithMount(dir))
      const liveness = yield* probe(Effect.all([
        answer(ToolCall.run(Read, { path: "big.txt" }, context)),
        answer(ToolCall.run(Read, { path: "big.txt", offset: 3_000_000, limit: 2 }, context)),
        answer(ToolCall.run(Edit, { path: "big.txt", old_text: "x", new_text: "y" }, context)),
        answer(ToolCall.run(Read, { path: "/mnt/host/big.txt" }, virtual))
      ]))
      const line = "x".repeat(63)
      assert.deepStrictEqual(liveness.result, [
        `(showing lines 1-800 of ${lines}, output truncated)\n\n${Array(800).fill(line).join("\n")}`,
        `(lines 3000000-3000001 of ${lines})\n\n${line}\n${line}`,
        "Error: Cannot edit big.txt: the file is larger than 16777216 bytes",
        "Error: Cannot read /mnt/host/big.txt: the file is larger than 134217728 bytes"
      ])
      assertLively(liveness)
    }))
})

/**
 * Hostile Grep and Glob calls, through the real tools on Local and Virtual, inside the liveness
 * probe: a pattern or a file chosen to stall a backtracking engine, explode a brace expansion or
 * exhaust memory must come back with a plain answer while the event loop keeps ticking and a
 * bystander session keeps completing runs.
 *
 * Bounds asserted on every case: the longest event-loop gap under 2 s, at least one bystander run,
 * and peak RSS under 1.5 GiB (the test process idles around 200–300 MiB; the files here are up to
 * 2 GiB, so reading one whole would cross it).
 */
import { type Sandbox, Tools } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { TempDir, ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { probe } from "./support/liveness.ts"

const maxRssBytes = 1.5 * 1024 * 1024 * 1024

/** A real temporary directory holding `files`, removed with the test's scope. */
const tempDir = (files: Readonly<Record<string, string>> = {}) => TempDir.withFiles(files, "condukt-hostile-")

/**
 * A sparse file of `size` bytes: `head` (over 8 KiB of text, so it is not taken for binary), a
 * hole of NUL bytes, and `tail` at the very end.
 */
const sparseFile = (file: string, head: string, size: number, tail = "") => {
  const fd = fs.openSync(file, "w")
  fs.writeSync(fd, head, 0)
  fs.ftruncateSync(fd, size - Buffer.byteLength(tail))
  if (tail !== "") fs.writeSync(fd, tail, size - Buffer.byteLength(tail))
  fs.closeSync(fd)
}

const filler = "filler line\n".repeat(1000)

const local = (options: LocalSandbox.Options) => Effect.provide(LocalSandbox.make(options), Condukt.layer)

/** Runs the tool call inside the probe and checks the liveness bounds; returns what the model reads. */
const live = (call: Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const { maxGapMs, peakRssBytes, result, trivialRuns } = yield* probe(
      Effect.match(call, { onFailure: (error) => `Error: ${String(error)}`, onSuccess: String })
    )
    assert.isBelow(maxGapMs, 2000)
    assert.isAbove(trivialRuns, 0)
    assert.isBelow(peakRssBytes, maxRssBytes)
    return result
  })

const grep = (sandbox: Sandbox.Service, input: Record<string, unknown>) =>
  live(ToolCall.run(Tools.Grep, input, ToolCall.context(sandbox)))

const glob = (sandbox: Sandbox.Service, input: Record<string, unknown>) =>
  live(ToolCall.run(Tools.Glob, input, ToolCall.context(sandbox)))

const failing = (tool: typeof Tools.Grep | typeof Tools.Glob, sandbox: Sandbox.Service, input: Record<string, unknown>) =>
  live(ToolCall.failure(tool, input, ToolCall.context(sandbox)))

const redos = `${"a".repeat(35)}!\n`
const longName = "a".repeat(60)
const braces = "{a,b}".repeat(22)

const sandboxes: ReadonlyArray<
  readonly [string, (files: Readonly<Record<string, string>>) => Effect.Effect<Sandbox.Service, unknown, Scope.Scope>]
> = [
  ["Local", (files) => Effect.flatMap(tempDir(files), (cwd) => local({ cwd }))],
  ["Virtual", (files) => VirtualSandbox.make({ files })]
]

describe.each(sandboxes)("hostile patterns on %s", (_name, make) => {
  it.live("Grep ^(a+)+$ on a 35-character line answers at once (13.1)", () =>
    Effect.gen(function*() {
      const sandbox = yield* make({ "redos.txt": redos })
      assert.strictEqual(yield* grep(sandbox, { pattern: "^(a+)+$" }), "No matches for ^(a+)+$")
    }))

  it.live("Glob and Grep's glob filter *a*a*a*a*a*a*a*ab against a 60-character name answer at once (13.2)", () =>
    Effect.gen(function*() {
      const sandbox = yield* make({ [`names/${longName}`]: "x\n" })
      assert.strictEqual(
        yield* glob(sandbox, { pattern: "names/*a*a*a*a*a*a*a*ab" }),
        "No files matched names/*a*a*a*a*a*a*a*ab"
      )
      assert.strictEqual(yield* grep(sandbox, { pattern: "x", glob: "**/*a*a*a*a*a*a*a*ab" }), "No matches for x")
    }))

  it.live("Glob with {a,b} 22 times or {1..10000000} is refused as an invalid pattern (13.2)", () =>
    Effect.gen(function*() {
      const sandbox = yield* make({ "a.txt": "x\n" })
      assert.strictEqual(
        yield* failing(Tools.Glob, sandbox, { pattern: braces }),
        `Glob failed: Invalid pattern ${braces}: more than 256 brace alternatives`
      )
      assert.strictEqual(
        yield* failing(Tools.Glob, sandbox, { pattern: "{1..10000000}" }),
        "Glob failed: Invalid pattern {1..10000000}: more than 256 brace alternatives"
      )
    }))
})

describe("hostile patterns on Local only", () => {
  it.live("Glob {1..10000000} with allowedPaths is refused, not a RangeError (13.2)", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir({ "a.txt": "x\n" })
      const sandbox = yield* local({ cwd, allowedPaths: ["."] })
      assert.strictEqual(
        yield* failing(Tools.Glob, sandbox, { pattern: "{1..10000000}" }),
        "Glob failed: Invalid pattern {1..10000000}: more than 256 brace alternatives"
      )
      assert.strictEqual(
        yield* failing(Tools.Glob, sandbox, { pattern: `src/${braces}` }),
        `Glob failed: Invalid pattern src/${braces}: more than 256 brace alternatives`
      )
    }))

  it.live("Grep finds the first line of a 2 GiB file (13.6)", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      sparseFile(path.join(cwd, "big.log"), `needle\n${filler}`, 2 * 1024 ** 3)
      const sandbox = yield* local({ cwd })
      assert.strictEqual(yield* grep(sandbox, { pattern: "needle" }), "big.log:1: needle")
    }))

  it.live("Grep with a non-literal pattern streams a 600 MB file to its last line (13.6)", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir()
      sparseFile(path.join(cwd, "big.log"), `2024-01-01 start\n${filler}`, 600 * 1000 ** 2, "\n2024-01-02 end\n")
      const sandbox = yield* local({ cwd })
      assert.strictEqual(
        yield* grep(sandbox, { pattern: "[0-9]{4}-[0-9]{2}-[0-9]{2}" }),
        "big.log:1: 2024-01-01 start\nbig.log:1003: 2024-01-02 end"
      )
    }))

  it.live("Grep never opens a FIFO, in a walk or named as its path (13.6)", () =>
    Effect.gen(function*() {
      const cwd = yield* tempDir({ "a.txt": "hello\n" })
      execFileSync("mkfifo", [path.join(cwd, "pipe")])
      const sandbox = yield* local({ cwd })
      assert.strictEqual(yield* grep(sandbox, { pattern: "hello" }), "a.txt:1: hello")
      assert.strictEqual(
        yield* failing(Tools.Grep, sandbox, { pattern: "hello", path: "pipe" }),
        "Grep failed: Cannot search pipe: not a regular file"
      )
    }))
})

describe("hostile files on Virtual", () => {
  it.live("Grep names a mounted file too large to read instead of answering no matches (13.6)", () =>
    Effect.gen(function*() {
      const host = yield* tempDir({ "small.log": "needle\n" })
      sparseFile(path.join(host, "big.log"), `needle\n${filler}`, 2 * 1024 ** 3)
      const sandbox = yield* VirtualSandbox.make({ mounts: [{ hostPath: host, path: "mnt", mode: "read-only" }] })
      assert.strictEqual(
        yield* grep(sandbox, { pattern: "needle", path: "mnt" }),
        "mnt/small.log:1: needle\n\n(skipped 1 file: mnt/big.log (too large))"
      )
      assert.strictEqual(
        yield* grep(sandbox, { pattern: "absent", path: "mnt" }),
        "No matches for absent\n\n(skipped 1 file: mnt/big.log (too large))"
      )
    }))
})

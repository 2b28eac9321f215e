/** Write through a real LocalSandbox: parents created, files overwritten, lines and UTF-8 bytes counted. */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Read } from "@condukt/core/tools/Read"
import { Write } from "@condukt/core/tools/Write"
import { localContext } from "./context.ts"

describe("Write", () => {
  it.effect("creates parent directories and counts lines as Read does, and UTF-8 bytes", () =>
    Effect.gen(function*() {
      const { context, dir } = yield* localContext()
      assert.strictEqual(
        yield* ToolCall.run(Write, { path: "deep/er/notes.txt", content: "héllo\nwörld\n" }, context),
        "Wrote deep/er/notes.txt (2 lines, 14 bytes)"
      )
      assert.strictEqual(readFileSync(join(dir, "deep/er/notes.txt"), "utf8"), "héllo\nwörld\n")
      assert.strictEqual(yield* ToolCall.run(Write, { path: "emoji.txt", content: "😀" }, context), "Wrote emoji.txt (1 lines, 4 bytes)")
      assert.strictEqual(yield* ToolCall.run(Write, { path: "empty.txt", content: "" }, context), "Wrote empty.txt (0 lines, 0 bytes)")
      assert.strictEqual(yield* ToolCall.run(Write, { path: "xy.txt", content: "x\ny\n" }, context), "Wrote xy.txt (2 lines, 4 bytes)")
      assert.strictEqual(yield* ToolCall.run(Read, { path: "xy.txt", offset: 2 }, context), "(lines 2-2 of 2)\n\ny")
      assert.strictEqual(yield* ToolCall.run(Write, { path: "open.txt", content: "x\ny" }, context), "Wrote open.txt (2 lines, 3 bytes)")
    }))

  it.effect("overwrites an existing file", () =>
    Effect.gen(function*() {
      const { context, dir } = yield* localContext({ "f.txt": "old content that is longer\n" })
      assert.strictEqual(yield* ToolCall.run(Write, { path: "f.txt", content: "new" }, context), "Wrote f.txt (1 lines, 3 bytes)")
      assert.strictEqual(readFileSync(join(dir, "f.txt"), "utf8"), "new")
    }))

  it.effect("says why a file cannot be written", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "sub/keep.txt": "" })
      assert.strictEqual(
        yield* ToolCall.failure(Write, { path: "sub", content: "x" }, context),
        "Cannot write to sub: sub is a directory, not a file"
      )
    }))

  it.effect("refuses a named pipe or a device instead of waiting on it", () =>
    Effect.gen(function*() {
      const { context, dir } = yield* localContext()
      execFileSync("mkfifo", [join(dir, "pipe")])
      assert.strictEqual(
        yield* ToolCall.failure(Write, { path: "pipe", content: "x" }, context),
        "Cannot write to pipe: it is a named pipe, not a regular file"
      )
      assert.strictEqual(
        yield* ToolCall.failure(Write, { path: "/dev/null", content: "x" }, context),
        "Cannot write to /dev/null: it is a character device, not a regular file"
      )
    }))

  it.effect("passes the sandbox's sentence on for a path outside the allowed directories", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({}, { confined: true })
      assert.strictEqual(
        yield* ToolCall.failure(Write, { path: "/outside-condukt-test/x.txt", content: "x" }, context),
        "Path /outside-condukt-test/x.txt is outside allowed directories"
      )
    }))
})

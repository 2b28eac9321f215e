/** Edit through a real LocalSandbox: exactly one match edits; every other case says why, file untouched. */
import { execFileSync } from "node:child_process"
import { readFileSync, statSync, truncateSync } from "node:fs"
import { join } from "node:path"
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Edit } from "@condukt/core/tools/Edit"
import { localContext } from "./context.ts"

const source = "function greet() {\n  return \"hello\"\n}\n"

describe("Edit", () => {
  it.effect("replaces the one match and shows the replaced lines as a diff", () =>
    Effect.gen(function*() {
      const { context, dir } = yield* localContext({ "a.ts": source })
      assert.strictEqual(
        yield* ToolCall.run(Edit, { path: "a.ts", old_text: "\"hello\"", new_text: "\"hi\"" }, context),
        "Successfully edited a.ts\n\n```diff\n- \"hello\"\n+ \"hi\"\n```"
      )
      assert.strictEqual(readFileSync(join(dir, "a.ts"), "utf8"), "function greet() {\n  return \"hi\"\n}\n")
      assert.strictEqual(
        yield* ToolCall.run(Edit, { path: "a.ts", old_text: "greet() {\n  return", new_text: "greet(name) {\n  log(name)\n  return" }, context),
        "Successfully edited a.ts\n\n```diff\n- greet() {\n-   return\n+ greet(name) {\n+   log(name)\n+   return\n```"
      )
      assert.strictEqual(readFileSync(join(dir, "a.ts"), "utf8"), "function greet(name) {\n  log(name)\n  return \"hi\"\n}\n")
    }))

  it.effect("hints at exact matching when a short old_text is not found", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "a.ts": source })
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "a.ts", old_text: "  xyz \nmore", new_text: "b" }, context),
        "old_text not found in a.ts. Copy it from the file exactly, whitespace included."
      )
    }))

  it.effect("hints at whitespace when the first line is in the file but the whole text is not", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "a.ts": source })
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "a.ts", old_text: "function greet() {\n    return \"hello\"", new_text: "x" }, context),
        [
          "old_text not found in a.ts.",
          "Its first line is in the file but what follows differs, most often in whitespace:",
          "tabs against spaces, trailing spaces, or line endings. Use the Read tool and copy the passage exactly."
        ].join("\n")
      )
    }))

  it.effect("says the text does not appear when even its first line is absent", () =>
    Effect.gen(function*() {
      const { context, dir } = yield* localContext({ "a.ts": source })
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "a.ts", old_text: "class Greeter {}", new_text: "x" }, context),
        [
          "old_text not found in a.ts.",
          "It does not appear in the file at all. Use the Read tool to see what the file holds now."
        ].join("\n")
      )
      assert.strictEqual(readFileSync(join(dir, "a.ts"), "utf8"), source)
    }))

  it.effect("refuses several matches and leaves the file untouched", () =>
    Effect.gen(function*() {
      const { context, dir } = yield* localContext({ "b.txt": "x = 1\ny = 2\nx = 1\n" })
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "b.txt", old_text: "x = 1", new_text: "x = 3" }, context),
        "Found 2 occurrences of old_text in b.txt. Make the match unique by including more surrounding context."
      )
      assert.strictEqual(readFileSync(join(dir, "b.txt"), "utf8"), "x = 1\ny = 2\nx = 1\n")
    }))

  it.effect("refuses identical texts before touching the file", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "a.ts": source })
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "a.ts", old_text: "greet", new_text: "greet" }, context),
        "No changes made to a.ts. The replacement produced identical content."
      )
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "missing.ts", old_text: "same", new_text: "same" }, context),
        "No changes made to missing.ts. The replacement produced identical content."
      )
    }))

  it.effect("refuses an empty old_text, which would match everywhere", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "a.ts": source })
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "a.ts", old_text: "", new_text: "x" }, context),
        "Invalid arguments for tool Edit: old_text: Expected a value with a length of at least 1"
      )
    }))

  it.effect("says when the file is missing or a directory", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "sub/keep.txt": "" })
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "missing.ts", old_text: "a", new_text: "b" }, context),
        "File not found: missing.ts"
      )
      assert.strictEqual(yield* ToolCall.failure(Edit, { path: "sub", old_text: "a", new_text: "b" }, context), "sub is a directory, not a file")
    }))

  it.effect("refuses a named pipe and a file over 16 MiB, leaving them untouched", () =>
    Effect.gen(function*() {
      const { context, dir } = yield* localContext({ "big.txt": "" })
      execFileSync("mkfifo", [join(dir, "pipe")])
      truncateSync(join(dir, "big.txt"), 16 * 1024 * 1024 + 1)
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "pipe", old_text: "a", new_text: "b" }, context),
        "Cannot edit pipe: it is a named pipe, not a regular file"
      )
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "big.txt", old_text: "a", new_text: "b" }, context),
        "Cannot edit big.txt: the file is larger than 16777216 bytes"
      )
      assert.strictEqual(statSync(join(dir, "big.txt")).size, 16 * 1024 * 1024 + 1)
    }))

  it.effect("says when the file is not UTF-8 text", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "bad.txt": Uint8Array.of(0x41, 0xff, 0xfe, 0x42) })
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "bad.txt", old_text: "A", new_text: "B" }, context),
        "Cannot read bad.txt: the file is not valid UTF-8 text (4 bytes)"
      )
    }))

  it.effect("passes the sandbox's sentence on for a path outside the allowed directories", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({}, { confined: true })
      assert.strictEqual(
        yield* ToolCall.failure(Edit, { path: "/outside-condukt-test/x.txt", old_text: "a", new_text: "b" }, context),
        "Path /outside-condukt-test/x.txt is outside allowed directories"
      )
    }))
})

/** Grep through a real LocalSandbox. */
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Grep } from "@condukt/core/tools/Grep"
import { localContext } from "./context.ts"

const files = {
  "a.txt": "hello\nHello world\nbye\n",
  "sub/b.md": "say hello\nnothing\n",
  ".hidden.txt": "hello from a dotfile\n"
}

describe("Grep", () => {
  it.effect("lists matches as path:line_number: line", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      assert.strictEqual(yield* ToolCall.run(Grep, { pattern: "hel+o" }, context), "a.txt:1: hello\nsub/b.md:1: say hello")
      assert.strictEqual(
        yield* ToolCall.run(Grep, { pattern: "hello", case_sensitive: false }, context),
        "a.txt:1: hello\na.txt:2: Hello world\nsub/b.md:1: say hello"
      )
      assert.strictEqual(yield* ToolCall.run(Grep, { pattern: "hello", glob: "**/*.md" }, context), "sub/b.md:1: say hello")
    }))

  it.effect("searches under path, reporting paths relative to the working directory", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      assert.strictEqual(yield* ToolCall.run(Grep, { pattern: "hello", path: "sub" }, context), "sub/b.md:1: say hello")
      assert.strictEqual(yield* ToolCall.run(Grep, { pattern: "^no", path: "sub/b.md" }, context), "sub/b.md:2: nothing")
      assert.strictEqual(yield* ToolCall.failure(Grep, { pattern: "x", path: "missing" }, context), "Grep failed: File not found: missing")
    }))

  it.effect("keeps the listing within 50 KiB and says so", () =>
    Effect.gen(function*() {
      const line = "x".repeat(1000)
      const { context } = yield* localContext({ "wide.txt": Array(200).fill(line).join("\n") })
      const expected: Array<string> = []
      let bytes = 0
      for (let n = 1; n <= 200; n++) {
        const entry = `wide.txt:${n}: ${line}`
        if (bytes + entry.length + 1 > 51200) break
        expected.push(entry)
        bytes += entry.length + 1
      }
      assert.strictEqual(expected.length, 50)
      assert.strictEqual(yield* ToolCall.run(Grep, { pattern: "x" }, context), `${expected.join("\n")}\n\n(output truncated)`)
    }))

  it.effect("says when nothing matched", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      assert.strictEqual(yield* ToolCall.run(Grep, { pattern: "zebra" }, context), "No matches for zebra")
    }))

  it.effect("says when more lines matched than the limit", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      assert.strictEqual(
        yield* ToolCall.run(Grep, { pattern: "hello", case_sensitive: false, limit: 1 }, context),
        "a.txt:1: hello\n\n(only the first 1 matches are shown; narrow the pattern or raise limit)"
      )
    }))

  it.effect("refuses an invalid regex with the same sentence on every sandbox", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      assert.strictEqual(
        yield* ToolCall.failure(Grep, { pattern: "(unclosed" }, context),
        "Invalid regex: missing closing ): `(unclosed`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences."
      )
      assert.strictEqual(
        yield* ToolCall.failure(Grep, { pattern: "(\\w+) \\1" }, context),
        "Invalid regex: invalid escape sequence: `\\1`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences."
      )
    }))

  it.effect("refuses a glob filter it cannot compile, naming the glob", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "a.ts": "x\n" })
      assert.strictEqual(
        yield* ToolCall.failure(Grep, { pattern: "x", glob: "[z-a]*" }, context),
        "Grep failed: Invalid pattern [z-a]*: invalid character class range"
      )
    }))

  it.effect("refuses absurd limits in the schema", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      for (const limit of [0, -1, 1e9]) {
        assert.strictEqual(
          yield* ToolCall.failure(Grep, { pattern: "x", limit }, context),
          "Invalid arguments for tool Grep: limit: Expected a value between 1 and 10000"
        )
      }
    }))
})

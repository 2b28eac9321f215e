/** Glob through a real LocalSandbox. */
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Glob } from "@condukt/core/tools/Glob"
import { localContext } from "./context.ts"

const files = { "a.ts": "", "b.ts": "", "src/c.ts": "", ".hidden.ts": "", "readme.md": "" }

describe("Glob", () => {
  it.effect("lists the matching paths under a count line", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      assert.strictEqual(
        yield* ToolCall.run(Glob, { pattern: "**/*.ts" }, context),
        "4 match(es) for **/*.ts:\n.hidden.ts\na.ts\nb.ts\nsrc/c.ts"
      )
      assert.strictEqual(yield* ToolCall.run(Glob, { pattern: "*.md" }, context), "1 match(es) for *.md:\nreadme.md")
      assert.strictEqual(yield* ToolCall.run(Glob, { pattern: "*.ts", cwd: "src" }, context), "1 match(es) for *.ts:\nc.ts")
    }))

  it.effect("says when nothing matched", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      assert.strictEqual(yield* ToolCall.run(Glob, { pattern: "**/*.rs" }, context), "No files matched **/*.rs")
    }))

  it.effect("says when more paths matched than the limit", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      assert.strictEqual(
        yield* ToolCall.run(Glob, { pattern: "**/*.ts", limit: 2 }, context),
        "2 match(es) for **/*.ts:\n.hidden.ts\na.ts\n\n(only the first 2 paths are shown; narrow the pattern or raise limit)"
      )
      assert.strictEqual(
        yield* ToolCall.run(Glob, { pattern: "**/*.ts", limit: 4 }, context),
        "4 match(es) for **/*.ts:\n.hidden.ts\na.ts\nb.ts\nsrc/c.ts"
      )
    }))

  it.effect("says why it could not list a directory", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      assert.strictEqual(yield* ToolCall.failure(Glob, { pattern: "*", cwd: "missing" }, context), "Glob failed: File not found: missing")
      assert.strictEqual(
        yield* ToolCall.failure(Glob, { pattern: "*", cwd: "a.ts" }, context),
        "Glob failed: Cannot list files in a.ts: not a directory"
      )
    }))

  it.effect("refuses absurd limits in the schema", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext(files)
      for (const limit of [0, -1, 1e9]) {
        assert.strictEqual(
          yield* ToolCall.failure(Glob, { pattern: "*", limit }, context),
          "Invalid arguments for tool Glob: limit: Expected a value between 1 and 10000"
        )
      }
    }))
})

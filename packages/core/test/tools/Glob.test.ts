/** Glob through a real LocalSandbox, and on a sandbox without glob. */
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Sandbox from "../../src/Sandbox.ts"
import { Glob } from "../../src/tools/Glob.ts"
import { localContext } from "./context.ts"

const files = { "a.ts": "", "b.ts": "", "src/c.ts": "", ".hidden.ts": "", "readme.md": "" }

describe("Glob", () => {
  it("describes itself and takes pattern, cwd and limit", () => {
    assert.strictEqual(Glob.name, "Glob")
    assert.strictEqual(Glob.concurrent, true)
    assert.strictEqual(
      Glob.description,
      "Find files by glob pattern (e.g. **/*.ts). Returns matching paths relative to the search directory, sorted, dotfiles included. Limited to 1000 paths by default."
    )
    assert.deepStrictEqual(Glob.parameters, {
      type: "object",
      properties: {
        pattern: { type: "string", description: "Glob pattern to match (e.g. \"**/*.ts\", \"src/**/*.{ts,tsx}\")" },
        cwd: { type: "string", description: "Base directory to search in (relative to the working directory, or absolute)" },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: 10000,
          description: "Maximum number of paths to return (default 1000, at most 10000)"
        }
      },
      required: ["pattern"],
      additionalProperties: false
    })
  })

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

  it.effect("says so when the sandbox cannot glob", () =>
    Effect.gen(function*() {
      const bare = Sandbox.makeNoop()
      assert.strictEqual(
        yield* ToolCall.failure(Glob, { pattern: "*" }, ToolCall.context(bare)),
        "Glob is not supported by the active sandbox"
      )
    }))
})

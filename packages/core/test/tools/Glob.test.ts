/**
 * Glob's description and parameters, and Glob on a sandbox without glob; Glob on the Node host is
 * tested in packages/node/test/core/tools/Glob.test.ts.
 */
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Sandbox from "../../src/Sandbox.ts"
import { Glob } from "../../src/tools/Glob.ts"

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

  it.effect("says so when the sandbox cannot glob", () =>
    Effect.gen(function*() {
      const bare = Sandbox.makeNoop()
      assert.strictEqual(
        yield* ToolCall.failure(Glob, { pattern: "*" }, ToolCall.context(bare)),
        "Glob is not supported by the active sandbox"
      )
    }))
})

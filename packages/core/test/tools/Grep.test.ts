/**
 * Grep's description and parameters, Grep on a sandbox without grep, and the notes that end its
 * answer (on a sandbox that answers as told); Grep on the Node host is
 * tested in packages/node/test/core/tools/Grep.test.ts.
 */
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Sandbox from "../../src/Sandbox.ts"
import { Grep } from "../../src/tools/Grep.ts"

describe("Grep", () => {
  it("describes itself and takes pattern, path, glob, case_sensitive and limit", () => {
    assert.strictEqual(Grep.name, "Grep")
    assert.strictEqual(Grep.concurrent, true)
    assert.strictEqual(
      Grep.description,
      "Search file contents by regex. Returns matching lines as `path:line_number: line`. The regex is RE2 syntax, as in ripgrep and Go: no lookaround and no backreferences. Filter the file set with `glob` and the search root with `path`. Limited to 200 matches by default."
    )
    assert.deepStrictEqual(Grep.parameters, {
      type: "object",
      properties: {
        pattern: { type: "string", description: "Regular expression to search for (RE2 syntax)" },
        path: { type: "string", description: "Directory or file to search in (default: the working directory)" },
        glob: { type: "string", description: "Glob filter for the files to search (e.g. \"**/*.ts\")" },
        case_sensitive: { type: "boolean", description: "Match case-sensitively (default true)" },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: 10000,
          description: "Maximum number of matches to return (default 200, at most 10000)"
        }
      },
      required: ["pattern"],
      additionalProperties: false
    })
  })

  it.effect("says so when the sandbox cannot grep", () =>
    Effect.gen(function*() {
      const bare = Sandbox.makeNoop()
      assert.strictEqual(
        yield* ToolCall.failure(Grep, { pattern: "x" }, ToolCall.context(bare)),
        "Grep is not supported by the active sandbox"
      )
    }))

  it.effect("past its limit, the list ends with the limit's note, then the skipped files: ten named, the rest counted as N more (issue 44)", () =>
    Effect.gen(function*() {
      const skippedFiles = (n: number) => Array.from({ length: n }, (_, i) => ({ path: `logs/${i + 1}.log`, why: i % 2 === 0 ? "unreadable" : "too large" }))
      // The sandbox finds one match more than the limit asks for, and skips `n` files.
      const answering = (n: number) =>
        ToolCall.context(Sandbox.makeNoop({
          grep: () => Effect.succeed({ matches: [1, 2].map((lineNumber) => ({ path: "a.txt", lineNumber, line: "hello" })), skipped: skippedFiles(n) })
        }))
      const named = skippedFiles(10).map((file) => `${file.path} (${file.why})`).join(", ")
      const listed = "a.txt:1: hello\n\n(only the first 1 matches are shown; narrow the pattern or raise limit)"
      assert.strictEqual(yield* ToolCall.run(Grep, { pattern: "hello", limit: 1 }, answering(10)), `${listed}\n\n(skipped 10 files: ${named})`)
      assert.strictEqual(yield* ToolCall.run(Grep, { pattern: "hello", limit: 1 }, answering(12)), `${listed}\n\n(skipped 12 files: ${named}, 2 more)`)
    }))
})

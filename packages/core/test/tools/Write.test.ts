/**
 * Write's description and parameters, with no sandbox; Write on the Node host is tested in
 * packages/node/test/core/tools/Write.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Write } from "../../src/tools/Write.ts"

describe("Write", () => {
  it("describes itself and takes path and content", () => {
    assert.strictEqual(Write.name, "Write")
    assert.strictEqual(Write.concurrent, false)
    assert.strictEqual(
      Write.description,
      "Puts content into a file, replacing what it held; a missing file, and any missing directories above it, are created."
    )
    assert.deepStrictEqual(Write.parameters, {
      type: "object",
      properties: {
        path: { type: "string", description: "Path to the file to write (relative to the working directory, or absolute)" },
        content: { type: "string", description: "Content to write to the file" }
      },
      required: ["path", "content"],
      additionalProperties: false
    })
  })
})

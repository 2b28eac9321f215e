/**
 * Edit's description and parameters, with no sandbox; Edit on the Node host is tested in
 * packages/node/test/core/tools/Edit.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Edit } from "../../src/tools/Edit.ts"

describe("Edit", () => {
  it("describes itself and takes path, old_text and new_text, old_text non-empty", () => {
    assert.strictEqual(Edit.name, "Edit")
    assert.strictEqual(Edit.concurrent, false)
    assert.strictEqual(
      Edit.description,
      "Changes a file by swapping one passage for another: old_text must occur in the file exactly once, character for character, whitespace included (add neighbouring lines when it is not unique). Answers with a diff of what changed. Only regular files up to 16MB can be edited."
    )
    assert.deepStrictEqual(Edit.parameters, {
      type: "object",
      properties: {
        path: { type: "string", description: "Path to the file to edit (relative to the working directory, or absolute)" },
        old_text: {
          type: "string",
          minLength: 1,
          description: "Exact text to find and replace (must match exactly once, including whitespace)"
        },
        new_text: { type: "string", description: "New text to replace the old text with" }
      },
      required: ["path", "old_text", "new_text"],
      additionalProperties: false
    })
  })
})

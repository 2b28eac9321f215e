/**
 * Read's description and parameters, with no sandbox; Read on the Node host is tested in
 * packages/node/test/core/tools/Read.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Read } from "../../src/tools/Read.ts"

describe("Read", () => {
  it("describes itself with its limits and takes path, offset and limit", () => {
    assert.strictEqual(Read.name, "Read")
    assert.strictEqual(Read.concurrent, true)
    assert.strictEqual(
      Read.description,
      "Shows a file's text exactly as stored (no line numbers added). One call returns at most 2000 lines and 50KB; when you get less than the whole file, a first line says which lines you have and how many there are, and offset and limit fetch the rest. Pictures (jpg, jpeg, png, gif, webp) up to 3584KB come back as images you see. Only regular files can be read (not pipes or devices)."
    )
    assert.deepStrictEqual(Read.parameters, {
      type: "object",
      properties: {
        path: { type: "string", description: "Path to the file to read (relative to the working directory, or absolute)" },
        offset: { type: "integer", minimum: 1, description: "Line number to start reading from (1-indexed)" },
        limit: { type: "integer", minimum: 1, maximum: 2000, description: "Maximum number of lines to read (at most 2000)" }
      },
      required: ["path"],
      additionalProperties: false
    })
  })
})

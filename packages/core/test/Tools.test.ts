/** Tools: the built-in sets, their order, and the package's `Tools` namespace. */
import { assert, describe, it } from "@effect/vitest"
import * as Core from "../src/index.ts"
import * as Tools from "../src/Tools.ts"

describe("Tools", () => {
  it("coding is Read, Bash, Edit, Write, Glob, Grep", () => {
    assert.deepStrictEqual(Tools.coding.map((tool) => tool.name), ["Read", "Bash", "Edit", "Write", "Glob", "Grep"])
    assert.deepStrictEqual(Tools.coding, [Tools.Read, Tools.Bash, Tools.Edit, Tools.Write, Tools.Glob, Tools.Grep])
  })

  it("readOnly is Read, Bash, Glob, Grep", () => {
    assert.deepStrictEqual(Tools.readOnly, [Tools.Read, Tools.Bash, Tools.Glob, Tools.Grep])
  })

  it("runs the tools that change files alone", () => {
    assert.deepStrictEqual(
      Tools.coding.map((tool) => [tool.name, tool.concurrent]),
      [["Read", true], ["Bash", false], ["Edit", false], ["Write", false], ["Glob", true], ["Grep", true]]
    )
  })

  it("every parameter schema is a closed object without references or null", () => {
    for (const tool of Tools.coding) {
      assert.strictEqual(tool.parameters.type, "object", tool.name)
      assert.strictEqual(tool.parameters.additionalProperties, false, tool.name)
      const text = JSON.stringify(tool.parameters)
      for (const banned of ["$ref", "$defs", "null", "anyOf"]) assert.notInclude(text, banned, tool.name)
    }
  })

  it("is exported from the package as the Tools namespace", () => {
    assert.strictEqual(Core.Tools.coding, Tools.coding)
    assert.strictEqual(Core.Tools.Read, Tools.Read)
    assert.strictEqual(Core.Tools.Command({ command: "git" }).name, "Git")
  })
})

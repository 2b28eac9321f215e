import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ProjectInstructions from "../src/ProjectInstructions.ts"
import * as Sandbox from "../src/Sandbox.ts"
import { recording } from "./fixtures/recordingSandbox.ts"

describe("ProjectInstructions", () => {
  it("reads a minimal frontmatter: key: value lines between --- lines, quotes dropped", () => {
    assert.deepStrictEqual(ProjectInstructions.frontmatter("---\nname: a\ndescription: 'b c'\nbad line\n---\nname: body"), {
      name: "a",
      description: "b c"
    })
    assert.deepStrictEqual(ProjectInstructions.frontmatter("name: a"), {})
  })

  it("appends the project prompt to the configured one after a blank line", () => {
    assert.strictEqual(ProjectInstructions.withProject("Be brief.", "## P"), "Be brief.\n\n## P")
    assert.strictEqual(ProjectInstructions.withProject(undefined, "## P"), "## P")
    assert.strictEqual(ProjectInstructions.withProject("Be brief.", undefined), "Be brief.")
    assert.strictEqual(ProjectInstructions.prompt([], []), undefined)
  })

  it.effect("a sandbox that cannot list (a custom backend) is read name by name, as before", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      const sandbox = recording(Sandbox.makeNoop(), calls)
      assert.strictEqual(yield* ProjectInstructions.load(sandbox), undefined)
      assert.deepStrictEqual(calls.sort(), ["glob .agents/skills/*/SKILL.md", "read AGENTS.md", "read CLAUDE.md", "stat ."])
    }))
})

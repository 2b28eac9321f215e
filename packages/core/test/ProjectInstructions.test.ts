import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Agent from "../src/Agent.ts"
import * as Condukt from "@condukt/node/Condukt"
import * as ProjectInstructions from "../src/ProjectInstructions.ts"
import * as LocalSandbox from "@condukt/node/sandbox/Local"
import * as Session from "../src/Session.ts"

const project = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-instructions-"))
    fs.writeFileSync(path.join(dir, "AGENTS.md"), "\n  Run `pnpm test` before you commit.\n\n")
    fs.symlinkSync("AGENTS.md", path.join(dir, "CLAUDE.md"))
    for (const [folder, text] of [
      ["release", "---\nname: release-notes\ndescription: \"Writes the release notes\"\n---\nBody, not inlined."],
      ["triage", "No frontmatter here."]
    ]) {
      fs.mkdirSync(path.join(dir, ".agents/skills", folder!), { recursive: true })
      fs.writeFileSync(path.join(dir, ".agents/skills", folder!, "SKILL.md"), text!)
    }
    return dir
  }),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const expected = [
  "## Project Instructions",
  "",
  ProjectInstructions.PREAMBLE,
  "",
  "Run `pnpm test` before you commit.",
  "",
  "## Available Skills",
  "",
  "- `release-notes` (read `.agents/skills/release/SKILL.md` before using it) - Writes the release notes",
  "- `triage` (read `.agents/skills/triage/SKILL.md` before using it)"
].join("\n")

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

  it.live("a session's system prompt gets AGENTS.md once (CLAUDE.md is a symlink to it) and both skills", () =>
    Effect.gen(function*() {
      const cwd = yield* project
      const agent = Agent.make({ name: "coder", model: "test:x", system: "You fix tests." })
      const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd }) })
      yield* session.run("hi")
      const [request] = yield* TestModel.TestModel.use((recorder) => recorder.requests)
      assert.strictEqual(request!.system, `You fix tests.\n\n${expected}`)
      const plain = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd }), projectInstructions: false })
      yield* plain.run("hi")
      assert.strictEqual((yield* TestModel.TestModel.use((recorder) => recorder.requests))[1]!.system, "You fix tests.")
    }).pipe(Effect.provide(Layer.merge(TestModel.layer([TestModel.text("ok"), TestModel.text("ok")]), Condukt.layer))))
})

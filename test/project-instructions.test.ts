/**
 * Project instructions come through the sandbox, so a Virtual sandbox's files are a project too.
 */
import { Agent, ProjectInstructions, Session } from "@condukt/core"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"

describe("project instructions on a Virtual sandbox", () => {
  it.effect("AGENTS.md and CLAUDE.md with the same text are included once, with both skills", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "coder", model: "test:x" })
      const sandbox = VirtualSandbox.layer({
        files: {
          "AGENTS.md": "Use tabs.\n",
          "CLAUDE.md": "  Use tabs.",
          ".agents/skills/b/SKILL.md": "---\ndescription: Second\n---\n",
          ".agents/skills/a/SKILL.md": "---\nname: first\n---\n"
        }
      })
      const session = yield* Session.start(agent, { sandbox })
      yield* session.run("hi")
      const [request] = yield* TestModel.TestModel.use((recorder) => recorder.requests)
      assert.strictEqual(request!.system, [
        "## Project Instructions",
        "",
        ProjectInstructions.PREAMBLE,
        "",
        "Use tabs.",
        "",
        "## Available Skills",
        "",
        "- `first` (read `.agents/skills/a/SKILL.md` before using it)",
        "- `b` (read `.agents/skills/b/SKILL.md` before using it) - Second"
      ].join("\n"))
    }).pipe(Effect.provide(TestModel.layer([TestModel.text("ok")]))))
})

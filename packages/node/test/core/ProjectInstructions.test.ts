/** ProjectInstructions on a real project directory: sessions on a LocalSandbox, and what a load reads, lists and stats. */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Agent from "@condukt/core/Agent"
import * as ProjectInstructions from "@condukt/core/ProjectInstructions"
import * as Session from "@condukt/core/Session"
import { recording } from "../../../core/test/fixtures/recordingSandbox.ts"
import * as Condukt from "../../src/Condukt.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"

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

  it.live("a changed AGENTS.md is read by the next session started on the same sandbox layer", () =>
    Effect.gen(function*() {
      const cwd = yield* project
      const agent = Agent.make({ name: "coder", model: "test:x" })
      const sandbox = LocalSandbox.layer({ cwd })
      const systemOf = Effect.fnUntraced(function*(index: number) {
        const session = yield* Session.start(agent, { sandbox })
        yield* session.run("hi")
        return (yield* TestModel.TestModel.use((recorder) => recorder.requests))[index]!.system
      })
      assert.include(yield* systemOf(0), "Run `pnpm test` before you commit.")
      // Written just now, and again by the next session: both read it, whatever the clock's tick.
      fs.writeFileSync(path.join(cwd, "AGENTS.md"), "Run `pnpm lint` too.")
      assert.include(yield* systemOf(1), "Run `pnpm lint` too.")
      fs.writeFileSync(path.join(cwd, "AGENTS.md"), "Run `pnpm lint` first")
      assert.include(yield* systemOf(2), "Run `pnpm lint` first")
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(TestModel.layer([TestModel.text("ok"), TestModel.text("ok"), TestModel.text("ok")]), Condukt.layer))))

  it.live("one sandbox reads and lists each path once: later sessions only stat, until something changes", () =>
    Effect.gen(function*() {
      const cwd = yield* project
      // A project checked out an hour ago: nothing modified within RECENT_MS.
      const hourAgo = new Date(Date.now() - 3_600_000)
      for (const file of [".", ".agents/skills", "AGENTS.md", ".agents/skills/release/SKILL.md", ".agents/skills/triage/SKILL.md"]) {
        fs.utimesSync(path.join(cwd, file), hourAgo, hourAgo)
      }
      const local = yield* LocalSandbox.make({ cwd })
      const calls: Array<string> = []
      const sandbox = recording(local, calls)
      const first = yield* ProjectInstructions.load(sandbox)
      assert.strictEqual(first, expected)
      assert.deepStrictEqual(calls.filter((call) => call.startsWith("read")).sort(), [
        "read .agents/skills/release/SKILL.md",
        "read .agents/skills/triage/SKILL.md",
        "read AGENTS.md",
        "read CLAUDE.md"
      ])
      calls.length = 0
      assert.strictEqual(yield* ProjectInstructions.load(sandbox), expected)
      assert.deepStrictEqual(calls.sort(), [
        "stat .",
        "stat .agents/skills",
        "stat .agents/skills/release/SKILL.md",
        "stat .agents/skills/triage/SKILL.md",
        "stat AGENTS.md",
        "stat CLAUDE.md"
      ])
      // An edit moves the modification time: that file (and its link) is read again, no other.
      calls.length = 0
      fs.writeFileSync(path.join(cwd, "AGENTS.md"), "Run `pnpm lint` too.")
      assert.include(yield* ProjectInstructions.load(sandbox), "Run `pnpm lint` too.")
      assert.deepStrictEqual(calls.filter((call) => call.startsWith("read")).sort(), ["read AGENTS.md", "read CLAUDE.md"])
      // A skill removed is gone from the prompt (its folder's removal moved the skills directory).
      fs.rmSync(path.join(cwd, ".agents/skills/triage"), { recursive: true })
      calls.length = 0
      assert.notInclude(yield* ProjectInstructions.load(sandbox), "triage")
      assert.include(calls, "list .agents/skills")
      // A skill whose SKILL.md appears later in a folder listed before is found by its stat.
      fs.mkdirSync(path.join(cwd, ".agents/skills/late"))
      assert.notInclude(yield* ProjectInstructions.load(sandbox), "`late`")
      fs.writeFileSync(path.join(cwd, ".agents/skills/late/SKILL.md"), "---\ndescription: Came later\n---\n")
      assert.include(yield* ProjectInstructions.load(sandbox), "- `late` (read `.agents/skills/late/SKILL.md` before using it) - Came later")
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a directory without instructions costs one listing, then one stat: no file is opened", () =>
    Effect.gen(function*() {
      const cwd = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "condukt-instructions-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      fs.writeFileSync(path.join(cwd, "README.md"), "# Not instructions\n")
      const hourAgo = new Date(Date.now() - 3_600_000)
      fs.utimesSync(cwd, hourAgo, hourAgo)
      const calls: Array<string> = []
      const sandbox = recording(yield* LocalSandbox.make({ cwd }), calls)
      assert.strictEqual(yield* ProjectInstructions.load(sandbox), undefined)
      assert.deepStrictEqual(calls, ["stat .", "list ."])
      calls.length = 0
      assert.strictEqual(yield* ProjectInstructions.load(sandbox), undefined)
      assert.deepStrictEqual(calls, ["stat ."])
      // An AGENTS.md added moves the directory: listed again, and read.
      fs.writeFileSync(path.join(cwd, "AGENTS.md"), "Added.")
      assert.include(yield* ProjectInstructions.load(sandbox), "Added.")
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))
})

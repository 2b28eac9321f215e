import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Validator, Workflow } from "../src/index.ts"
import { endpoint } from "./support.ts"

const examples = path.resolve(import.meta.dirname, "../../../examples/workflows")
// Where pnpm puts server-everything's `mcp-server-everything` for this package.
const bin = path.resolve(import.meta.dirname, "../node_modules/.bin")

const run = (name: string, options: Parameters<typeof Workflow.run>[1] = {}) =>
  Effect.flatMap(Workflow.load(path.join(examples, name)), (document) => Workflow.run(document, options))

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "wf-examples-"))

describe("examples/workflows", () => {
  it.live("every example passes check", () =>
    Effect.gen(function*() {
      const files = fs.readdirSync(examples).filter((file) => file.endsWith(".hcl")).sort()
      assert.deepStrictEqual(files, ["deploy.hcl", "mcp-echo.hcl", "release-notes.hcl", "report-settings.hcl", "word-counts.hcl"])
      // release-notes' agent step needs Anthropic's key: check resolves every agent step's model.
      const withKey = ConfigProvider.layer(ConfigProvider.fromUnknown({ ANTHROPIC_API_KEY: "sk-ant-test" }))
      for (const file of files) yield* Effect.provide(Workflow.check(path.join(examples, file)), withKey)
      const withoutKey = yield* Effect.flip(
        Effect.provide(Workflow.check(path.join(examples, "release-notes.hcl")), ConfigProvider.layer(ConfigProvider.fromUnknown({})))
      )
      assert.deepStrictEqual([withoutKey.reason, withoutKey.message], [
        "ModelUnavailable",
        `${path.join(examples, "release-notes.hcl")}: workflow.steps.notes: anthropic: no API key: set ANTHROPIC_API_KEY or pass apiKey to the provider's layer`
      ])
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("word-counts fans out over files and keeps their order", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const files = ["one two", "three", "four five six"].map((text, i) => {
        const file = path.join(dir, `f${i}.txt`)
        fs.writeFileSync(file, `${text}\n`)
        return file
      })
      const result = yield* run("word-counts.hcl", { inputs: { files } })
      assert.deepStrictEqual(
        result.output,
        files.map((file, i) => ({ ok: true, exit_code: 0, stdout: `${[2, 1, 3][i]} ${file}\n` }))
      )
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("mcp-echo calls server-everything's tools", () =>
    Effect.gen(function*() {
      const saved = process.env["PATH"]
      process.env["PATH"] = `${bin}${path.delimiter}${saved}`
      const result = yield* Effect.ensuring(run("mcp-echo.hcl"), Effect.sync(() => (process.env["PATH"] = saved)))
      assert.deepStrictEqual(result.output, { echoed: "Echo: hello from a workflow", sum: "The sum of 20 and 22 is 42." })
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("release-notes reads the changelog, asks the model, and posts the notes", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const changelog = path.join(dir, "CHANGELOG.md")
      fs.writeFileSync(changelog, "- faster startup\n- fix crash on empty input\n")
      const hook = yield* endpoint(201, { id: 7 })
      const result = yield* run("release-notes.hcl", { inputs: { changelog, webhook: hook.url, version: "2.1.0" }, model: "test:model" })
      assert.deepStrictEqual(result.output, { status: 201, id: 7 })
      const received = yield* Deferred.await(hook.received)
      assert.strictEqual(received.method, "POST")
      assert.strictEqual(received.headers["content-type"], "application/json")
      assert.strictEqual(received.headers["x-release"], "2.1.0")
      assert.deepStrictEqual(JSON.parse(received.body), { version: "2.1.0", notes: "Version 2.1.0 starts faster and no longer crashes on empty input." })
      const requests = yield* Effect.flatMap(Effect.service(TestModel.TestModel), (model) => model.requests)
      const prompt = requests[0]!.messages[0]!
      assert.deepStrictEqual(prompt, {
        _tag: "UserMessage",
        content: "Write the release notes of version 2.1.0 from this changelog:\n- faster startup\n- fix crash on empty input\n"
      })
      fs.rmSync(dir, { recursive: true })
    }).pipe(
      Effect.scoped,
      Effect.provide(TestModel.layer([TestModel.text("Version 2.1.0 starts faster and no longer crashes on empty input.")])),
      Effect.provide(Condukt.layer)
    ))

  it.live("deploy plans on a dry run and deploys otherwise", () =>
    Effect.gen(function*() {
      const dry = yield* run("deploy.hcl")
      assert.deepStrictEqual(dry.output, { deployed: null, announced: null, plan: "would deploy to staging\n" })
      assert.deepStrictEqual(dry.skipped, ["announce", "deploy"])
      const real = yield* run("deploy.hcl", { inputs: { environment: "production", dry_run: false } })
      assert.deepStrictEqual(real.output, {
        deployed: "deployed to production\n",
        announced: "announced: deployed to production\n\n",
        plan: null
      })
      assert.deepStrictEqual(real.skipped, ["plan"])
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("report-settings fills typed defaults and keeps the types", () =>
    Effect.gen(function*() {
      const defaults = yield* run("report-settings.hcl")
      assert.deepStrictEqual(defaults.output, {
        header: `Weekly report (10 items, first tag ops)\n`,
        max_items: 10,
        threshold: 0.75,
        include_drafts: false,
        last_tag: "on call",
        owner: "Ada",
        big_enough: true
      })
      const given = yield* run("report-settings.hcl", { inputs: { max_items: 3, tags: ["db"], include_drafts: true } })
      assert.deepStrictEqual(given.output, {
        header: "Weekly report (3 items, first tag db)\n",
        max_items: 3,
        threshold: 0.75,
        include_drafts: true,
        last_tag: "db",
        owner: "Ada",
        big_enough: false
      })
      const wrong = yield* Effect.flip(run("report-settings.hcl", { inputs: { max_items: "many" } }))
      assert.strictEqual(wrong.message, "inputs do not match their declarations: max_items: got \"many\", expected number")
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("docs/workflows.md: every expression form it lists is accepted and gives the output it shows", () =>
    Effect.gen(function*() {
      const docs = fs.readFileSync(path.resolve(import.meta.dirname, "../../../docs/workflows.md"), "utf8")
      const section = docs.slice(docs.indexOf("## Expressions"), docs.indexOf("## Running"))
      const blocks = [...section.matchAll(/```(hcl|json)\n([\s\S]*?)```/g)].map((match) => match[2]!)
      assert.strictEqual(blocks.length, 4)
      const [hcl, hclOutput, document, documentOutput] = blocks as [string, string, string, string]
      const fromHcl = yield* Effect.flatMap(Workflow.parse(hcl, "expressions.hcl"), (parsed) => Workflow.run(parsed))
      assert.deepStrictEqual(fromHcl.output, JSON.parse(hclOutput))
      const fromJson = yield* Effect.flatMap(Validator.validate(JSON.parse(document), "formats.json"), (parsed) => Workflow.run(parsed))
      assert.deepStrictEqual(fromJson.output, JSON.parse(documentOutput))
      const colon = yield* Effect.flip(Workflow.parse(`workflow "w" {\n  cmd "a" {\n    argv = ["echo", "\${input.x:json}"]\n  }\n}\n`, "w.hcl"))
      assert.strictEqual(colon.reason, "ParseFailed")
    }).pipe(Effect.provide(Condukt.layer)))
})

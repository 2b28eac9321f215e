/**
 * `condukt run` on a workflow with an agent step, as a user runs it: node_modules/.bin/condukt, its
 * model an OpenAI model served by a loopback server replaying a recorded run (two Read calls,
 * then the answer). On a terminal (a pty from util-linux `script`), off one (pipes), and with
 * `--json`: each shows the step's turns, its tokens so far and its tool calls as they start and end.
 * Offline, with no key: `--model-script` answers the step from a JSON list of replies, and `check`
 * passes a workflow whose model has no key, with a warning.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import { execIn, root } from "../../../test/support/exec.ts"
import * as Loopback from "../../providers/test/loopback.ts"
import { condukt, FIRST, notes, SECOND, script, setUp as setUpWith, untimed, untimedEvents } from "./notesRun.ts"

const setUp = setUpWith(notes())

describe("condukt run, an agent step", () => {
  it.live("on a terminal: a marked line per turn (with the tokens so far) and per tool call as it starts and ends", () =>
    Effect.gen(function*() {
      assert.isDefined(script, "the pty test needs util-linux `script` (/usr/bin/script); install util-linux")
      const { dir, env } = yield* setUp
      // -q no banner, -f flush at once, -e the command's exit code, -c the command; the log goes nowhere.
      const result = yield* execIn(dir, script!, ["-qfec", `'${condukt}' run notes.hcl`, "/dev/null"], env)
      assert.strictEqual(result.exitCode, 0)
      // The pty ends lines with \r\n and carries stdout and stderr both, in the order written.
      assert.strictEqual(
        untimed(result.stdout.replaceAll("\r\n", "\n")),
        [
          "notes: 1 steps pending (notes)",
          "  ▸ notes running",
          "    notes: turn 1",
          "    notes: turn 1 done, 168 tokens so far",
          `    notes: ▸ Read ${FIRST} running`,
          `    notes: ▸ Read ${SECOND} running`,
          `    notes: ✓ Read ${FIRST} done in <t>`,
          `    notes: ✓ Read ${SECOND} done in <t>`,
          "    notes: turn 2",
          "    notes: turn 2 done, 439 tokens so far",
          "  ✓ notes done in <t>",
          "finished in <t>",
          "a.txt says alpha; b.txt says beta.",
          ""
        ].join("\n")
      )
    }).pipe(Effect.scoped))

  it.live("off a terminal: the same lines, plain, on stderr", () =>
    Effect.gen(function*() {
      const { dir, env } = yield* setUp
      const result = yield* execIn(dir, condukt, ["run", "notes.hcl"], env)
      assert.deepStrictEqual({ ...result, stderr: untimed(result.stderr) }, {
        stdout: "a.txt says alpha; b.txt says beta.\n",
        stderr: [
          "notes: 1 steps pending (notes)",
          "  notes running",
          "    notes: turn 1",
          "    notes: turn 1 done, 168 tokens so far",
          `    notes: Read ${FIRST} running`,
          `    notes: Read ${SECOND} running`,
          `    notes: Read ${FIRST} done in <t>`,
          `    notes: Read ${SECOND} done in <t>`,
          "    notes: turn 2",
          "    notes: turn 2 done, 439 tokens so far",
          "  notes done in <t>",
          "finished in <t>",
          ""
        ].join("\n"),
        exitCode: 0
      })
    }).pipe(Effect.scoped))

  it.live("--json: the turn and tool events, each with the step's id, between the step's start and end", () =>
    Effect.gen(function*() {
      const { dir, env } = yield* setUp
      const result = yield* execIn(dir, condukt, ["run", "notes.hcl", "--json"], env)
      assert.deepStrictEqual({ stderr: result.stderr, exitCode: result.exitCode }, { stderr: "", exitCode: 0 })
      assert.deepStrictEqual(untimedEvents(result.stdout), [
        { _tag: "RunStarted", workflow: "notes", steps: ["notes"] },
        { _tag: "StepStarted", step: "notes" },
        { _tag: "TurnStarted", step: "notes", turn: 1 },
        { _tag: "TurnFinished", step: "notes", turn: 1, inputTokens: 56, outputTokens: 48, tokensSoFar: 168 },
        { _tag: "ToolStarted", step: "notes", callId: FIRST, tool: "Read" },
        { _tag: "ToolStarted", step: "notes", callId: SECOND, tool: "Read" },
        { _tag: "ToolFinished", step: "notes", callId: FIRST, tool: "Read", ok: true },
        { _tag: "ToolFinished", step: "notes", callId: SECOND, tool: "Read", ok: true },
        { _tag: "TurnStarted", step: "notes", turn: 2 },
        { _tag: "TurnFinished", step: "notes", turn: 2, inputTokens: 260, outputTokens: 11, tokensSoFar: 439 },
        { _tag: "StepFinished", step: "notes" },
        { _tag: "RunFinished", ok: true },
        { _tag: "Output", output: "a.txt says alpha; b.txt says beta." }
      ])
    }).pipe(Effect.scoped))

  it.live("--json: an agent step's output_schema gives the decoded answer as the workflow's output", () =>
    Effect.gen(function*() {
      const workflow = notes(
        "output_schema = {",
        "  type = \"object\"",
        "  properties = { a = { type = \"string\" }, b = { type = \"string\" } }",
        "  required = [\"a\", \"b\"]",
        "}"
      )
      const { dir, env, server } = yield* setUpWith(workflow, Loopback.finalWith("openai-final.sse", `{"a":"alpha",`, `"b":"beta"}`))
      const result = yield* execIn(dir, condukt, ["run", "notes.hcl", "--json"], env)
      assert.deepStrictEqual({ stderr: result.stderr, exitCode: result.exitCode }, { stderr: "", exitCode: 0 })
      assert.deepStrictEqual(untimedEvents(result.stdout).at(-1), { _tag: "Output", output: { a: "alpha", b: "beta" } })
      // OpenAI's native mechanism carried the schema, on both requests.
      assert.deepStrictEqual(server.requests.map((r) => r.body.response_format.json_schema.name), ["answer", "answer"])
    }).pipe(Effect.scoped))

  it.live("offline, with no key: --model-script answers the step (its tool calls run), check warns of the key and passes, run without either fails before any step", () =>
    Effect.gen(function*() {
      const replies = [{ tool_calls: [{ name: "Read", input: { path: "a.txt" } }, { name: "Read", input: { path: "b.txt" } }] }, { text: "a.txt says alpha; b.txt says beta." }]
      const workflow = notes().replace("openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-6")
      const dir = yield* Loopback.tempFiles({ "notes.hcl": workflow, "a.txt": "alpha\n", "b.txt": "beta\n", "replies.json": JSON.stringify(replies), "short.json": "[]", "bad.json": `[{"txt": "hi"}]` })
      const env = { PATH: `${path.join(root, "node_modules/.bin")}:/usr/bin:/bin`, HOME: os.tmpdir() }
      const scripted = yield* execIn(dir, condukt, ["run", "notes.hcl", "--json", "--model-script", "replies.json"], env)
      assert.deepStrictEqual({ stderr: scripted.stderr, exitCode: scripted.exitCode }, { stderr: "", exitCode: 0 })
      const events = untimedEvents(scripted.stdout)
      assert.deepStrictEqual(events.filter((event) => event._tag === "ToolFinished"), [
        { _tag: "ToolFinished", step: "notes", callId: "script_1_1", tool: "Read", ok: true },
        { _tag: "ToolFinished", step: "notes", callId: "script_1_2", tool: "Read", ok: true }
      ])
      assert.deepStrictEqual(events.at(-1), { _tag: "Output", output: "a.txt says alpha; b.txt says beta." })
      const key = "anthropic: no API key: set ANTHROPIC_API_KEY or pass apiKey to the provider's layer"
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["check", "notes.hcl"], env), {
        stdout: "ok: notes.hcl\n",
        stderr: `warning: notes.hcl: workflow.steps.notes: ${key}; run needs it, or --model-script FILE to run offline\n`,
        exitCode: 0
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "notes.hcl"], env), { stdout: "", stderr: `Workflow run failed: step notes: ${key}\n`, exitCode: 1 })
      // A script that runs out fails the step, naming the file; one that is not a list of replies is a usage error.
      const short = yield* execIn(dir, condukt, ["run", "notes.hcl", "--quiet", "--model-script", "short.json"], env)
      assert.deepStrictEqual({ ...short, stderr: short.stderr.includes("short.json has 0 replies; request 1 has none") }, { stdout: "", stderr: true, exitCode: 1 })
      const bad = yield* execIn(dir, condukt, ["run", "notes.hcl", "--quiet", "--model-script", "bad.json"], env)
      assert.deepStrictEqual({ ...bad, stderr: bad.stderr.startsWith("--model-script bad.json: a JSON list of replies") }, { stdout: "", stderr: true, exitCode: 2 })
    }).pipe(Effect.scoped))
})

/**
 * `condukt run` on a workflow whose agent step asks before each Read (`approvals = { ask = ["Read"] }`),
 * its model an OpenAI model served by a loopback server replaying a recorded run (two Read calls,
 * then the answer): asked on a terminal (a pty from util-linux `script`, answered as a person
 * types), `--approve none`, `--json`, and no terminal without the flag.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { execIn } from "../../../test/support/exec.ts"
import type * as Loopback from "../../providers/test/loopback.ts"
import { condukt, FIRST, notes, SECOND, script, setUp as setUpWith, untimed, untimedEvents } from "./notesRun.ts"

const setUp = setUpWith(notes(`approvals = { ask = ["Read"] }`))

/** What the model read for each call, from its second request. */
const toolResults = (server: Loopback.Server) =>
  (server.requests[1]?.body.messages as ReadonlyArray<{ role: string; tool_call_id?: string; content: unknown }>)
    .filter((message) => message.role === "tool")
    .map((message) => [message.tool_call_id, message.content])

/**
 * Runs `command` on a pty and types `answers[i]` once the `i`th question has appeared, as a person
 * at the terminal would; the pty's whole output and the exit code.
 */
const onPty = (dir: string, env: Record<string, string>, command: string, answers: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const typed = yield* Queue.unbounded<Uint8Array>()
    const handle = yield* ChildProcessSpawner.ChildProcessSpawner.use((spawner) =>
      spawner.spawn(
        ChildProcess.make(script!, ["-qfec", command, "/dev/null"], {
          cwd: dir,
          env,
          extendEnv: false,
          forceKillAfter: "2 seconds",
          stdin: { stream: Stream.fromQueue(typed), endOnDone: true }
        })
      )
    )
    let output = ""
    let asked = 0
    yield* handle.stdout.pipe(
      Stream.decodeText(),
      Stream.runForEach((chunk) => {
        output += chunk
        const questions = output.split("[y/n/reason]").length - 1
        const next = answers.slice(asked, questions)
        asked = Math.max(asked, questions)
        return Effect.forEach(next, (answer) => Queue.offer(typed, new TextEncoder().encode(`${answer}\n`)), { discard: true })
      })
    )
    const exitCode = yield* handle.exitCode
    return { output, exitCode: Number(exitCode) }
  }).pipe(Effect.provide(NodeServices.layer))

describe("condukt run, an agent step whose calls ask", () => {
  it.live("on a terminal: each call asks; `y` runs it, a reason denies it and the model reads the reason", () =>
    Effect.gen(function*() {
      assert.isDefined(script, "the pty test needs util-linux `script` (/usr/bin/script); install util-linux")
      const { dir, env, server } = yield* setUp
      const result = yield* onPty(dir, env, `'${condukt}' run notes.hcl`, ["y", "not b, please"])
      assert.strictEqual(result.exitCode, 0)
      // The pty ends lines with \r\n, carries stdout and stderr both, and echoes what was typed.
      // Each request's record id is a fresh UUIDv7: `<id>`.
      const lines = untimed(result.output.replaceAll("\r\n", "\n")).replace(/approval [0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12},/g, "approval <id>,").split("\n")
      // The first call's result is shown once the batch waits on the second alone: before or after
      // the answer typed for it, as the pty's echo and the run meet (docs/approvals.md: a parked batch shows what finished).
      const firstDone = `    notes: ✓ Read ${FIRST} done in <t>`
      const at = lines.indexOf(firstDone)
      assert.isAbove(at, lines.indexOf("y"))
      assert.isBelow(at, lines.indexOf(`    notes: ✗ Read ${SECOND} answered an error after <t>`))
      assert.strictEqual(
        lines.filter((line) => line !== firstDone).join("\n"),
        [
          "notes: 1 steps pending (notes)",
          "  ▸ notes running",
          "    notes: turn 1",
          "    notes: turn 1 done, 168 tokens so far",
          `    notes: ▸ Read ${FIRST} running`,
          `    notes: ▸ Read ${SECOND} running`,
          `    notes: ? Read ${FIRST} waits for approval: {"path":"a.txt"}`,
          "    notes: approval <id>, rule ask: Read",
          `    notes: allow Read {"path":"a.txt"}? [y/n/reason]`,
          "y",
          `    notes: ? Read ${SECOND} waits for approval: {"path":"b.txt","limit":10}`,
          "    notes: approval <id>, rule ask: Read",
          `    notes: allow Read {"path":"b.txt","limit":10}? [y/n/reason]`,
          "not b, please",
          `    notes: ✗ Read ${SECOND} answered an error after <t>`,
          "    notes: turn 2",
          "    notes: turn 2 done, 439 tokens so far",
          "  ✓ notes done in <t>",
          "finished in <t>",
          "a.txt says alpha; b.txt says beta.",
          ""
        ].join("\n")
      )
      assert.deepStrictEqual(toolResults(server), [[FIRST, "alpha\n"], [SECOND, "Denied by the user: not b, please"]])
    }).pipe(Effect.scoped))

  it.live("--approve none: every call is denied, the model reads why, the run completes", () =>
    Effect.gen(function*() {
      const { dir, env, server } = yield* setUp
      const result = yield* execIn(dir, condukt, ["run", "notes.hcl", "--approve", "none"], env)
      assert.deepStrictEqual({ ...result, stderr: untimed(result.stderr) }, {
        stdout: "a.txt says alpha; b.txt says beta.\n",
        stderr: [
          "notes: 1 steps pending (notes)",
          "  notes running",
          "    notes: turn 1",
          "    notes: turn 1 done, 168 tokens so far",
          `    notes: Read ${FIRST} running`,
          `    notes: Read ${SECOND} running`,
          `    notes: Read ${FIRST} waits for approval: {"path":"a.txt"}`,
          `    notes: Read ${SECOND} waits for approval: {"path":"b.txt","limit":10}`,
          `    notes: Read ${FIRST} answered an error after <t>`,
          `    notes: Read ${SECOND} answered an error after <t>`,
          "    notes: turn 2",
          "    notes: turn 2 done, 439 tokens so far",
          "  notes done in <t>",
          "finished in <t>",
          ""
        ].join("\n"),
        exitCode: 0
      })
      const denial = "Denied by the user: condukt run --approve none denies every call"
      assert.deepStrictEqual(toolResults(server), [[FIRST, denial], [SECOND, denial]])
    }).pipe(Effect.scoped))

  it.live("no terminal and no --approve: exit 1 at the first request, naming the tool and the flag", () =>
    Effect.gen(function*() {
      const { dir, env, server } = yield* setUp
      const result = yield* execIn(dir, condukt, ["run", "notes.hcl", "--quiet"], env)
      assert.deepStrictEqual(result, {
        stdout: "",
        stderr:
          `Workflow run failed: step notes: Read (call ${FIRST}) needs approval and there is no terminal to ask on; run with --approve all or --approve none\n`,
        exitCode: 1
      })
      assert.strictEqual(server.requests.length, 1)
    }).pipe(Effect.scoped))

  it.live("--json --approve all: each request is an ApprovalRequested event, between its ToolStarted and ToolFinished", () =>
    Effect.gen(function*() {
      const { dir, env } = yield* setUp
      const result = yield* execIn(dir, condukt, ["run", "notes.hcl", "--json", "--approve", "all"], env)
      assert.deepStrictEqual({ stderr: result.stderr, exitCode: result.exitCode }, { stderr: "", exitCode: 0 })
      assert.deepStrictEqual(untimedEvents(result.stdout), [
        { _tag: "RunStarted", workflow: "notes", steps: ["notes"] },
        { _tag: "StepStarted", step: "notes" },
        { _tag: "TurnStarted", step: "notes", turn: 1 },
        { _tag: "TurnFinished", step: "notes", turn: 1, inputTokens: 56, outputTokens: 48, tokensSoFar: 168 },
        { _tag: "ToolStarted", step: "notes", callId: FIRST, tool: "Read" },
        { _tag: "ToolStarted", step: "notes", callId: SECOND, tool: "Read" },
        { _tag: "ApprovalRequested", step: "notes", callId: FIRST, tool: "Read", input: { path: "a.txt" } },
        { _tag: "ApprovalRequested", step: "notes", callId: SECOND, tool: "Read", input: { path: "b.txt", limit: 10 } },
        { _tag: "ToolFinished", step: "notes", callId: FIRST, tool: "Read", ok: true },
        { _tag: "ToolFinished", step: "notes", callId: SECOND, tool: "Read", ok: true },
        { _tag: "TurnStarted", step: "notes", turn: 2 },
        { _tag: "TurnFinished", step: "notes", turn: 2, inputTokens: 260, outputTokens: 11, tokensSoFar: 439 },
        { _tag: "StepFinished", step: "notes" },
        { _tag: "RunFinished", ok: true },
        { _tag: "Output", output: "a.txt says alpha; b.txt says beta." }
      ])
    }).pipe(Effect.scoped))
})

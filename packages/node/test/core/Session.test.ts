/**
 * A session on the Node host (moved from core's Session.test.ts, which starts no process): a
 * LocalSandbox whose directory cannot be resolved fails the run that needs it, not the session;
 * abort stops a running Bash tool and kills its process tree.
 */
import { Processes, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Agent from "@condukt/core/Agent"
import * as Message from "@condukt/core/Message"
import * as Session from "@condukt/core/Session"
import * as Tool from "@condukt/core/Tool"
import * as Tools from "@condukt/core/Tools"
import * as Condukt from "../../src/Condukt.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"

/** What a run's failure says: its reason's tag, for a SessionError. */
const reasonOf = (error: Session.RunError) => (error._tag === "SessionError" ? error.reason._tag : error._tag)

const Echo = Tool.make("echo", {
  description: "Echoes",
  parameters: Schema.Struct({ text: Schema.String }),
  call: ({ text }) => Effect.succeed(text)
})

describe("Session", () => {
  it.live("a LocalSandbox cwd that cannot be resolved fails the first run that needs it with SandboxInitFailed naming it", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-loop-")))),
        (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
      )
      fs.symlinkSync(path.join(dir, "b"), path.join(dir, "a"))
      fs.symlinkSync(path.join(dir, "a"), path.join(dir, "b"))
      const cwd = path.join(dir, "a")
      const session = yield* Session.start(Agent.make({ name: "looped", model: "test:x", tools: [Echo] }), {
        sandbox: LocalSandbox.layer({ cwd }),
        projectInstructions: false
      })
      // Without project instructions to read, a run that needs no tool never builds the sandbox.
      assert.strictEqual((yield* session.run("just talk")).text, "fine")
      const error = yield* Effect.flip(session.run("echo"))
      assert.strictEqual(reasonOf(error), "SandboxInitFailed")
      assert.strictEqual(
        error.message,
        `Agent looped: the sandbox could not be built: Path ${cwd} cannot be resolved: too many levels of symbolic links`
      )
      // The failure is the run's, not the session's: once the directory resolves, the next run builds it.
      fs.rmSync(path.join(dir, "a"))
      fs.mkdirSync(path.join(dir, "a"))
      assert.strictEqual((yield* session.run("echo again")).text, "echoed")
      assert.deepStrictEqual((yield* session.history).map((m) => m._tag), [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage"
      ])
    }).pipe(
      Effect.provide(TestModel.layer([
        TestModel.text("fine"),
        TestModel.toolCall("echo", { text: "x" }),
        TestModel.toolCall("echo", { text: "y" }),
        TestModel.text("echoed")
      ])),
      Effect.provide(Condukt.layer)
    ))

  it.live("abort stops a running Bash tool, kills its process tree, and the next run works", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-abort-")))),
        (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
      )
      const agent = Agent.make({ name: "sleeper", model: "test:x", tools: Tools.coding })
      const script = "sleep 1000 & echo $! > child.pid; echo $$ > shell.pid; sleep 1000"
      const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd: dir }) }).pipe(
        Effect.provide(TestModel.layer([TestModel.toolCall("Bash", { command: script }), TestModel.text("after abort")])),
        Effect.provide(Condukt.layer)
      )
      const events = yield* Effect.forkChild(Stream.runCollect(session.events.pipe(Stream.take(9))), { startImmediately: true })
      const run = yield* Effect.forkChild(session.run("sleep"), { startImmediately: true })
      const child = yield* Processes.awaitPidFile(path.join(dir, "child.pid"))
      const shell = yield* Processes.awaitPidFile(path.join(dir, "shell.pid"))
      yield* session.abort
      const exit = yield* Fiber.await(run)
      assert.isTrue(Exit.isFailure(exit) && exit.cause.reasons.some((r) => r._tag === "Fail" && reasonOf(r.error) === "RunAborted"))
      // The group was killed before abort returned; the kernel may still be finishing the job.
      yield* Processes.awaitDeath(shell)
      yield* Processes.awaitDeath(child)
      const history = yield* session.history
      assert.deepStrictEqual(
        history.at(-1),
        Message.toolResult({ callId: "call_1", name: "Bash", content: Session.ABORTED_RESULT, isError: true })
      )
      assert.strictEqual((yield* session.run("again")).text, "after abort")
      const seen = yield* Fiber.join(events)
      assert.deepStrictEqual(seen.map((e) => e._tag), [
        "AgentStart", "TurnStart", "TurnEnd", "ToolCall", "AgentEnd",
        "AgentStart", "TurnStart", "TextDelta", "TextDelta"
      ])
      assert.strictEqual(seen[4]!._tag === "AgentEnd" && seen[4]!.outcome, "aborted")
    }), 30_000)
})

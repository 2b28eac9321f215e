/**
 * A session's tool call queued behind the program's process budget, end to end: the executor's
 * deadline stands still while the call waits for a permit (CallDeadline), so a call whose timeout
 * is shorter than its wait still runs, and the command gets its whole timeout once it starts; an
 * abort reaches a call while it waits.
 */
import { TempDir, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"
import { readdirSync } from "node:fs"
import * as Agent from "@condukt/core/Agent"
import * as Condukt from "../../src/Condukt.ts"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import * as Session from "@condukt/core/Session"
import * as Tool from "@condukt/core/Tool"
import * as Tools from "@condukt/core/Tools"

const tempDir = TempDir.make("condukt-budget-")

/** Runs `echo ran` through the sandbox under a fixed 200 ms timeout (the executor's cut, no margin). */
const Echo = Tool.make("Echo", {
  description: "Runs echo ran.",
  parameters: Schema.Struct({}),
  timeout: "200 millis",
  call: (_, context) => Effect.map(context.sandbox.exec("echo ran"), (result) => result.output)
})

describe("Session under the process budget", () => {
  it.live("a tool call that waits for a permit longer than its timeout still runs, whole", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const budget = yield* ProcessBudget.ProcessBudget
      // The only permit is held for 600 ms, three times the call's timeout.
      const holding = yield* Deferred.make<void>()
      yield* Effect.forkChild(budget.withPermit(Effect.andThen(Deferred.succeed(holding, undefined), Effect.sleep("600 millis"))))
      yield* Deferred.await(holding)
      const agent = Agent.make({ name: "queued", model: "test:x", tools: [Echo] })
      const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd: dir }) })
      const result = yield* session.run("run it")
      const tool = result.messages.find((m) => m._tag === "ToolResultMessage")
      assert.deepStrictEqual(tool, { _tag: "ToolResultMessage", callId: "call_1", name: "Echo", content: "ran\n", isError: false })
      assert.strictEqual(result.text, "done")
    }).pipe(
      Effect.scoped,
      Effect.provide(ProcessBudget.layer({ max: 1 })),
      Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.toolCall("Echo", {}), TestModel.text("done")]), Condukt.layer))
    ))

  it.live("aborting a run whose Bash call waits for a permit ends it at once; the queue keeps no trace of it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const budget = yield* ProcessBudget.ProcessBudget
      const holding = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(budget.withPermit(Effect.andThen(Deferred.succeed(holding, undefined), Deferred.await(release))))
      yield* Deferred.await(holding)
      const agent = Agent.make({ name: "queued", model: "test:x", tools: [Tools.Bash] })
      const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd: dir }) })
      const events = yield* Stream.runCollect(
        session.stream("run it").pipe(Stream.tap((e) => (e._tag === "ToolCall" ? session.abort : Effect.void)))
      )
      assert.strictEqual(events.map((e) => e._tag).at(-1), "AgentEnd")
      assert.deepStrictEqual((yield* session.history).at(-1), {
        _tag: "ToolResultMessage",
        callId: "call_1",
        name: "Bash",
        content: Session.ABORTED_RESULT,
        isError: true
      })
      // The aborted call left the queue: the next waiter gets the permit the holder returns (with
      // one permit, a call still queued or a permit lost would hold it back forever).
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      assert.strictEqual(yield* budget.withPermit(Effect.succeed("next")), "next")
      assert.deepStrictEqual(readdirSync(dir), [])
    }).pipe(
      Effect.scoped,
      Effect.provide(ProcessBudget.layer({ max: 1 })),
      Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.toolCall("Bash", { command: "echo ran > ran" })]), Condukt.layer))
    ))
})

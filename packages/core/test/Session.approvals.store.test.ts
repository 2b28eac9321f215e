/**
 * Session approvals with a store: a batch waiting for an answer is saved, and a session resuming the
 * id lists it and continues it (the rules themselves, and a live session's answers:
 * Session.approvals.test.ts).
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Ref, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import type * as SessionEvent from "../src/SessionEvent.ts"
import * as SessionStore from "../src/SessionStore.ts"
import { counted, env, rmAndLs } from "./fixtures/approvalSessions.ts"

/**
 * A first "process": its run waits on rm with `store`, and its scope closes (the process dies) once
 * the store holds the batch with rm waiting and ls's result.
 */
const diesWaiting = (agent: Agent.Agent, memory: SessionStore.Service) =>
  Effect.gen(function*() {
    const saved = yield* Deferred.make<void>()
    const store: SessionStore.Service = {
      ...memory,
      save: (snapshot, options) =>
        Effect.tap(memory.save(snapshot, options), () =>
          snapshot.batch?.waiting.length === 1 && snapshot.batch.results.length === 1 ? Deferred.succeed(saved, undefined) : Effect.void)
    }
    yield* Effect.scoped(Effect.gen(function*() {
      const first = yield* Session.start(agent, { id: "s", store })
      yield* Effect.forkScoped(first.run("clean up"))
      yield* Deferred.await(saved)
      // Stopped, as a process is at its end (its run is not aborted: the store keeps the batch).
      yield* first.stop
    })).pipe(Effect.provide(env([rmAndLs])))
  })

describe("Session approvals with a store", () => {
  it.effect("a batch waiting for approval is saved; a session resuming the id lists it, and approve continues the run from that call", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("ls", ran)] })
      const store = SessionStore.makeMemory()
      yield* diesWaiting(agent, store)
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
      // The second process: the same id and store, a model that has not been asked anything yet.
      const { model, recorder } = yield* TestModel.make([TestModel.text("done")])
      const second = yield* Session.start(agent, { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
      assert.deepStrictEqual(yield* second.pending, [{ callId: "c_rm", tool: "rm", input: { path: "/" } }])
      const ended = yield* Deferred.make<void>()
      yield* Effect.forkChild(
        Stream.runForEach(second.events, (e) => (e._tag === "AgentEnd" ? Deferred.succeed(ended, undefined) : Effect.void)),
        { startImmediately: true }
      )
      yield* second.approve("c_rm")
      assert.strictEqual((yield* Effect.flip(second.approve("c_rm")))._tag, "ApprovalNotPending")
      yield* Deferred.await(ended)
      // Each call ran once; the model was asked once, for the turn after the batch.
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls .", "rm /"])
      assert.strictEqual((yield* recorder.requests).length, 1)
      const history = yield* second.history
      assert.deepStrictEqual(history.map((m) => (m._tag === "ToolResultMessage" ? `${m._tag} ${m.callId} ${m.content}` : m._tag)), [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage c_rm rm ran",
        "ToolResultMessage c_ls ls ran",
        "AssistantMessage"
      ])
      assert.deepStrictEqual(yield* second.pending, [])
      const stored = yield* store.load("s")
      assert.isTrue(stored._tag === "Some" && stored.value.batch === undefined && stored.value.messages.length === 5)
    }).pipe(Effect.provide(Sandbox.layerNoop())))
  it.effect("a run queued before anyone answered continues the restored batch first: its calls ask again, then its prompt", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("ls", ran)] })
      const store = SessionStore.makeMemory()
      yield* diesWaiting(agent, store)
      const { model, recorder } = yield* TestModel.make([TestModel.text("batch done"), TestModel.text("next done")])
      const second = yield* Session.start(agent, { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
      const events = yield* Effect.scoped(Effect.gen(function*() {
        const seen: Array<SessionEvent.SessionEvent> = []
        yield* Stream.runForEach(second.stream("next"), (event) => {
          seen.push(event)
          return event._tag === "ApprovalRequested" ? Effect.orDie(second.deny(event.callId, "no")) : Effect.void
        })
        return seen
      }))
      assert.deepStrictEqual(events.flatMap((e) => (e._tag === "ApprovalRequested" ? [e.callId] : [])), ["c_rm"])
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
      assert.strictEqual((yield* recorder.requests).length, 2)
      const history = yield* second.history
      assert.deepStrictEqual(history.map((m) => (m._tag === "ToolResultMessage" ? `${m.callId}: ${m.content}` : m._tag)), [
        "UserMessage",
        "AssistantMessage",
        "c_rm: Denied by the user: no",
        "c_ls: ls ran",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage"
      ])
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("an abort while waiting ends the batch in the store too: a session resuming the id has nothing pending", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true)] })
      const store = SessionStore.makeMemory()
      const first = yield* Session.start(agent, { id: "s", store })
      const asked = yield* Deferred.make<void>()
      const run = yield* Effect.forkChild(
        Stream.runForEach(first.stream("clean up"), (e) => (e._tag === "ApprovalRequested" ? Deferred.succeed(asked, undefined) : Effect.void))
      )
      yield* Deferred.await(asked)
      yield* first.abort
      yield* Fiber.join(run)
      yield* first.stop
      const second = yield* Session.start(agent, { id: "s", store })
      assert.deepStrictEqual(yield* second.pending, [])
      const last = (yield* second.history).at(-1)!
      assert.deepStrictEqual(last._tag === "ToolResultMessage" && [last.callId, last.content], ["c_1", Session.ABORTED_RESULT])
      assert.deepStrictEqual(yield* Ref.get(ran), [])
    }).pipe(Effect.provide(env([TestModel.reply(TestModel.toolCall("rm", { path: "/" }, "c_1"))]))))
})

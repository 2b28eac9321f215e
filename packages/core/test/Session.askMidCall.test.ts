/**
 * A tool asking for approval while it runs (issue 39 item 7): `context.approve({ summary,
 * details })` in a tool declared `asks: true` waits for the answer as a request made before a call
 * runs does (its record, its `ApprovalRequested` with the summary); a denial fails the call with
 * what the model reads; a process ending mid-ask leaves a call that reads it was interrupted and
 * never runs twice, unless its tool is `retrySafe` (then it runs again and asks again).
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Ref, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Agent from "../src/Agent.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as SessionStore from "../src/SessionStore.ts"
import * as Tool from "../src/Tool.ts"

/** A migration: a step before the ask, the destructive one after it, each logged in `steps`. */
const migrate = (steps: Ref.Ref<ReadonlyArray<string>>, options: { readonly asks?: boolean; readonly retrySafe?: boolean } = {}) =>
  Tool.make("migrate", {
    description: "Runs a migration",
    parameters: Schema.Struct({ table: Schema.String }),
    asks: options.asks ?? true,
    retrySafe: options.retrySafe ?? false,
    call: ({ table }, context) =>
      Effect.gen(function*() {
        yield* Ref.update(steps, (all) => [...all, `backup ${table}`])
        yield* context.approve({ summary: `drop table ${table}`, details: "the backup is taken" })
        yield* Ref.update(steps, (all) => [...all, `drop ${table}`])
        return `dropped ${table}`
      })
  })

const calls = [TestModel.toolCall("migrate", { table: "users" }, "c_m"), TestModel.text("done")]

/** The model's reading of the call in its last request. */
const readBack = (requests: ReadonlyArray<TestModel.RecordedRequest>) =>
  [...requests.at(-1)!.messages].flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))

describe("a tool asking mid-call", () => {
  it.effect("approved: the call goes on from where it asked; the request is a record with the summary, announced with it", () =>
    Effect.gen(function*() {
      const steps = yield* Ref.make<ReadonlyArray<string>>([])
      const store = SessionStore.makeMemory()
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [migrate(steps)] }), { id: "s", store })
      const asked: Array<unknown> = []
      const events = yield* Stream.runCollect(Stream.tap(session.stream("migrate"), (event) => {
        if (event._tag !== "ApprovalRequested") return Effect.void
        asked.push({ callId: event.callId, tool: event.tool, summary: event.summary, details: event.details })
        return Effect.andThen(
          Effect.flatMap(session.pending, (pending) => Effect.sync(() => asked.push(pending))),
          Effect.orDie(session.approve(event.callId, { by: "dba" }))
        )
      }))
      assert.deepStrictEqual(asked, [
        { callId: "c_m", tool: "migrate", summary: "drop table users", details: "the backup is taken" },
        [{ callId: "c_m", tool: "migrate", input: { table: "users" } }]
      ])
      assert.deepStrictEqual(yield* Ref.get(steps), ["backup users", "drop users"])
      assert.deepStrictEqual([...events].flatMap((e) => (e._tag === "ToolResult" ? [e.content] : [])), ["dropped users"])
      const [record] = (yield* store.approvals!.list({ status: "answered" })).records
      assert.deepStrictEqual([record?.rule, record?.summary, record?.details, record?.outcome, record?.by], ["tool", "drop table users", "the backup is taken", "approved", "dba"])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer(calls), Sandbox.layerNoop()))))

  it.effect("denied: the call fails there, the model reads the denial, the destructive step never runs", () =>
    Effect.gen(function*() {
      const steps = yield* Ref.make<ReadonlyArray<string>>([])
      const { model, recorder } = yield* TestModel.make(calls)
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [migrate(steps)] })).pipe(Effect.provideService(Model.Model, model))
      yield* Stream.runDrain(Stream.tap(session.stream("migrate"), (event) =>
        event._tag === "ApprovalRequested" ? Effect.orDie(session.deny(event.callId, "not on a Friday")) : Effect.void))
      assert.deepStrictEqual(yield* Ref.get(steps), ["backup users"])
      assert.deepStrictEqual(readBack(yield* recorder.requests), ["Error: Denied by the user: not on a Friday"])
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("a tool that did not declare asks cannot ask: the call fails saying so", () =>
    Effect.gen(function*() {
      const steps = yield* Ref.make<ReadonlyArray<string>>([])
      const { model, recorder } = yield* TestModel.make(calls)
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [migrate(steps, { asks: false })] })).pipe(Effect.provideService(Model.Model, model))
      yield* session.run("migrate")
      assert.deepStrictEqual(yield* Ref.get(steps), ["backup users"])
      assert.deepStrictEqual(readBack(yield* recorder.requests), [
        "Error: migrate cannot ask for approval while it runs here: its tool does not declare asks: true, or nothing can answer"
      ])
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  for (const retrySafe of [false, true]) {
    it.effect(`the process ends mid-ask: the next start ${retrySafe ? "runs the retrySafe call again, which asks again" : "answers the call as interrupted, never running it twice"}; the first record ends`, () =>
      Effect.gen(function*() {
        const steps = yield* Ref.make<ReadonlyArray<string>>([])
        const store = SessionStore.makeMemory()
        const agent = Agent.make({ name: "a", model: "test:x", tools: [migrate(steps, { retrySafe })] })
        yield* Effect.scoped(Effect.gen(function*() {
          const first = yield* Session.start(agent, { id: "s", store })
          yield* Effect.forkScoped(Effect.exit(first.run("migrate")))
          while ((yield* store.approvals!.list()).records.length === 0) yield* Effect.yieldNow
          yield* first.stop
        })).pipe(Effect.provide(TestModel.layer(calls)))
        // The stopping session kept it open in its store, as a process that dies would.
        const [open] = (yield* store.approvals!.list()).records
        assert.deepStrictEqual([open?.rule, open?.outcome], ["tool", undefined])
        const { model, recorder } = yield* TestModel.make([TestModel.text("understood")])
        const second = yield* Session.start(agent, { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
        if (retrySafe) {
          // It runs again and asks again: a new record, answered here.
          while ((yield* second.pending).length === 0) yield* Effect.yieldNow
          // An answer for the first record (what the Approvals service sends by its id) is not for this request.
          assert.strictEqual((yield* Effect.flip(second.approve("c_m", { approval: open!.id })))._tag, "ApprovalNotPending")
          assert.strictEqual((yield* second.pending).length, 1)
          yield* second.approve("c_m")
        }
        yield* second.idle
        assert.deepStrictEqual(yield* Ref.get(steps), retrySafe ? ["backup users", "backup users", "drop users"] : ["backup users"])
        assert.deepStrictEqual(readBack(yield* recorder.requests), [retrySafe ? "dropped users" : Session.INTERRUPTED_RESULT])
        assert.deepStrictEqual((yield* store.approvals!.list()).records, [])
        // Nothing waits on the first record any more: the next start ended it.
        const ended = Option.getOrThrow(yield* store.approvals!.get(open!.id))
        assert.deepStrictEqual([ended.outcome, ended.by], ["aborted", "restart"])
      }).pipe(Effect.provide(Sandbox.layerNoop())))
  }
})

describe("an answer recorded in the log by someone else while a session waits", () => {
  it.effect("is not run on by the live session (another holder may have run it): approve is refused naming it; the next start takes it", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make(0)
      const store = SessionStore.makeMemory()
      const rm = Tool.make("rm", { description: "Removes", parameters: Schema.Struct({}), needsApproval: true, call: () => Effect.as(Ref.update(ran, (n) => n + 1), "removed") })
      const agent = Agent.make({ name: "a", model: "test:x", tools: [rm], approvals: { expires: "1 hour" } })
      const first = yield* Session.start(agent, { id: "s", store })
      const run = yield* Effect.forkChild(Effect.exit(first.run("go")), { startImmediately: true })
      while ((yield* store.approvals!.list()).records.length === 0) yield* Effect.yieldNow
      const [open] = (yield* store.approvals!.list()).records
      yield* store.approvals!.answer(open!.id, "approved", 0, { by: "bo" })
      const refused = yield* Effect.flip(first.approve("c_1", { by: "ana" }))
      assert.deepStrictEqual([refused.answered?.by, refused.message], ["bo", `Session s: call c_1 was answered already: approved by "bo"`])
      // Its deadline passing changes nothing: the log has the answer.
      yield* TestClock.adjust("2 hours")
      assert.deepStrictEqual([yield* Ref.get(ran), (yield* first.pending).length], [0, 1])
      yield* first.stop
      yield* Fiber.join(run)
      const { model } = yield* TestModel.make([TestModel.text("done")])
      const second = yield* Session.start(agent, { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
      yield* second.idle
      assert.strictEqual(yield* Ref.get(ran), 1)
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.toolCall("rm", {}, "c_1")]), Sandbox.layerNoop()))))
})

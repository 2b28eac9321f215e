/**
 * A stopped session's answers (issue 37, item 8; ADR 0080): once a session has stopped (`stop`, the
 * scope it was started in closing, its registry's `stop`), nothing waits in it any more: `pending`
 * lists nothing, and `approve`, `deny` and `respond` fail with the typed refusal saying the session
 * is stopped, instead of succeeding with an answer nobody takes. With a store the waiting calls are
 * kept there: the session started again with its id lists them, and an answer given there runs the
 * call once. Each way a call can wait is stopped here: parked (no fiber), under a timeout (its run's
 * fiber waits), restored from the store with no run yet, beside a typed answer's `submit`, and an
 * MCP server's approval and question; abort and the caller's interruption are the contrast (the
 * session goes on, its calls read the aborted-run text).
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Ref, Schema, Scope, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Approval from "../src/Approval.ts"
import * as Elicitation from "../src/Elicitation.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as SessionStore from "../src/SessionStore.ts"
import * as Sessions from "../src/Sessions.ts"
import * as Tool from "../src/Tool.ts"
import type * as ToolSource from "../src/ToolSource.ts"

/** A tool that counts its runs in `ran` and answers `<name> ran`. */
const counted = (name: string, ran: Ref.Ref<ReadonlyArray<string>>, needsApproval?: boolean) =>
  Tool.make(name, {
    description: `The ${name} command`,
    parameters: Schema.Struct({ path: Schema.String }),
    needsApproval,
    call: ({ path }) => Effect.as(Ref.update(ran, (all) => [...all, `${name} ${path}`]), `${name} ran`)
  })

const env = (replies: ReadonlyArray<TestModel.Reply>) => Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop())

const rmAndLs = TestModel.reply(TestModel.toolCall("rm", { path: "/" }, "c_rm"), TestModel.toolCall("ls", { path: "." }, "c_ls"))

/** What a stopped session's `approve` and `deny` of `callId` fail with. */
const stoppedCall = (sessionId: string, callId: string) => new Approval.NotPending({ sessionId, callId, stopped: true })

/** Completes with the call id of the session's first `ApprovalRequested`, read by an observer started now. */
const firstRequest = (session: Session.Session) =>
  Effect.gen(function*() {
    const asked = yield* Deferred.make<string>()
    yield* Effect.forkChild(
      Stream.runForEach(session.events, (event) => (event._tag === "ApprovalRequested" ? Deferred.succeed(asked, event.callId) : Effect.void)),
      { startImmediately: true }
    )
    return Deferred.await(asked)
  })

/** What every answer of a stopped session gives: nothing pending, each answer refused as stopped, `approveAll` a no-op. */
const refusesAnswers = (session: Session.Session, callId: string) =>
  Effect.gen(function*() {
    assert.deepStrictEqual(yield* session.pending, [])
    const approved = yield* Effect.flip(session.approve(callId))
    const denied = yield* Effect.flip(session.deny(callId, "no"))
    assert.deepStrictEqual([approved, denied], [stoppedCall(session.id, callId), stoppedCall(session.id, callId)])
    assert.deepStrictEqual([approved.stopped, approved.message.startsWith(`Session ${session.id} is stopped: call ${callId} `)], [true, true])
    yield* session.approveAll
    assert.deepStrictEqual(yield* session.pending, [])
  })

describe("A stopped session's answers", () => {
  it.effect("stop with a call parked waiting: the run fails SessionStopped, pending is [], approve and deny fail ApprovalNotPending saying so, the call never runs", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("ls", ran)] })
      const session = yield* Session.start(agent, { id: "s" })
      const asked = yield* firstRequest(session)
      const run = yield* Effect.forkChild(session.run("clean up"), { startImmediately: true })
      assert.strictEqual(yield* asked, "c_rm")
      assert.deepStrictEqual(yield* session.pending, [{ callId: "c_rm", tool: "rm", input: { path: "/" } }])
      yield* session.stop
      const failed = yield* Effect.flip(Fiber.join(run))
      assert.strictEqual(failed._tag === "SessionError" && failed.reason._tag, "SessionStopped")
      yield* refusesAnswers(session, "c_rm")
      assert.strictEqual(
        stoppedCall("s", "c_rm").message,
        "Session s is stopped: call c_rm waits for no answer in it; with a store, start the session again with its id: pending lists the calls it left waiting, answered there"
      )
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
    }).pipe(Effect.provide(env([rmAndLs, TestModel.text("done")]))))

  it.effect("with a store: the stopped session refuses the answer; started again with its id it lists the call, and approved there the call runs exactly once", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("ls", ran)] })
      const store = SessionStore.makeMemory()
      const first = yield* Session.start(agent, { id: "s", store }).pipe(Effect.provide(TestModel.layer([rmAndLs])))
      const asked = yield* firstRequest(first)
      yield* Effect.forkChild(Effect.exit(first.run("clean up")), { startImmediately: true })
      yield* asked
      yield* first.stop
      yield* refusesAnswers(first, "c_rm")
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
      // Started again: the store kept the call waiting; nobody has answered it.
      const { model, recorder } = yield* TestModel.make([TestModel.text("done")])
      const second = yield* Session.start(agent, { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
      assert.deepStrictEqual(yield* second.pending, [{ callId: "c_rm", tool: "rm", input: { path: "/" } }])
      // What the continuation publishes, up to its AgentEnd: no second ApprovalRequested.
      const published: Array<string> = []
      const ended = yield* Deferred.make<void>()
      yield* Effect.forkChild(
        Stream.runForEach(second.events, (event) => {
          published.push(event._tag)
          return event._tag === "AgentEnd" ? Deferred.succeed(ended, undefined) : Effect.void
        }),
        { startImmediately: true }
      )
      yield* second.approve("c_rm")
      yield* Deferred.await(ended)
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls .", "rm /"])
      assert.isFalse(published.includes("ApprovalRequested"))
      assert.strictEqual((yield* recorder.requests).length, 1)
      assert.deepStrictEqual(yield* second.pending, [])
      const history = yield* second.history
      assert.deepStrictEqual(history.map((m) => (m._tag === "ToolResultMessage" ? `${m.callId}: ${m.content}` : m._tag)), [
        "UserMessage",
        "AssistantMessage",
        "c_rm: rm ran",
        "c_ls: ls ran",
        "AssistantMessage"
      ])
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("a batch restored from the store with no run yet: stopped, it lists nothing and refuses the answer (which did not continue it); started again, it lists the call", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("ls", ran)] })
      const store = SessionStore.makeMemory()
      const first = yield* Session.start(agent, { id: "s", store }).pipe(Effect.provide(TestModel.layer([rmAndLs])))
      const asked = yield* firstRequest(first)
      yield* Effect.forkChild(Effect.exit(first.run("clean up")), { startImmediately: true })
      yield* asked
      yield* first.stop
      const { model, recorder } = yield* TestModel.make([TestModel.text("done")])
      const restored = yield* Session.start(agent, { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
      assert.deepStrictEqual(yield* restored.pending, [{ callId: "c_rm", tool: "rm", input: { path: "/" } }])
      yield* restored.stop
      yield* refusesAnswers(restored, "c_rm")
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
      assert.strictEqual((yield* recorder.requests).length, 0)
      const third = yield* Session.start(agent, { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
      assert.deepStrictEqual(yield* third.pending, [{ callId: "c_rm", tool: "rm", input: { path: "/" } }])
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("a call waiting under a timeout (its run's fiber waits, not parked): stopped, pending is [] and the answer is refused as stopped", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran), counted("ls", ran)] })
      const session = yield* Session.start(agent, { approvals: { ask: ["rm"], timeout: "5 minutes" } })
      const asked = yield* firstRequest(session)
      const run = yield* Effect.forkChild(Effect.exit(session.run("clean up")), { startImmediately: true })
      yield* asked
      assert.strictEqual((yield* session.pending).length, 1)
      yield* session.stop
      yield* Fiber.join(run)
      yield* refusesAnswers(session, "c_rm")
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
    }).pipe(Effect.provide(env([rmAndLs, TestModel.text("done")]))))

  it.effect("the scope the session was started in closes (no stop call): its handle lists nothing and refuses the answer", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("ls", ran)] })
      const scope = yield* Scope.make()
      const session = yield* Session.start(agent).pipe(Scope.provide(scope))
      const asked = yield* firstRequest(session)
      yield* Effect.forkChild(Effect.exit(session.run("clean up")), { startImmediately: true })
      yield* asked
      yield* Scope.close(scope, Exit.void)
      yield* refusesAnswers(session, "c_rm")
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
    }).pipe(Effect.provide(env([rmAndLs, TestModel.text("done")]))))

  it.effect("a typed answer's run whose call waits beside its submit: stopped, the run fails SessionStopped, pending is [], the answer is refused", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true)] })
      const session = yield* Session.start(agent)
      const asked = yield* firstRequest(session)
      const run = yield* Effect.forkChild(session.run("how many?", { output: Schema.Struct({ n: Schema.Int }) }), { startImmediately: true })
      yield* asked
      yield* session.stop
      const failed = yield* Effect.flip(Fiber.join(run))
      assert.strictEqual(failed._tag === "SessionError" && failed.reason._tag, "SessionStopped")
      yield* refusesAnswers(session, "c_rm")
      assert.deepStrictEqual(yield* Ref.get(ran), [])
    }).pipe(Effect.provide(env([TestModel.reply(TestModel.toolCall("rm", { path: "/" }, "c_rm"), TestModel.toolCall("submit", { n: 1 })), TestModel.text("done")]))))

  it.effect("abort, and the caller's interruption, with a call waiting: the session goes on, the call reads the aborted-run text, the answer is refused as not waiting (not stopped)", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true)] })
      const session = yield* Session.start(agent)
      const asked = yield* firstRequest(session)
      yield* Effect.forkChild(Effect.exit(session.run("one")), { startImmediately: true })
      assert.strictEqual(yield* asked, "c_1")
      yield* session.abort
      yield* session.idle
      const again = yield* firstRequest(session)
      const caller = yield* Effect.forkChild(session.run("two"), { startImmediately: true })
      assert.strictEqual(yield* again, "c_2")
      yield* Fiber.interrupt(caller)
      yield* session.idle
      assert.deepStrictEqual(yield* session.pending, [])
      assert.deepStrictEqual(
        [yield* Effect.flip(session.approve("c_1")), yield* Effect.flip(session.approve("c_2"))],
        [new Approval.NotPending({ sessionId: session.id, callId: "c_1" }), new Approval.NotPending({ sessionId: session.id, callId: "c_2" })]
      )
      const results = (yield* session.history).flatMap((m) => (m._tag === "ToolResultMessage" ? [`${m.callId}: ${m.content}`] : []))
      assert.deepStrictEqual(results, [`c_1: ${Session.ABORTED_RESULT}`, `c_2: ${Session.ABORTED_RESULT}`])
      assert.strictEqual((yield* session.run("three")).text, "three done")
      assert.deepStrictEqual(yield* Ref.get(ran), [])
    }).pipe(Effect.provide(env([
      TestModel.reply(TestModel.toolCall("rm", { path: "a" }, "c_1")),
      TestModel.reply(TestModel.toolCall("rm", { path: "b" }, "c_2")),
      TestModel.text("three done")
    ]))))

  it.effect("the registry's stop: a handle found before lists nothing and refuses the answer; ById then finds no session", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("ls", ran)] })
      const registry = yield* Sessions.make()
      const byId = yield* Sessions.makeById(registry, { a: agent })
      yield* byId.start("a", { id: "r" })
      const session = Option.getOrThrow(yield* registry.whereis("r"))
      const asked = yield* firstRequest(session)
      yield* Effect.forkChild(Effect.exit(byId.run("r", "clean up")), { startImmediately: true })
      yield* asked
      yield* registry.stop("r")
      yield* refusesAnswers(session, "c_rm")
      const notFound = yield* Effect.flip(byId.approve("r", "c_rm"))
      assert.strictEqual(notFound.reason._tag, "NotFound")
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
    }).pipe(Effect.provide(env([rmAndLs, TestModel.text("done")]))))
})

/** A source with no tools whose release (the session's scope closing) says `releasing` and waits for `release`. */
const slowToRelease = (releasing: Deferred.Deferred<void>, release: Deferred.Deferred<void>): ToolSource.ToolSource => ({
  _tag: "ToolSource",
  name: "slow",
  start: () =>
    Effect.acquireRelease(Effect.void, () => Effect.andThen(Deferred.succeed(releasing, undefined), Deferred.await(release))).pipe(
      Effect.as({ tools: Effect.succeed([]) })
    )
})

describe("A session stopping", () => {
  it.effect("while its scope closes (a server still releasing), the session is still registered and already stopped: by id, pending is [] and approve fails ApprovalNotPending saying it is stopped; once closed, NotFound", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const releasing = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const agent = Agent.make({
        name: "a",
        model: "test:x",
        tools: [counted("rm", ran, true), counted("ls", ran)],
        mcpServers: [slowToRelease(releasing, release)]
      })
      const registry = yield* Sessions.make()
      // Released before the registry closes, whatever the test's outcome.
      yield* Effect.addFinalizer(() => Deferred.succeed(release, undefined))
      const byId = yield* Sessions.makeById(registry, { a: agent })
      yield* byId.start("a", { id: "w" })
      const asked = yield* firstRequest(Option.getOrThrow(yield* registry.whereis("w")))
      yield* Effect.forkChild(Effect.exit(byId.run("w", "clean up")), { startImmediately: true })
      yield* asked
      assert.deepStrictEqual((yield* byId.pending("w")).map((p) => p.callId), ["c_rm"])
      const stopping = yield* Effect.forkChild(registry.stop("w"), { startImmediately: true })
      yield* Deferred.await(releasing)
      assert.deepStrictEqual(yield* registry.list, ["w"])
      assert.deepStrictEqual(yield* byId.pending("w"), [])
      const refused = yield* Effect.flip(byId.approve("w", "c_rm"))
      assert.deepStrictEqual(refused.reason, new Sessions.ApprovalNotPending({ callId: "c_rm", stopped: true }))
      assert.strictEqual(
        refused.message,
        "Sessions: session w: the session is stopped: call c_rm waits for no answer in it; start it again: pending lists the calls its store kept waiting, answered there"
      )
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(stopping)
      assert.strictEqual((yield* Effect.flip(byId.approve("w", "c_rm"))).reason._tag, "NotFound")
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
    }).pipe(Effect.provide(env([rmAndLs, TestModel.text("done")]))))
})

/** A source whose tool `src.ask` asks the user a question, and whose tool `src.sample` asks approval. */
const asking: ToolSource.ToolSource = {
  _tag: "ToolSource",
  name: "src",
  start: (context) =>
    Effect.succeed({
      tools: Effect.succeed([
        Tool.make("src.ask", {
          description: "Asks the user",
          parameters: Schema.Struct({}),
          call: () =>
            context.elicit!({
              server: "src",
              message: "Your name?",
              schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
              validate: () => undefined
            }).pipe(Effect.map((answer) => JSON.stringify(answer)), Effect.catch((refused) => Effect.succeed(`refused: ${refused.description}`)))
        }),
        Tool.make("src.sample", {
          description: "Asks approval",
          parameters: Schema.Struct({}),
          call: () => Effect.map(context.approve!({ tool: "sampling/createMessage", input: {} }), (answer) => Approval.render(answer) ?? "approved")
        })
      ])
    })
}

describe("A stopped session's answers to its MCP servers", () => {
  it.effect("a question and a server's approval waiting when the session stops: pending is [], respond fails ElicitationNotPending and approve ApprovalNotPending, both saying it is stopped", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(Agent.make({ name: "asked", model: "test:x", mcpServers: [asking] }), { id: "m" })
      const question = yield* Deferred.make<string>()
      const approval = yield* Deferred.make<string>()
      yield* Effect.forkChild(
        Stream.runForEach(session.events, (event) =>
          event._tag === "ElicitationRequested"
            ? Deferred.succeed(question, event.id)
            : event._tag === "ApprovalRequested"
            ? Deferred.succeed(approval, event.callId)
            : Effect.void),
        { startImmediately: true }
      )
      yield* Effect.forkChild(Effect.exit(session.run("go")), { startImmediately: true })
      const questionId = yield* Deferred.await(question)
      const callId = yield* Deferred.await(approval)
      assert.deepStrictEqual((yield* session.pending).map((p) => p.callId), [callId])
      yield* session.stop
      assert.deepStrictEqual(yield* session.pending, [])
      const refused = yield* Effect.flip(session.respond(questionId, Elicitation.accept({ name: "Ada" })))
      assert.deepStrictEqual(refused, new Elicitation.NotPending({ sessionId: "m", id: questionId, stopped: true }))
      assert.strictEqual(refused.message, `Session m is stopped: question ${questionId} waits for no answer in it (it ended with the session)`)
      assert.deepStrictEqual(yield* Effect.flip(session.approve(callId)), stoppedCall("m", callId))
    }).pipe(Effect.provide(env([TestModel.reply(TestModel.toolCall("src.ask", {}, "c_ask"), TestModel.toolCall("src.sample", {}, "c_sample")), TestModel.text("done")]))))
})

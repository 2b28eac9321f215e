/**
 * Session approvals: rules that deny or allow without asking, calls that wait for a person's answer
 * (a batch's other calls running meanwhile), denials the model reads, timeouts, aborts, and runs
 * queued behind a waiting one. With a store: Session.approvals.store.test.ts.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Ref, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Agent from "../src/Agent.ts"
import * as Approval from "../src/Approval.ts"
import * as ApprovalPolicy from "../src/ApprovalPolicy.ts"
import type * as Message from "../src/Message.ts"
import * as Session from "../src/Session.ts"
import type * as SessionEvent from "../src/SessionEvent.ts"
import * as SessionStore from "../src/SessionStore.ts"
import * as Tool from "../src/Tool.ts"
import { batch, counted, env, resultsRead, rmAndLs, streamAnswering } from "./fixtures/approvalSessions.ts"

describe("Session approvals", () => {
  it.effect("a deny rule refuses rm without asking while ls of the same batch runs; the model reads the denial; the run completes", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran), counted("ls", ran)], approvals: { deny: ["r*"] } })
      const session = yield* Session.start(agent)
      const events = yield* Stream.runCollect(session.stream("clean up"))
      assert.isFalse(events.some((e) => e._tag === "ApprovalRequested"))
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
      assert.deepStrictEqual(resultsRead(yield* (yield* TestModel.TestModel).requests), [
        { callId: "c_rm", content: "Denied by a rule: rm matches \"r*\"", isError: true },
        { callId: "c_ls", content: "ls ran", isError: false }
      ])
      const last = events.at(-1)!
      assert.strictEqual(last._tag === "AgentEnd" && last.outcome, "completed")
    }).pipe(Effect.provide(env([rmAndLs, TestModel.text("done")]))))

  it.effect("a flagged call waits for approve while the batch's other call runs, then runs once", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("ls", ran)] })
      const session = yield* Session.start(agent)
      const seen: Array<unknown> = []
      const events = yield* streamAnswering(session, (event) =>
        Effect.gen(function*() {
          // ls has run; rm has not: it waits for its answer.
          seen.push(yield* Ref.get(ran), yield* session.pending)
          yield* session.approve(event.callId)
        }))
      assert.deepStrictEqual(seen, [["ls ."], [{ callId: "c_rm", tool: "rm", input: { path: "/" } }]])
      const request = events.find((e) => e._tag === "ApprovalRequested")!
      const { runId: _r, sessionId: _s, seq: _q, ...fields } = request
      assert.deepStrictEqual(fields, { _tag: "ApprovalRequested", callId: "c_rm", tool: "rm", input: { path: "/" } })
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls .", "rm /"])
      assert.deepStrictEqual(resultsRead(yield* (yield* TestModel.TestModel).requests), [
        { callId: "c_rm", content: "rm ran", isError: false },
        { callId: "c_ls", content: "ls ran", isError: false }
      ])
      assert.deepStrictEqual(yield* session.pending, [])
    }).pipe(Effect.provide(env([rmAndLs, TestModel.text("done")]))))

  it.effect("a parked batch shows its finished calls' results while it waits, the others once answered, each once", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("ls", ran)] })
      const session = yield* Session.start(agent)
      const events: Array<SessionEvent.SessionEvent> = []
      // Answered only once ls's result was published: a person (a chat) sees it while rm waits.
      yield* Stream.runForEach(session.stream("clean up"), (event) => {
        events.push(event)
        return event._tag === "ToolResult" && event.callId === "c_ls" ? session.approve("c_rm") : Effect.void
      })
      assert.deepStrictEqual(events.flatMap((e) => (e._tag === "ToolCall" || e._tag === "ApprovalRequested" || e._tag === "ToolResult" ? [`${e._tag} ${e.callId}`] : [])), [
        "ToolCall c_rm",
        "ToolCall c_ls",
        "ApprovalRequested c_rm",
        "ToolResult c_ls",
        "ToolResult c_rm"
      ])
      // The model reads them in its own order, as ever.
      assert.deepStrictEqual(resultsRead(yield* (yield* TestModel.TestModel).requests).map((r) => r.callId), ["c_rm", "c_ls"])
    }).pipe(Effect.provide(env([rmAndLs, TestModel.text("done")]))))

  it.effect("a user's denial reaches the model as the call's result and the run goes on; answering again, or an unknown id, is ApprovalNotPending", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      // The rule asks; the tool's own flag (false) is overruled.
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran), counted("ls", ran)] })
      const session = yield* Session.start(agent, { approvals: { ask: ["rm"] } })
      const errors: Array<Approval.NotPending> = []
      const events = yield* streamAnswering(session, (event) => session.deny(event.callId, "not on my machine"))
      const last = events.at(-1)!
      assert.strictEqual(last._tag === "AgentEnd" && last.outcome, "completed")
      errors.push(yield* Effect.flip(session.approve("c_rm")), yield* Effect.flip(session.deny("nope")))
      assert.deepStrictEqual(errors.map((e) => e.message), [
        `Session ${session.id}: no call c_rm is waiting for approval (unknown, or already answered)`,
        `Session ${session.id}: no call nope is waiting for approval (unknown, or already answered)`
      ])
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
      assert.deepStrictEqual(resultsRead(yield* (yield* TestModel.TestModel).requests), [
        { callId: "c_rm", content: "Denied by the user: not on my machine", isError: true },
        { callId: "c_ls", content: "ls ran", isError: false }
      ])
    }).pipe(Effect.provide(env([rmAndLs, TestModel.text("done")]))))

  it.effect("needsApproval as a function of the input asks only for the calls it names; approveAll answers them all", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const rm = counted("rm", ran, ({ path }) => Effect.succeed(path === "/"))
      const agent = Agent.make({ name: "a", model: "test:x", tools: [rm] })
      const session = yield* Session.start(agent)
      const asked: Array<string> = []
      const events = yield* streamAnswering(session, (event) =>
        Effect.gen(function*() {
          asked.push(event.callId)
          if (asked.length === 2) yield* session.approveAll
        }))
      assert.deepStrictEqual(asked, ["c_1", "c_3"])
      assert.deepStrictEqual([...(yield* Ref.get(ran))].sort(), ["rm /", "rm /", "rm tmp"])
      assert.strictEqual(events.at(-1)?._tag, "AgentEnd")
    }).pipe(Effect.provide(batch(["rm", "/"], ["rm", "tmp"], ["rm", "/"]))))

  it.effect("a batch's requests are all made at once, even of tools that run alone; each runs in its place once answered", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true, false), counted("ls", ran, false, false)] })
      const session = yield* Session.start(agent)
      // The first handler to see both waiting at once answers them.
      let bothWaiting: ReadonlyArray<string> | undefined
      yield* streamAnswering(session, () =>
        Effect.gen(function*() {
          const pending = yield* session.pending
          if (pending.length < 2 || bothWaiting !== undefined) return
          bothWaiting = pending.map((p) => p.callId)
          yield* session.approveAll
        }))
      assert.deepStrictEqual(bothWaiting, ["c_1", "c_3"])
      assert.deepStrictEqual(yield* Ref.get(ran), ["rm a", "ls b", "rm c"])
    }).pipe(Effect.provide(batch(["rm", "a"], ["ls", "b"], ["rm", "c"]))))

  it.effect("no answer within the rules' timeout is a denial", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran), counted("ls", ran)] })
      const session = yield* Session.start(agent, { approvals: { ask: ["rm"], timeout: "5 minutes" } })
      const asked = yield* Deferred.make<void>()
      const run = yield* Effect.forkChild(streamAnswering(session, () => Deferred.succeed(asked, undefined)))
      yield* Deferred.await(asked)
      yield* TestClock.adjust("5 minutes")
      yield* Fiber.join(run)
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls ."])
      assert.deepStrictEqual(resultsRead(yield* (yield* TestModel.TestModel).requests), [
        { callId: "c_rm", content: "Denied: nobody approved this call within 300000ms", isError: true },
        { callId: "c_ls", content: "ls ran", isError: false }
      ])
      assert.deepStrictEqual(yield* Effect.flip(session.approve("c_rm")), new Approval.NotPending({ sessionId: session.id, callId: "c_rm" }))
    }).pipe(Effect.provide(env([rmAndLs, TestModel.text("done")]))))

  it.effect("an abort while waiting ends the run as any abort does; nothing is left pending", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true)] })
      const session = yield* Session.start(agent)
      const asked = yield* Deferred.make<void>()
      const run = yield* Effect.forkChild(
        Stream.runForEach(session.stream("clean up"), (e) => (e._tag === "ApprovalRequested" ? Deferred.succeed(asked, undefined) : Effect.void))
      )
      yield* Deferred.await(asked)
      yield* session.abort
      const exit = yield* Fiber.await(run)
      assert.isTrue(Exit.isSuccess(exit))
      assert.deepStrictEqual(yield* session.pending, [])
      assert.deepStrictEqual(yield* Ref.get(ran), [])
      const history = yield* session.history
      const last = history.at(-1)!
      assert.deepStrictEqual(last._tag === "ToolResultMessage" && [last.callId, last.content], ["c_1", Session.ABORTED_RESULT])
      assert.strictEqual((yield* Effect.flip(session.approve("c_1")))._tag, "ApprovalNotPending")
    }).pipe(Effect.provide(env([TestModel.reply(TestModel.toolCall("rm", { path: "/" }, "c_1")), TestModel.text("done")]))))

  it.effect("a run waiting on an approval holds no fiber: its fiber ends, and the answer continues the same run", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      // The gate of a batch's one call runs in the run's fiber: the test keeps it to see it end.
      const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
      const asks = () =>
        Effect.withFiber((fiber) => {
          fibers.push(fiber)
          return Effect.succeed(true)
        })
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, asks)] })
      const session = yield* Session.start(agent)
      const asked = yield* Deferred.make<void>()
      const run = yield* Effect.forkChild(Stream.runCollect(Stream.tap(session.stream("clean up"), (e) =>
        e._tag === "ApprovalRequested" ? Deferred.succeed(asked, undefined) : Effect.void)))
      yield* Deferred.await(asked)
      // The run's fiber has ended while its call waits; the call is still pending.
      yield* Fiber.await(fibers[0]!)
      assert.deepStrictEqual(yield* session.pending, [{ callId: "c_1", tool: "rm", input: { path: "/" } }])
      assert.deepStrictEqual(yield* Ref.get(ran), [])
      yield* session.approve("c_1")
      const events = yield* Fiber.join(run)
      assert.deepStrictEqual(yield* Ref.get(ran), ["rm /"])
      // One run, from its start to its end: the same run id, one AgentStart, one AgentEnd.
      assert.deepStrictEqual(events.map((e) => e._tag), [
        "AgentStart",
        "TurnStart",
        "TextDelta",
        "TurnEnd",
        "ToolCall",
        "ApprovalRequested",
        "ToolResult",
        "TurnStart",
        "TextDelta",
        "TurnEnd",
        "AgentEnd"
      ])
      assert.strictEqual(new Set(events.map((e) => e.runId)).size, 1)
      const last = events.at(-1)!
      assert.strictEqual(last._tag === "AgentEnd" && last.outcome, "completed")
      assert.deepStrictEqual(yield* session.pending, [])
    }).pipe(Effect.provide(env([TestModel.reply(TestModel.text("first"), TestModel.toolCall("rm", { path: "/" }, "c_1")), TestModel.text("done")]))))

  it.effect("while a run waits on an approval, a run queued after it waits too; the answer ends the first, then the second runs", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true)] })
      const session = yield* Session.start(agent)
      const asked = yield* Deferred.make<void>()
      const events = yield* session.events.pipe(
        Stream.tap((e) => (e._tag === "ApprovalRequested" ? Deferred.succeed(asked, undefined) : Effect.void)),
        Stream.takeUntil((e) => e._tag === "AgentEnd" && e.runId !== "" && e.seq > 12),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      const first = yield* Effect.forkChild(session.run("clean up"), { startImmediately: true })
      yield* Deferred.await(asked)
      const second = yield* Effect.forkChild(session.run("and then?"), { startImmediately: true })
      yield* session.approve("c_1")
      assert.strictEqual((yield* Fiber.join(first)).text, "done")
      assert.strictEqual((yield* Fiber.join(second)).text, "next")
      const ends = (yield* Fiber.join(events)).flatMap((e) => (e._tag === "AgentStart" || e._tag === "AgentEnd" ? [`${e._tag} ${e._tag === "AgentStart" ? e.prompt : e.outcome}`] : []))
      assert.deepStrictEqual(ends, ["AgentStart clean up", "AgentEnd completed", "AgentStart and then?", "AgentEnd completed"])
      assert.deepStrictEqual(yield* Ref.get(ran), ["rm /"])
    }).pipe(Effect.provide(env([TestModel.reply(TestModel.toolCall("rm", { path: "/" }, "c_1")), TestModel.text("done"), TestModel.text("next")]))))

  it.effect("what a finished call of a parked batch assigns is kept: the next message's calls see it", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const login = Tool.make("login", {
        description: "Logs in",
        parameters: Schema.Struct({ path: Schema.String }),
        call: ({ path }) => Effect.succeed(Tool.assign("logged in", { user: path }))
      })
      const whoami = Tool.make("whoami", {
        description: "Says who is logged in",
        parameters: Schema.Struct({}),
        call: (_, { assigns }) => Effect.succeed(`user ${String(assigns["user"])}`)
      })
      const agent = Agent.make({ name: "a", model: "test:x", tools: [login, counted("rm", ran, true), whoami] })
      const session = yield* Session.start(agent)
      yield* streamAnswering(session, (event) => session.approve(event.callId))
      assert.deepStrictEqual(yield* session.assigns, { user: "ada" })
      const history = yield* session.history
      assert.deepStrictEqual(history.flatMap((m) => (m._tag === "ToolResultMessage" ? [`${m.callId}: ${m.content}`] : [])), [
        "c_1: logged in",
        "c_2: rm ran",
        "c_3: user ada"
      ])
    }).pipe(Effect.provide(env([
      TestModel.reply(TestModel.toolCall("login", { path: "ada" }, "c_1"), TestModel.toolCall("rm", { path: "/" }, "c_2")),
      TestModel.reply(TestModel.toolCall("whoami", {}, "c_3")),
      TestModel.text("done")
    ]))))

  it.effect("an abort while a run waits on an approval ends it; a run queued behind it then runs", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true)] })
      const session = yield* Session.start(agent)
      const asked = yield* Deferred.make<void>()
      const observed = yield* Effect.forkChild(
        Stream.runForEach(session.events, (e) => (e._tag === "ApprovalRequested" ? Deferred.succeed(asked, undefined) : Effect.void)),
        { startImmediately: true }
      )
      const first = yield* Effect.forkChild(session.run("clean up"), { startImmediately: true })
      yield* Deferred.await(asked)
      const second = yield* Effect.forkChild(session.run("and then?"), { startImmediately: true })
      yield* session.abort
      const aborted = yield* Effect.flip(Fiber.join(first))
      assert.strictEqual(aborted._tag === "SessionError" && aborted.reason._tag, "RunAborted")
      assert.strictEqual((yield* Fiber.join(second)).text, "next")
      assert.deepStrictEqual(yield* session.pending, [])
      assert.deepStrictEqual(yield* Ref.get(ran), [])
      assert.strictEqual((yield* Effect.flip(session.approve("c_1")))._tag, "ApprovalNotPending")
      yield* Fiber.interrupt(observed)
    }).pipe(Effect.provide(env([TestModel.reply(TestModel.toolCall("rm", { path: "/" }, "c_1")), TestModel.text("next")]))))

  it.effect("an allow rule over tools that declare needsApproval runs their calls unasked; the same agent without it parks them (issue 44)", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const tools = [counted("rm", ran, true), counted("mv", ran, () => Effect.succeed(true)), counted("ls", ran)]
      const agent = Agent.make({ name: "a", model: "test:x", tools })
      const replies = [TestModel.reply(...["rm", "mv", "ls"].map((tool, i) => TestModel.toolCall(tool, { path: "/" }, `c_${i + 1}`))), TestModel.text("done")]
      const results = (history: ReadonlyArray<Message.Message>) => history.flatMap((m) => (m._tag === "ToolResultMessage" ? [`${m.callId}: ${m.content}`] : []))
      const allowed = yield* Effect.gen(function*() {
        const session = yield* Session.start(agent, { approvals: { allow: ["rm", "m*"] } })
        // Asked anyway (the rule ignored), it is denied, so the run ends and says so.
        const events = yield* streamAnswering(session, (event) => session.deny(event.callId, "the rule allows it"))
        return { asked: events.filter((e) => e._tag === "ApprovalRequested").length, results: results(yield* session.history) }
      }).pipe(Effect.provide(env(replies)))
      assert.deepStrictEqual(allowed, { asked: 0, results: ["c_1: rm ran", "c_2: mv ran", "c_3: ls ran"] })
      assert.deepStrictEqual([...(yield* Ref.get(ran))].sort(), ["ls /", "mv /", "rm /"])
      yield* Ref.set(ran, [])
      const parked = yield* Effect.gen(function*() {
        const session = yield* Session.start(agent)
        // Waiting: both asked, and ls's result out.
        const seen = yield* Ref.make(0)
        const waited = yield* Deferred.make<void>()
        const run = yield* Effect.forkChild(Stream.runForEach(session.stream("clean up"), (e) =>
          e._tag === "ApprovalRequested" || (e._tag === "ToolResult" && e.callId === "c_3")
            ? Effect.flatMap(Ref.updateAndGet(seen, (n) => n + 1), (n) => (n === 3 ? Deferred.succeed(waited, undefined) : Effect.void))
            : Effect.void))
        yield* Deferred.await(waited)
        const waiting = { pending: yield* session.pending, ran: yield* Ref.get(ran) }
        yield* session.approveAll
        yield* Fiber.join(run)
        return { waiting, results: results(yield* session.history) }
      }).pipe(Effect.provide(env(replies)))
      assert.deepStrictEqual(parked, {
        waiting: {
          pending: [{ callId: "c_1", tool: "rm", input: { path: "/" } }, { callId: "c_2", tool: "mv", input: { path: "/" } }],
          ran: ["ls /"]
        },
        results: ["c_1: rm ran", "c_2: mv ran", "c_3: ls ran"]
      })
    }))

  it.effect("an allow rule over needsApproval tools holds where policies are read too: a live one that decides nothing, a shadow one (issue 44)", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("mv", ran, () => Effect.succeed(true))] })
      const silent = (shadow: boolean) => ApprovalPolicy.make(shadow ? "watching" : "undecided", () => Effect.undefined, { shadow })
      // A shadow policy is read only by a session that keeps a log (a store's): every call then goes through the rules.
      const outcome = (shadow: boolean) =>
        Effect.gen(function*() {
          const session = yield* Session.start(agent, { store: SessionStore.makeMemory(), approvals: { allow: ["rm", "mv"], policies: [silent(shadow)] } })
          const events = yield* streamAnswering(session, (event) => session.deny(event.callId, "the rule allows it"))
          return {
            asked: events.filter((e) => e._tag === "ApprovalRequested").length,
            results: (yield* session.history).flatMap((m) => (m._tag === "ToolResultMessage" ? [`${m.callId}: ${m.content}`] : []))
          }
        }).pipe(Effect.provide(batch(["rm", "/"], ["mv", "/"])))
      const unasked = { asked: 0, results: ["c_1: rm ran", "c_2: mv ran"] }
      assert.deepStrictEqual([yield* outcome(false), yield* outcome(true)], [unasked, unasked])
    }))

  it.effect("a bad pattern fails the start", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "a", model: "test:x", approvals: { deny: ["[z-a]"] } })
      const error = yield* Effect.flip(Session.start(agent))
      assert.strictEqual(error._tag, "InvalidApprovalRule")
    }).pipe(Effect.provide(env([]))))
})

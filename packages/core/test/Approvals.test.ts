/**
 * Approvals as records (issue 39): each request a session makes is a record in its store's
 * approval log, saved with the wait; answers are recorded there with who gave them and why, once;
 * the `Approvals` service finds them across sessions and answers them by id from another
 * "process" (a new registry over the same store); a deadline holds across a restart.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option, Ref, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as Agent from "../src/Agent.ts"
import * as Approval from "../src/Approval.ts"
import * as ApprovalLog from "../src/ApprovalLog.ts"
import type * as ApprovalRecord from "../src/ApprovalRecord.ts"
import * as Approvals from "../src/Approvals.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as Sessions from "../src/Sessions.ts"
import * as SessionStore from "../src/SessionStore.ts"
import type * as Snapshot from "../src/Snapshot.ts"
import * as Tool from "../src/Tool.ts"
import * as Records from "../src/runtime/approvalRecords.ts"

const counted = (name: string, ran: Ref.Ref<ReadonlyArray<string>>, needsApproval: boolean) =>
  Tool.make(name, {
    description: `The ${name} command`,
    parameters: Schema.Struct({ path: Schema.String }),
    needsApproval,
    call: ({ path }) => Effect.as(Ref.update(ran, (all) => [...all, `${name} ${path.slice(0, 20)}`]), `${name} ran`)
  })

const agentOf = (ran: Ref.Ref<ReadonlyArray<string>>, approvals?: Approval.Rules) =>
  Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true)], ...(approvals === undefined ? {} : { approvals }) })

const rm = (path = "/", id = "c_rm") => TestModel.toolCall("rm", { path }, id)

/** Waits until `store`'s log lists `count` open records. */
const openRecords = (store: SessionStore.Service, count: number) =>
  Effect.gen(function*() {
    for (;;) {
      const page = yield* store.approvals!.list({ limit: 1000 })
      if (page.records.length >= count) return page.records
      yield* Effect.yieldNow
    }
  })

/** A first "process": `ids` sessions each wait on rm; its scope closes (the process is gone) once all are in the log. */
const diesWaiting = (store: SessionStore.Service, ids: ReadonlyArray<string>, approvals?: Approval.Rules) =>
  Effect.scoped(Effect.gen(function*() {
    const ran = yield* Ref.make<ReadonlyArray<string>>([])
    const sessions: Array<Session.Session> = []
    for (const id of ids) {
      const session = yield* Session.start(agentOf(ran, approvals), { id, store })
      sessions.push(session)
      yield* Effect.forkScoped(Effect.exit(session.run("clean up")))
    }
    const open = yield* openRecords(store, ids.length)
    // Stopped, as a process is at its end (its runs are not aborted: the store keeps their batches).
    for (const session of sessions) yield* session.stop
    return open
  })).pipe(Effect.provide(Layer.mergeAll(TestModel.layer(ids.map(() => rm())), Sandbox.layerNoop())))

/** The tool results the model read in the last request. */
const lastResults = (requests: ReadonlyArray<TestModel.RecordedRequest>) =>
  [...requests.at(-1)!.messages].flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))

/** The fields of a record that do not vary from run to run. */
const stable = ({ answeredAt: _a, id: _i, requestedAt: _r, runId: _u, ...rest }: ApprovalRecord.ApprovalRecord) => rest

describe("approval records", () => {
  it.effect("a call that asks is an open record in the store's log, saved with the wait; approve records who and why, once", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const store = SessionStore.makeMemory()
      const session = yield* Session.start(agentOf(ran), { id: "s", store })
      const run = yield* Effect.forkChild(session.run("clean up"), { startImmediately: true })
      const [open] = yield* openRecords(store, 1)
      assert.deepStrictEqual(stable(open!), { sessionId: "s", agent: "a", callId: "c_rm", tool: "rm", input: { path: "/" }, rule: "needsApproval" })
      // Saved with the wait: the snapshot's batch carries it.
      assert.deepStrictEqual(Option.getOrThrow(yield* store.load("s")).batch?.approvals, [open])
      yield* session.approve("c_rm", { by: "ana", reason: "looks safe" })
      assert.strictEqual((yield* Fiber.join(run)).text, "done")
      const answered = Option.getOrThrow(yield* store.approvals!.get(open!.id))
      assert.deepStrictEqual(stable(answered), { ...stable(open!), outcome: "approved", by: "ana", reason: "looks safe" })
      assert.isNumber(answered.answeredAt)
      assert.deepStrictEqual(yield* Ref.get(ran), ["rm /"])
      assert.strictEqual((yield* Effect.flip(session.approve("c_rm", { by: "bo" })))._tag, "ApprovalNotPending")
      assert.deepStrictEqual((yield* store.approvals!.list()).records, [])
      assert.deepStrictEqual((yield* store.approvals!.list({ status: "answered", by: "ana" })).records, [answered])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([rm(), TestModel.text("done")]), Sandbox.layerNoop()))))

  it.effect("every save of a batch with a call waiting carries its open record, the journal's saves of the other calls' starts too", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const memory = SessionStore.makeMemory()
      const saved: Array<Snapshot.Snapshot> = []
      const store: SessionStore.Service = { ...memory, save: (snapshot, options) => Effect.andThen(Effect.sync(() => saved.push(snapshot)), memory.save(snapshot, options)) }
      const agent = Agent.make({ name: "a", model: "test:x", tools: [counted("rm", ran, true), counted("ls", ran, false)] })
      const session = yield* Session.start(agent, { id: "s", store })
      const run = yield* Effect.forkChild(session.run("clean up"), { startImmediately: true })
      const [open] = yield* openRecords(memory, 1)
      while ((yield* Ref.get(ran)).length === 0) yield* Effect.yieldNow
      const waiting = saved.filter((snapshot) => (snapshot.batch?.waiting.length ?? 0) > 0)
      assert.isAtLeast(waiting.length, 2)
      for (const snapshot of waiting) assert.deepStrictEqual(snapshot.batch?.approvals, [open])
      yield* session.approve("c_rm")
      // The call approved then ran, after the other, and the run ended with the model's answer.
      assert.strictEqual((yield* Fiber.join(run)).text, "done")
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls .", "rm /"])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.reply(rm(), TestModel.toolCall("ls", { path: "." }, "c_ls")), TestModel.text("done")]), Sandbox.layerNoop()))))

  it.effect("a deny rule's deny: the record says who denied and the model reads the reason; an abort ends an open record as aborted", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const store = SessionStore.makeMemory()
      const session = yield* Session.start(agentOf(ran, { ask: ["rm"] }), { id: "s", store })
      const first = yield* Effect.forkChild(session.run("one"), { startImmediately: true })
      const [asked] = yield* openRecords(store, 1)
      assert.strictEqual(asked!.rule, "ask: rm")
      yield* session.deny("c_rm", "not today", { by: "bo" })
      yield* Fiber.await(first)
      assert.deepStrictEqual(stable(Option.getOrThrow(yield* store.approvals!.get(asked!.id))), { ...stable(asked!), outcome: "denied", by: "bo", reason: "not today" })
      const second = yield* Effect.forkChild(session.run("two"), { startImmediately: true })
      const [again] = yield* openRecords(store, 1)
      yield* session.abort
      yield* Fiber.await(second)
      assert.deepStrictEqual(stable(Option.getOrThrow(yield* store.approvals!.get(again!.id))), { ...stable(again!), callId: "c_2", outcome: "aborted", by: "abort" })
      assert.deepStrictEqual(yield* Ref.get(ran), [])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([rm(), TestModel.text("ok"), rm("/", "c_2")]), Sandbox.layerNoop()))))

  it.effect("an answer recorded in the log while no process holds the session (the CLI's way) is the one the call takes when the session next starts", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      const [open] = yield* diesWaiting(store, ["s"])
      yield* store.approvals!.answer(open!.id, "denied", 0, { by: "bo", reason: "not today" })
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const { model, recorder } = yield* TestModel.make([TestModel.text("understood")])
      const session = yield* Session.start(agentOf(ran), { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
      yield* session.idle
      assert.deepStrictEqual(lastResults(yield* recorder.requests), ["Denied by the user: not today"])
      assert.deepStrictEqual(yield* Ref.get(ran), [])
      assert.deepStrictEqual(yield* session.pending, [])
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("a record the log has open that no restored call holds (the snapshot never said so) ends as aborted when the session starts", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      const [open] = yield* diesWaiting(store, ["s"])
      // As if the process died after indexing the record and before its snapshot held it.
      const snapshot = Option.getOrThrow(yield* store.load("s"))
      const { approvals: _, ...batch } = snapshot.batch!
      yield* store.save({ ...snapshot, batch })
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const session = yield* Session.start(agentOf(ran), { id: "s", store }).pipe(Effect.provide(TestModel.layer([])))
      assert.deepStrictEqual(yield* session.pending, [{ callId: "c_rm", tool: "rm", input: { path: "/" } }])
      assert.deepStrictEqual(stable(Option.getOrThrow(yield* store.approvals!.get(open!.id))), { ...stable(open!), outcome: "aborted", by: "restart" })
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("a deadline holds across a restart: requested, the process gone, started again after it: expired, the model reads so, nothing ran", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      const [open] = yield* diesWaiting(store, ["s"], { expires: "1 hour" })
      assert.strictEqual(open!.expiresAt, open!.requestedAt + 3_600_000)
      yield* TestClock.adjust("2 hours")
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const { model, recorder } = yield* TestModel.make([TestModel.text("understood")])
      const session = yield* Session.start(agentOf(ran, { expires: "1 hour" }), { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
      yield* session.idle
      assert.deepStrictEqual(lastResults(yield* recorder.requests), [Approval.deniedByExpiry(open!.expiresAt!)])
      assert.deepStrictEqual(yield* Ref.get(ran), [])
      assert.deepStrictEqual(stable(Option.getOrThrow(yield* store.approvals!.get(open!.id))), { ...stable(open!), outcome: "expired", by: "expiry" })
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("a deadline in a live session: the parked run goes on at it, the model reading that the request expired", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const store = SessionStore.makeMemory()
      const { model, recorder } = yield* TestModel.make([rm(), TestModel.text("understood")])
      const session = yield* Session.start(agentOf(ran, { expires: "30 minutes" }), { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
      const run = yield* Effect.forkChild(session.run("clean up"), { startImmediately: true })
      const [open] = yield* openRecords(store, 1)
      yield* TestClock.adjust("29 minutes")
      assert.deepStrictEqual((yield* store.approvals!.list()).records, [open])
      yield* TestClock.adjust("1 minute")
      assert.strictEqual((yield* Fiber.join(run)).text, "understood")
      assert.deepStrictEqual(lastResults(yield* recorder.requests), [Approval.deniedByExpiry(open!.expiresAt!)])
      assert.strictEqual(Option.getOrThrow(yield* store.approvals!.get(open!.id)).outcome, "expired")
      assert.deepStrictEqual(yield* Ref.get(ran), [])
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("hostile input: an input past the record's bound is kept as a sentence; a 1 MB reason and identity are cut", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const store = SessionStore.makeMemory()
      const session = yield* Session.start(agentOf(ran), { id: "s", store })
      const run = yield* Effect.forkChild(session.run("clean up"), { startImmediately: true })
      const [open] = yield* openRecords(store, 1)
      assert.match(String(open!.input), /^\[input not kept: it holds .*; the session's history has the call\]$/)
      yield* session.approve("c_rm", { by: "x".repeat(1_000_000), reason: "y".repeat(1_000_000) })
      yield* Fiber.await(run)
      const answered = Option.getOrThrow(yield* store.approvals!.get(open!.id))
      assert.deepStrictEqual([answered.by?.length, answered.reason?.length], [256, 4096])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([rm("p".repeat(200_000)), TestModel.text("done")]), Sandbox.layerNoop()))))
})

describe("an answer's record", () => {
  it.live("answers whose log write spans the batch parking still reach their calls (an answerer approving three calls, a slow log)", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const memory = SessionStore.makeMemory()
      const log = memory.approvals!
      // Each answer's write takes a while: the batch parks while the first ones are being written.
      const store: SessionStore.Service = { ...memory, approvals: { ...log, answer: (...args) => Effect.andThen(Effect.sleep("20 millis"), log.answer(...args)) } }
      const session = yield* Session.start(agentOf(ran), { id: "s", store, answerer: () => Effect.succeed(Approval.approved) })
      assert.strictEqual((yield* session.run("clean up").pipe(Effect.timeout("5 seconds"))).text, "done")
      assert.deepStrictEqual([...(yield* Ref.get(ran))].sort(), ["rm /a", "rm /b", "rm /c"])
      assert.deepStrictEqual((yield* log.list({ status: "answered" })).records.map((record) => record.outcome), ["approved", "approved", "approved"])
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.reply(rm("/a", "c1"), rm("/b", "c2"), rm("/c", "c3")), TestModel.text("done")]),
      Sandbox.layerNoop()
    ))))

  it.effect("an answer that comes past the request's deadline, before its timer fired, is its expiry; the log says so", () =>
    Effect.gen(function*() {
      const log = ApprovalLog.make()
      const record: ApprovalRecord.ApprovalRecord = { id: "r1", sessionId: "s", agent: "a", callId: "c", tool: "rm", input: {}, rule: "needsApproval", requestedAt: 0, expiresAt: 1_000 }
      log.index([record], 0)
      yield* TestClock.adjust(2_000)
      assert.deepStrictEqual(yield* Records.take(log, record, Approval.approved, { by: "ana" }), { answer: { _tag: "Expired", timeoutMs: 0, at: 1_000 } })
      const ended = Option.getOrThrow(yield* log.get("r1"))
      assert.deepStrictEqual([ended.outcome, ended.by], ["expired", "expiry"])
    }))
})

describe("the Approvals service", () => {
  it.effect("20 sessions waiting, their process gone: a new one lists all 20 and answers them by id; each call runs once; the audit says who answered", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      const ids = Array.from({ length: 20 }, (_, i) => `s${i + 1}`)
      yield* diesWaiting(store, ids)
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const done = yield* Deferred.make<void>()
      const second = Approvals.layer.pipe(
        Layer.provideMerge(Sessions.layerById({ a: agentOf(ran) })),
        Layer.provideMerge(Sessions.layer),
        Layer.provide(Layer.mergeAll(Layer.succeed(SessionStore.SessionStore, store), TestModel.layer(ids.map(() => TestModel.text("done"))), Sandbox.layerNoop()))
      )
      yield* Effect.gen(function*() {
        const approvals = yield* Approvals.Approvals
        const page = yield* approvals.list({ limit: 15 })
        const rest = yield* approvals.list({ limit: 15, cursor: page.next })
        const open = [...page.records, ...rest.records]
        assert.deepStrictEqual([page.records.length, rest.records.length, rest.next], [15, 5, undefined])
        assert.deepStrictEqual(open.map((r) => r.sessionId).sort(), [...ids].sort())
        for (const record of open) {
          const answered = yield* approvals.approve(record.id, { by: "ops", reason: "batch review" })
          assert.deepStrictEqual([answered.outcome, answered.by], ["approved", "ops"])
        }
        const registry = yield* Sessions.Sessions
        for (const id of ids) yield* Effect.flatMap(registry.whereis(id), (found) => Option.getOrThrow(found).idle)
        yield* Deferred.succeed(done, undefined)
        const again = yield* Effect.flip(approvals.approve(open[0]!.id, { by: "eve" }))
        assert.deepStrictEqual([again._tag, again._tag === "ApprovalRefused" && again.reason], ["ApprovalRefused", "answered"])
        assert.match(again.message, /was answered already: approved by "ops"/)
        const unknown = yield* Effect.flip(approvals.deny("no-such-id"))
        assert.strictEqual(unknown._tag === "ApprovalRefused" && unknown.reason, "unknown")
        const audit = yield* approvals.list({ status: "answered", by: "ops", limit: 1000 })
        assert.strictEqual(audit.records.length, 20)
      }).pipe(Effect.provide(second))
      yield* Deferred.await(done)
      // Each call ran once, in the second process.
      assert.deepStrictEqual(yield* Ref.get(ran), ids.map(() => "rm /"))
    }))

  it.effect("a sub-agent's request is a record under its top-level session: the service answers it by id through that session", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const store = SessionStore.makeMemory()
      const researcher = Agent.make({ name: "researcher", model: "child:x", tools: [counted("lookup", ran, false)], approvals: { ask: ["lookup"] } })
      const main = Agent.make({ name: "main", model: "parent:x", tools: [Agent.asTool(researcher, { description: "Researches" })] })
      const parent = yield* TestModel.make([TestModel.toolCall("researcher", { prompt: "What is effect?" }, "c_research"), TestModel.text("Done")], { name: "parent:x" })
      const child = yield* TestModel.make([TestModel.toolCall("lookup", { path: "effect" }, "c_lookup"), TestModel.text("It is a library")], { name: "child:x" })
      const layer = Approvals.layer.pipe(
        Layer.provideMerge(Sessions.layerById({ main })),
        Layer.provideMerge(Sessions.layer),
        Layer.provide(Layer.mergeAll(
          Layer.succeed(SessionStore.SessionStore, store),
          Model.layerProviders({ parent: () => Effect.succeed(parent.model), child: () => Effect.succeed(child.model) }),
          Sandbox.layerNoop()
        ))
      )
      yield* Effect.gen(function*() {
        const byId = yield* Sessions.ById
        const approvals = yield* Approvals.Approvals
        yield* byId.start("main", { id: "s" })
        const run = yield* Effect.forkChild(byId.run("s", "Find out"), { startImmediately: true })
        const [open] = yield* openRecords(store, 1)
        assert.deepStrictEqual(stable(open!), { sessionId: "s", agent: "main/researcher", callId: "c_lookup", tool: "lookup", input: { path: "effect" }, rule: "ask: lookup" })
        const answered = yield* approvals.approve(open!.id, { by: "ana" })
        assert.deepStrictEqual([answered.outcome, answered.by], ["approved", "ana"])
        assert.strictEqual((yield* Fiber.join(run)).text, "Done")
        assert.deepStrictEqual(yield* Ref.get(ran), ["lookup effect"])
      }).pipe(Effect.provide(layer))
    }))

  it.effect("a store without an approval log gives no service, saying why", () =>
    Effect.scoped(Effect.gen(function*() {
      const { approvals: _, ...bare } = SessionStore.makeMemory()
      const sessions = yield* Sessions.make()
      const byId = yield* Sessions.makeById<never>(sessions, {})
      const refused = yield* Effect.flip(Approvals.make(bare, byId))
      assert.strictEqual(refused._tag, "NoApprovalLog")
    })))
})

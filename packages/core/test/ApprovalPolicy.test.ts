/**
 * Policies as code (issue 39 item 5): an Effect deciding allow / ask / deny with a reason, read
 * after the deny and ask globs and before allow and the tool's flag; a broken policy asks; a
 * shadow policy decides nothing and records what it would have decided beside what happened.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Ref, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Agent from "../src/Agent.ts"
import type * as Approval from "../src/Approval.ts"
import * as ApprovalPolicy from "../src/ApprovalPolicy.ts"
import type * as ApprovalRecord from "../src/ApprovalRecord.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as SessionStore from "../src/SessionStore.ts"
import * as Tool from "../src/Tool.ts"

/** `git <args>`, flagged `needsApproval`: the policies' allow lets it run unasked. */
const git = (ran: Ref.Ref<ReadonlyArray<string>>) =>
  Tool.make("git", {
    description: "Runs git",
    parameters: Schema.Struct({ args: Schema.String }),
    needsApproval: true,
    call: ({ args }) => Effect.as(Ref.update(ran, (all) => [...all, args]), `git ${args} done`)
  })

const noForce = ApprovalPolicy.make("no-force-push", ({ input, tool }) =>
  Effect.succeed(tool === "git" && (input as { readonly args: string }).args.includes("--force") ? ApprovalPolicy.deny("force pushes rewrite history") : undefined))

const reviewProd = ApprovalPolicy.make("review-prod", ({ input }) =>
  Effect.succeed((input as { readonly args: string }).args.includes("prod") ? ApprovalPolicy.ask("touches prod") : ApprovalPolicy.allow()))

const calls = TestModel.reply(
  TestModel.toolCall("git", { args: "push --force" }, "c_force"),
  TestModel.toolCall("git", { args: "deploy prod" }, "c_prod"),
  TestModel.toolCall("git", { args: "status" }, "c_status")
)

/** The results the model read for the message's calls. */
const read = (events: ReadonlyArray<{ readonly _tag: string }>) =>
  events.flatMap((event) => (event._tag === "ToolResult" ? [event as unknown as { readonly callId: string; readonly content: string }] : []))
    .map(({ callId, content }) => [callId, content])

describe("policies as code", () => {
  it.effect("the first policy with an opinion decides: a deny the model reads with its reason, an ask a person answers, an allow that runs a flagged tool unasked", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const store = SessionStore.makeMemory()
      const agent = Agent.make({ name: "a", model: "test:x", tools: [git(ran)], approvals: { policies: [noForce, reviewProd] } })
      const session = yield* Session.start(agent, { id: "s", store })
      const asked: Array<string> = []
      const events = yield* Stream.runCollect(Stream.tap(session.stream("ship it"), (event) => {
        if (event._tag !== "ApprovalRequested") return Effect.void
        asked.push(event.callId)
        return Effect.orDie(session.approve(event.callId, { by: "ana" }))
      }))
      assert.deepStrictEqual(asked, ["c_prod"])
      assert.deepStrictEqual(read([...events]), [
        ["c_force", `Denied by policy "no-force-push": force pushes rewrite history`],
        ["c_prod", "git deploy prod done"],
        ["c_status", "git status done"]
      ])
      assert.deepStrictEqual([...(yield* Ref.get(ran))].sort(), ["deploy prod", "status"])
      const [record] = (yield* store.approvals!.list({ status: "answered" })).records
      assert.deepStrictEqual([record?.callId, record?.rule, record?.outcome, record?.by], ["c_prod", "policy: review-prod", "approved", "ana"])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([calls, TestModel.text("done")]), Sandbox.layerNoop()))))

  it.effect("the globs come first: a deny pattern refuses before any policy is asked", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const seen = yield* Ref.make(0)
      const counting = ApprovalPolicy.make("allow-all", () => Effect.as(Ref.update(seen, (n) => n + 1), ApprovalPolicy.allow()))
      const agent = Agent.make({ name: "a", model: "test:x", tools: [git(ran)], approvals: { deny: ["git"], policies: [counting] } })
      const session = yield* Session.start(agent)
      const events = yield* Stream.runCollect(session.stream("ship it"))
      assert.deepStrictEqual(read([...events]).map(([, content]) => content), [1, 2, 3].map(() => `Denied by a rule: git matches "git"`))
      assert.deepStrictEqual([yield* Ref.get(seen), (yield* Ref.get(ran)).length], [0, 0])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([calls, TestModel.text("done")]), Sandbox.layerNoop()))))

  it.effect("a policy that never decides asks a person once its time is up: it holds no call for ever", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const hangs = ApprovalPolicy.make("hangs", () => Effect.never)
      const tool = Tool.make("ls", { description: "Lists", parameters: Schema.Struct({}), call: () => Effect.as(Ref.update(ran, (all) => [...all, "ls"]), "listed") })
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [tool], approvals: { policies: [hangs] } }))
      const run = yield* Effect.forkChild(session.run("look"), { startImmediately: true })
      // A second at a time: nothing asks before the policy's time is up, and then a person is asked.
      let waited = 0
      while ((yield* session.pending).length === 0 && waited < 60) {
        yield* TestClock.adjust("1 second")
        waited++
      }
      assert.strictEqual(waited, 10)
      assert.deepStrictEqual(yield* Ref.get(ran), [])
      yield* session.approve("c_1")
      // The parked batch goes on through the rules again: the policy is asked again, and again runs out of time.
      yield* TestClock.adjust(ApprovalPolicy.DECISION_TIMEOUT)
      yield* Fiber.join(run)
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls"])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.toolCall("ls", {}, "c_1"), TestModel.text("done")]), Sandbox.layerNoop()))))

  it.effect("a policy that fails asks a person: a broken policy never lets a call through", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const broken = ApprovalPolicy.make("broken", () => Effect.die(new Error("the classifier is down")))
      const rules: Approval.Rules = { policies: [broken] }
      const tool = Tool.make("ls", { description: "Lists", parameters: Schema.Struct({}), call: () => Effect.as(Ref.update(ran, (all) => [...all, "ls"]), "listed") })
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [tool], approvals: rules }))
      const run = yield* Effect.forkChild(session.run("look"), { startImmediately: true })
      while ((yield* session.pending).length === 0) yield* Effect.yieldNow
      assert.deepStrictEqual(yield* session.pending, [{ callId: "c_1", tool: "ls", input: {} }])
      assert.deepStrictEqual(yield* Ref.get(ran), [])
      yield* session.approve("c_1")
      yield* Fiber.join(run)
      assert.deepStrictEqual(yield* Ref.get(ran), ["ls"])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.toolCall("ls", {}, "c_1"), TestModel.text("done")]), Sandbox.layerNoop()))))

  it.effect("shadow mode: 1,000 calls under a shadow policy: each recorded decision is the policy's, beside what happened; no call waited, every call ran", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make(0)
      const store = SessionStore.makeMemory()
      const byN = (n: number) => n % 3 === 0 ? ApprovalPolicy.deny(`n=${n}`) : n % 3 === 1 ? ApprovalPolicy.ask() : ApprovalPolicy.allow()
      const trial = ApprovalPolicy.make("trial", ({ input }) => Effect.succeed(byN((input as { readonly n: number }).n)), { shadow: true })
      const echo = Tool.make("echo", {
        description: "Echoes",
        parameters: Schema.Struct({ n: Schema.Int }),
        call: ({ n }) => Effect.as(Ref.update(ran, (count) => count + 1), `${n}`)
      })
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [echo], approvals: { policies: [trial] } }), { id: "s", store })
      const events = yield* Stream.runCollect(session.stream("count"))
      assert.deepStrictEqual([[...events].filter((event) => event._tag === "ApprovalRequested").length, yield* Ref.get(ran)], [0, 1000])
      // Recorded from fibers of the session's scope: they may land just after the run.
      let records: ReadonlyArray<ApprovalRecord.ApprovalRecord> = []
      for (let i = 0; i < 10_000 && records.length < 1000; i++) {
        records = (yield* store.approvals!.list({ shadow: true, status: "all", limit: 1000 })).records
        if (records.length < 1000) yield* Effect.yieldNow
      }
      assert.strictEqual(records.length, 1000)
      for (const record of records) {
        const n = (record.input as { readonly n: number }).n
        const expected = byN(n)
        assert.deepStrictEqual([record.rule, record.shadow], ["none", { policy: "trial", decision: expected.decision, ...(expected.reason === undefined ? {} : { reason: expected.reason }) }])
      }
      assert.deepStrictEqual((yield* store.approvals!.list({ status: "all" })).records, [])
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([
        ...Array.from({ length: 10 }, (_, turn) =>
          TestModel.reply(...Array.from({ length: 100 }, (_, i) => TestModel.toolCall("echo", { n: turn * 100 + i }, `c${turn * 100 + i}`)))),
        TestModel.text("done")
      ]),
      Sandbox.layerNoop()
    ))))
})


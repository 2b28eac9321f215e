/**
 * SessionEntity: what a run delivered again after its runner died finds in the history (nothing of
 * it, all of it, a part: then the session's own continuation completes it), and an entity that
 * passivates after `maxIdleTime` (its session stops, its history stays and comes back with the
 * next message).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Queue, Schema, Stream, Tracer } from "effect"
import { TestRunner } from "effect/cluster"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import { Spans, TempDir, TestModel } from "@condukt/testing"
import * as Agent from "@condukt/core/Agent"
import * as Approvals from "@condukt/core/Approvals"
import * as Message from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Session from "@condukt/core/Session"
import * as SessionId from "@condukt/core/SessionId"
import * as Sessions from "@condukt/core/Sessions"
import * as Tool from "@condukt/core/Tool"
import * as Snapshot from "@condukt/core/Snapshot"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as ClusterSessions from "../src/ClusterSessions.ts"
import * as SessionRows from "../src/internal/sessionRows.ts"
import * as SessionEntity from "../src/SessionEntity.ts"
import * as SqlSessionStore from "../src/SqlSessionStore.ts"
import { echoModel } from "../../core/test/fixtures/sessionsById.ts"
import * as LoggedTools from "../../core/test/fixtures/loggedTools.ts"
import { startProbe } from "../../core/test/fixtures/startProbe.ts"

const tempDir = TempDir.make("condukt-store-")

const before = [Message.user("earlier"), Message.assistant([Message.textPart("sure")])]
const call = Message.assistant([{ _tag: "ToolCall", id: "c1", name: "Bash", input: { command: "ls" } }])
const result = Message.toolResult({ callId: "c1", name: "Bash", content: "a.txt", isError: false })
const answer = Message.assistant([Message.textPart("one "), Message.textPart("file")])

describe("SessionEntity.redelivered", () => {
  it("a run of which nothing was saved runs", () => {
    assert.strictEqual(SessionEntity.redelivered(before, 2), "fresh")
  })

  it("a run saved whole gives the reply rebuilt from the history, not a second run", () => {
    assert.deepStrictEqual(SessionEntity.redelivered([...before, Message.user("ls"), call, result, answer], 2), {
      text: "one file",
      turns: 2,
      messages: [call, result, answer]
    })
  })

  it("a run saved in part does not run again", () => {
    assert.strictEqual(SessionEntity.redelivered([...before, Message.user("ls"), call, result], 2), "partial")
  })
})

describe("SessionEntity on one in-memory runner", () => {
  it.live("an idle entity passivates after maxIdleTime: its session stops, and the next message starts it again from the store", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const told = yield* Queue.unbounded<string>()
      const agents = { probed: Agent.make({ name: "probed", model: "test:echo", sandbox: Sandbox.layerNoop(), mcpServers: [startProbe(told)] }) }
      const cluster = ClusterSessions.layer.pipe(
        Layer.provideMerge(SessionEntity.layer({ agents, maxIdleTime: "200 millis" })),
        Layer.provide(TestRunner.layer),
        Layer.provide(Layer.mergeAll(SqliteClient.layer({ file: path.join(dir, "cluster.db") }), Layer.succeed(Model.Model, echoModel)))
      )
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const id = yield* sessions.start("probed", { id: "idle" })
        yield* sessions.run(id, "one")
        assert.strictEqual(yield* Queue.take(told), "started")
        // The runner looks for idle entities every 5 s at most: this waits that long.
        assert.strictEqual(yield* Queue.take(told), "released")
        assert.deepStrictEqual((yield* sessions.history(id)).length, 2)
        assert.strictEqual(yield* Queue.take(told), "started")
      }).pipe(Effect.provide(cluster))
    }))
})

describe("SessionEntity and a run waiting for approval", () => {
  it.live("its entity does not passivate while the run waits (the wait is not lost to idleness); answered by the record's id, the run answers the reply", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const told = yield* Queue.unbounded<string>()
      const rm = Tool.make("rm", { description: "Removes", parameters: Schema.Struct({}), needsApproval: true, call: () => Effect.succeed("removed") })
      const agents = { guarded: Agent.make({ name: "guarded", model: "test:x", tools: [rm], sandbox: Sandbox.layerNoop(), mcpServers: [startProbe(told)] }) }
      const cluster = Approvals.layer.pipe(
        Layer.provideMerge(Layer.merge(ClusterSessions.layer, SqlSessionStore.layer())),
        Layer.provideMerge(SessionEntity.layer({ agents, maxIdleTime: "200 millis" })),
        Layer.provide(TestRunner.layer),
        Layer.provide(Layer.mergeAll(
          SqliteClient.layer({ file: path.join(dir, "cluster.db") }),
          TestModel.layer([TestModel.toolCall("rm", {}, "c1"), TestModel.text("done")])
        ))
      )
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const approvals = yield* Approvals.Approvals
        const id = yield* sessions.start("guarded", { id: "waits" })
        assert.strictEqual(yield* Queue.take(told), "started")
        const run = yield* Effect.forkChild(sessions.run(id, "go"))
        let open = (yield* approvals.list()).records
        while (open.length === 0) open = yield* Effect.andThen(Effect.sleep("20 millis"), Effect.map(approvals.list(), (page) => page.records))
        // The runner looks for idle entities every 5 s at most: past that, the session is still the same one.
        assert.isTrue(Option.isNone(yield* Queue.take(told).pipe(Effect.timeoutOption("6 seconds"))))
        const answered = yield* approvals.approve(open[0]!.id, { by: "ops" })
        assert.deepStrictEqual([answered.callId, answered.outcome, answered.by], ["c1", "approved", "ops"])
        assert.strictEqual((yield* Fiber.join(run)).text, "done")
      }).pipe(Effect.provide(cluster))
    }))
})

describe("SessionEntity with an id the one rule refuses", () => {
  it.live("its client used directly, not through ClusterSessions: Start, Run, History and Stop fail InvalidSessionId and write no row", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const entities = SessionEntity.layer({ agents: { echo: Agent.make({ name: "echo", model: "test:echo", sandbox: Sandbox.layerNoop() }) } }).pipe(
        Layer.provideMerge(TestRunner.layer),
        Layer.provideMerge(Layer.mergeAll(SqliteClient.layer({ file: path.join(dir, "cluster.db") }), Layer.succeed(Model.Model, echoModel)))
      )
      yield* Effect.gen(function*() {
        const id = "invoice\u202Efdp.exe"
        const client = (yield* SessionEntity.SessionEntity.client)(id)
        const reasons = yield* Effect.forEach(
          [client.Start({ startId: "s1", agent: "echo" }), client.Run({ runId: "r1", prompt: "hi" }), client.History(), client.Stop()],
          (call) => Effect.map(Effect.flip(call), (error) => (error instanceof Sessions.SessionsError ? error.message : error._tag))
        )
        const refusal = `Sessions: session "invoice\\u202efdp.exe": ${SessionId.check(id)!.message}`
        assert.deepStrictEqual(reasons, [refusal, refusal, refusal, refusal])
        const sql = yield* SqlClient.SqlClient
        assert.deepStrictEqual(yield* sql`SELECT id FROM condukt_cluster_sessions`, [])
      }).pipe(Effect.provide(entities))
    }))
})

/** Its tools log their runs: `note` is not `retrySafe`, `rm` waits for approval. */
const worker = (ran: Array<string>) =>
  Agent.make({
    name: "worker",
    model: "test:x",
    sandbox: Sandbox.layerNoop(),
    tools: [LoggedTools.note(ran), LoggedTools.rm(ran)]
  })

/**
 * What a runner that died in the middle of run `r1` of session `w` left in the cluster's database:
 * the session's row, where `r1` began (after two messages), and the snapshot its session saved,
 * the run's model turn with calls `c1` (started, cut off) and `c2` (not started) committed.
 */
const deadRunnerLeft = (reply = twoCalls, batch: Snapshot.Batch = { waiting: [], results: [], started: ["c1"] }) => Effect.gen(function*() {
  const rows = yield* SessionRows.make(yield* SqlClient.SqlClient)
  // The run's row is written with its first save, in one transaction.
  const store = yield* SqlSessionStore.make({ alongside: (snapshot) => SessionRows.runBegun(snapshot.id, "r1", 2) })
  yield* rows.mark("w", "worker", true)
  yield* store.save(Snapshot.make({
    id: "w",
    agent: "worker",
    model: "test:x",
    messages: [...before, Message.user("work"), reply],
    assigns: {},
    createdAt: 1,
    updatedAt: 1,
    batch
  }))
})

const twoCalls = Message.assistant([
  Message.toolCallPart({ id: "c1", name: "note", input: { n: 1 } }),
  Message.toolCallPart({ id: "c2", name: "note", input: { n: 2 } })
])
const continued = [
  twoCalls,
  Message.toolResult({ callId: "c1", name: "note", content: Session.INTERRUPTED_RESULT, isError: true }),
  Message.toolResult({ callId: "c2", name: "note", content: "noted 2", isError: false }),
  Message.assistant([Message.textPart("done")])
]

/** One in-memory runner on a new SQLite file, its sessions' model scripted with `done`. */
const runnerOf = (ran: Array<string>, replies = [TestModel.text("done")]) =>
  Layer.unwrap(Effect.map(tempDir, (dir) =>
    ClusterSessions.layer.pipe(
      Layer.provideMerge(SessionEntity.layer({ agents: { worker: worker(ran) } })),
      Layer.provideMerge(TestRunner.layer),
      Layer.provideMerge(Layer.mergeAll(SqliteClient.layer({ file: path.join(dir, "cluster.db") }), TestModel.layer(replies)))
    )))

describe("SessionEntity: a run delivered again after part of it was saved", () => {
  it.live("answers the reply of the session's own continuation; the history holds each turn once, the cut-off call not run again", () => {
    const ran: Array<string> = []
    return Effect.gen(function*() {
      yield* deadRunnerLeft()
      const reply = yield* (yield* SessionEntity.SessionEntity.client)("w").Run({ runId: "r1", prompt: "work" })
      assert.deepStrictEqual(reply, { text: "done", turns: 2, messages: continued })
      assert.deepStrictEqual(yield* (yield* Sessions.ById).history("w"), [...before, Message.user("work"), ...continued])
      assert.deepStrictEqual(ran, ["c2"])
    }).pipe(Effect.provide(runnerOf(ran)))
  })

  it.live("a new run that arrives while the session goes on with the saved one begins after it: its row records the history's length once the continuation ended", () => {
    const ran: Array<string> = []
    return Effect.gen(function*() {
      yield* deadRunnerLeft()
      const reply = yield* (yield* SessionEntity.SessionEntity.client)("w").Run({ runId: "r2", prompt: "next" })
      assert.deepStrictEqual(reply, { text: "again", turns: 1, messages: [Message.assistant([Message.textPart("again")])] })
      const history = [...before, Message.user("work"), ...continued]
      assert.deepStrictEqual(yield* (yield* Sessions.ById).history("w"), [...history, Message.user("next"), Message.assistant([Message.textPart("again")])])
      // Delivered again, the run would read its own reply from where its row says it began.
      const began = yield* (yield* SessionRows.make(yield* SqlClient.SqlClient)).begun("w")
      assert.strictEqual(began.get("r2"), history.length)
    }).pipe(Effect.provide(runnerOf(ran, [TestModel.text("done"), TestModel.text("again")])))
  })

  it.live("a stream delivered again cannot replay the saved events: it fails Interrupted once the continuation completed, which the history holds", () => {
    const ran: Array<string> = []
    return Effect.gen(function*() {
      yield* deadRunnerLeft()
      const error = yield* Effect.flip(Stream.runDrain((yield* SessionEntity.SessionEntity.client)("w").Stream({ runId: "r1", prompt: "work" })))
      assert.strictEqual(
        error.message,
        "Sessions: session w: the run was interrupted: its runner stopped before its events were all sent; the run completed, and the session's history holds its reply"
      )
      assert.deepStrictEqual(yield* (yield* Sessions.ById).history("w"), [...before, Message.user("work"), ...continued])
    }).pipe(Effect.provide(runnerOf(ran)))
  })

  it.live("a run that waited for approval when its runner died: its call is listed and approved by id on the runner that took it over, and the run answers the reply", () => {
    const ran: Array<string> = []
    const rm = Message.toolCallPart({ id: "c_rm", name: "rm", input: { path: "/tmp/x" } })
    return Effect.gen(function*() {
      yield* deadRunnerLeft(Message.assistant([rm]), { waiting: [{ callId: "c_rm", tool: "rm", input: { path: "/tmp/x" } }], results: [], started: [] })
      const sessions = yield* Sessions.ById
      assert.deepStrictEqual(yield* sessions.pending("w"), [{ callId: "c_rm", tool: "rm", input: { path: "/tmp/x" } }])
      const run = yield* Effect.forkChild((yield* SessionEntity.SessionEntity.client)("w").Run({ runId: "r1", prompt: "work" }))
      yield* sessions.approve("w", "c_rm")
      const messages = [
        Message.assistant([rm]),
        Message.toolResult({ callId: "c_rm", name: "rm", content: "removed /tmp/x", isError: false }),
        Message.assistant([Message.textPart("done")])
      ]
      assert.deepStrictEqual(yield* Fiber.join(run), { text: "done", turns: 2, messages })
      assert.deepStrictEqual(yield* sessions.history("w"), [...before, Message.user("work"), ...messages])
      assert.deepStrictEqual(ran, ["c_rm"])
    }).pipe(Effect.provide(runnerOf(ran)))
  })

  it.live("a run that waited for approval when its runner died, aborted by id instead: it fails Interrupted, the session holding what was saved", () => {
    const ran: Array<string> = []
    const rm = Message.toolCallPart({ id: "c_rm", name: "rm", input: { path: "/tmp/x" } })
    return Effect.gen(function*() {
      yield* deadRunnerLeft(Message.assistant([rm]), { waiting: [{ callId: "c_rm", tool: "rm", input: { path: "/tmp/x" } }], results: [], started: [] })
      const sessions = yield* Sessions.ById
      assert.strictEqual((yield* sessions.pending("w")).length, 1)
      const run = yield* Effect.forkChild(Effect.flip((yield* SessionEntity.SessionEntity.client)("w").Run({ runId: "r1", prompt: "work" })))
      yield* sessions.abort("w")
      assert.strictEqual(
        (yield* Fiber.join(run)).message,
        "Sessions: session w: the run was interrupted: its runner stopped after part of it was saved, and the session could not complete it; the session holds what was saved"
      )
      const aborted = Message.toolResult({ callId: "c_rm", name: "rm", content: Session.ABORTED_RESULT, isError: true })
      assert.deepStrictEqual(yield* sessions.history("w"), [...before, Message.user("work"), Message.assistant([rm]), aborted])
      assert.deepStrictEqual(ran, [])
    }).pipe(Effect.provide(runnerOf(ran)))
  })
})

describe("SessionEntity: what a run asks of the database", () => {
  it.live("the rows of where runs began are read once per activation, not by each run: five runs, one read, five records", () =>
    Effect.gen(function*() {
      const recorder = yield* Spans.make
      const statements = (pattern: RegExp) =>
        recorder.spans.filter((span) => pattern.test(String(span.attributes.get("db.query.text") ?? ""))).length
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        yield* sessions.start("worker", { id: "five" })
        for (let i = 0; i < 5; i++) yield* sessions.run("five", `run ${i}`)
      }).pipe(Effect.provide(runnerOf([], Array.from({ length: 5 }, () => TestModel.text("noted"))).pipe(
        Layer.provide(Layer.succeed(Tracer.Tracer, recorder.tracer))
      )))
      assert.deepStrictEqual(
        { read: statements(/^SELECT .* FROM condukt_cluster_runs/), recorded: statements(/^INSERT INTO condukt_cluster_runs/) },
        { read: 1, recorded: 5 }
      )
    }))
})

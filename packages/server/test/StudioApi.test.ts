/**
 * The API the Studio reads, over real HTTP on loopback: who is asking (`GET /me`), the sessions as
 * rows (filtered by agent and by a part of the id, paged with `before`, each running or not and
 * priced), every SSE frame's `at`, the principal's tokens by agent, day and session (`GET /usage`),
 * a workflow's runs (`GET /workflows/{name}/runs`), and the page itself at `/studio` when it is on.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as Sandbox from "@condukt/core/Sandbox"
import * as SessionStore from "@condukt/core/SessionStore"
import * as Usage from "@condukt/core/Usage"
import { Auth, Server, ServerStore, Studio, WorkflowRuns } from "../src/index.ts"
import { agent as ops } from "./fixtures/ops.ts"
import { type Frame, open, request } from "./fixtures/sseClient.ts"

const tokens = { "tok-alice": "alice", "tok-bob": "bob" }
const dev = Agent.make({ name: "dev", model: "test:x" })
const price: Usage.Price = { inputPerMillion: 3, outputPerMillion: 15 }

const options = { agents: { ops, dev }, auth: Auth.bearer(tokens), defaultAgent: "ops", prices: { ops: price } }

/** Workflow runs kept in memory: one workflow, `deploy`, whose runs stay running. */
const workflowRuns = Layer.sync(WorkflowRuns.WorkflowRuns, () => {
  const runs: Array<WorkflowRuns.Owned> = []
  return WorkflowRuns.WorkflowRuns.of({
    list: Effect.succeed([{ name: "deploy", inputs: {}, steps: ["ship"] }]),
    start: (workflow, inputs, principal) =>
      Effect.sync(() => {
        const runId = `run-${runs.length}`
        runs.push({ principal, run: { runId, workflow, inputs, outcome: "running", steps: { ship: { state: "running" } }, durable: false } })
        return runId
      }),
    get: (runId) => {
      const owned = runs.find((owned) => owned.run.runId === runId)
      return owned === undefined ? Effect.fail(new WorkflowRuns.WorkflowRunsError({ reason: "UnknownRun", message: `no run ${runId}` })) : Effect.succeed(owned)
    },
    runs: (name, principal, limit) =>
      name !== "deploy"
        ? Effect.fail(new WorkflowRuns.WorkflowRunsError({ reason: "UnknownWorkflow", message: `no workflow ${name} is served here` }))
        : Effect.sync(() => runs.filter((owned) => owned.principal === principal).map((owned) => owned.run).reverse().slice(0, limit))
  })
})

const serve = (replies: ReadonlyArray<TestModel.Reply>, extra: Partial<Server.Options> = {}) =>
  Server.listen(Server.layer({ ...options, ...extra })).pipe(
    Effect.provide(Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop(), SessionStore.layerMemory))
  )

/** The frames of `path` until one with tag `last` (the connection then dropped). */
const framesUntil = (url: string, path: string, last: string, init: { token: string; body?: unknown }) =>
  Effect.scoped(Effect.gen(function*() {
    const stream = yield* open(url, path, init)
    const frames: Array<Frame> = []
    while (frames.at(-1)?.event !== last) frames.push(yield* stream.next)
    return frames
  }))

const today = () => new Date().toISOString().slice(0, 10)

describe("the Studio's API", () => {
  it.live("GET /me names the principal, the agents a start may name and whether workflows are served; without credentials it is a 401", () =>
    Effect.gen(function*() {
      const { url } = yield* serve([])
      assert.deepStrictEqual(yield* request(url, "/me", { token: "tok-alice" }), { status: 200, body: { principal: "alice", agents: ["ops", "dev"], workflows: false } })
      assert.deepStrictEqual((yield* request(url, "/me")).status, 401)
      const withWorkflows = yield* serve([]).pipe(Effect.provide(workflowRuns))
      assert.deepStrictEqual(yield* request(withWorkflows.url, "/me", { token: "tok-bob" }), { status: 200, body: { principal: "bob", agents: ["ops", "dev"], workflows: true } })
    }))

  it.live("GET /sessions filters by agent and by a part of the id, pages with before across the filters, and each row says whether it runs and what it cost", () =>
    Effect.gen(function*() {
      const { url } = yield* serve([TestModel.text("one"), TestModel.text("two"), TestModel.toolCall("deploy", { target: "prod" }, "c1")])
      for (const [id, agent] of [["s1", "ops"], ["s2", "dev"], ["s3", "ops"], ["t4", "ops"]] as const) {
        assert.strictEqual((yield* request(url, "/sessions", { token: "tok-alice", body: { id, agent } })).status, 201)
      }
      yield* request(url, "/sessions", { token: "tok-bob", body: { id: "b1" } })
      assert.strictEqual((yield* request(url, "/sessions/s1/runs", { token: "tok-alice", body: { prompt: "hi" } })).status, 200)
      assert.strictEqual((yield* request(url, "/sessions/s2/runs", { token: "tok-alice", body: { prompt: "hi" } })).status, 200)
      // s3's run waits for its call's approval: it runs.
      yield* framesUntil(url, "/sessions/s3/runs/stream", "ApprovalRequested", { token: "tok-alice", body: { prompt: "deploy" } })

      const rows = (query: string) => Effect.map(request(url, `/sessions${query}`, { token: "tok-alice" }), (answer) => answer.body.sessions)
      const all = yield* rows("")
      assert.deepStrictEqual(all.map((row: any) => [row.id, row.agent, row.running, row.usage, row.cost]), [
        ["t4", "ops", false, { inputTokens: 0, outputTokens: 0 }, 0],
        ["s3", "ops", true, { inputTokens: 10, outputTokens: 5 }, Usage.cost({ inputTokens: 10, outputTokens: 5 }, price)],
        ["s2", "dev", false, { inputTokens: 10, outputTokens: 5 }, undefined],
        ["s1", "ops", false, { inputTokens: 10, outputTokens: 5 }, Usage.cost({ inputTokens: 10, outputTokens: 5 }, price)]
      ])
      // A row is the session as GET /sessions/{id} shows it; an agent without a price has no cost at all.
      for (const row of all) assert.deepStrictEqual((yield* request(url, `/sessions/${row.id}`, { token: "tok-alice" })).body, row)
      assert.isFalse("cost" in all[2])
      const ids = (query: string) => Effect.map(rows(query), (sessions) => sessions.map((row: any) => row.id))
      assert.deepStrictEqual(yield* ids("?agent=ops"), ["t4", "s3", "s1"])
      assert.deepStrictEqual(yield* ids("?agent=ops&limit=1"), ["t4"])
      assert.deepStrictEqual(yield* ids("?agent=ops&limit=1&before=t4"), ["s3"])
      assert.deepStrictEqual(yield* ids("?agent=ops&limit=1&before=s3"), ["s1"])
      assert.deepStrictEqual(yield* ids("?agent=ops&limit=1&before=s1"), [])
      assert.deepStrictEqual(yield* ids("?q=s"), ["s3", "s2", "s1"])
      assert.deepStrictEqual(yield* ids("?q=S"), [])
      assert.deepStrictEqual(yield* ids("?q=%25"), [])
      assert.deepStrictEqual(yield* ids("?q=s&agent=dev"), ["s2"])
      assert.deepStrictEqual(yield* ids("?agent=nobody"), [])
      const long = yield* request(url, `/sessions?q=${"x".repeat(257)}`, { token: "tok-alice" })
      assert.deepStrictEqual([long.status, long.body._tag], [400, "BadRequest"])
      assert.deepStrictEqual(yield* Effect.map(request(url, "/sessions?q=s", { token: "tok-bob" }), (answer) => answer.body), { sessions: [] })
    }))

  it.live("10,000 sessions in the memory store list in pages of 1,000 with before, newest first, each once; filtered by agent, half of them", () =>
    Effect.gen(function*() {
      const store = ServerStore.makeMemory()
      const COUNT = 10_000
      for (let i = 0; i < COUNT; i++) yield* store.claim({ id: `s${i}`, principal: "alice", agent: i % 2 === 0 ? "ops" : "dev", now: i })
      const { url } = yield* serve([]).pipe(Effect.provideService(ServerStore.ServerStore, store))
      const pages = (query: string) =>
        Effect.gen(function*() {
          const seen: Array<string> = []
          let before = ""
          while (true) {
            const answer = yield* request(url, `/sessions?limit=1000${query}${before}`, { token: "tok-alice" })
            const ids = answer.body.sessions.map((row: { id: string }) => row.id)
            if (ids.length === 0) return seen
            seen.push(...ids)
            before = `&before=${ids.at(-1)}`
          }
        })
      assert.deepStrictEqual(yield* pages(""), Array.from({ length: COUNT }, (_, i) => `s${COUNT - 1 - i}`))
      assert.deepStrictEqual(yield* pages("&agent=dev"), Array.from({ length: COUNT / 2 }, (_, i) => `s${COUNT - 1 - 2 * i}`))
    }), { timeout: 60_000 })

  it.live("every SSE frame's data is the event's JSON with at, when the server wrote it: the run's stream and the session's events alike", () =>
    Effect.gen(function*() {
      const { url } = yield* serve([TestModel.text("Hello.")])
      yield* request(url, "/sessions", { token: "tok-alice", body: { id: "s1" } })
      const before = Date.now()
      const streamed = yield* framesUntil(url, "/sessions/s1/runs/stream", "AgentEnd", { token: "tok-alice", body: { prompt: "hi" } })
      const after = Date.now()
      const followed = yield* framesUntil(url, "/sessions/s1/events", "AgentEnd", { token: "tok-alice" })
      assert.deepStrictEqual(followed, streamed)
      assert.deepStrictEqual(streamed.map((frame) => frame.event), ["AgentStart", "TurnStart", "TextDelta", "TurnEnd", "AgentEnd"])
      for (const frame of streamed) {
        assert.deepStrictEqual([frame.data._tag, frame.data.sessionId, typeof frame.data.at, frame.data.at >= before && frame.data.at <= after], [frame.event, "s1", "number", true])
      }
      assert.deepStrictEqual({ ...streamed[2]!.data, at: 0, runId: "" }, { _tag: "TextDelta", sessionId: "s1", runId: "", seq: streamed[2]!.data.seq, text: "Hello.", at: 0 })
    }))

  it.live("GET /usage adds up the principal's tokens by agent, by day and by session, priced where every part has a price", () =>
    Effect.gen(function*() {
      const { url } = yield* serve(["a", "b", "c", "d", "e"].map((text) => TestModel.text(text)))
      const day = today()
      for (const [id, agent, token] of [["s1", "ops", "tok-alice"], ["s2", "ops", "tok-alice"], ["s3", "dev", "tok-alice"], ["b1", "ops", "tok-bob"]] as const) {
        yield* request(url, "/sessions", { token, body: { id, agent } })
      }
      for (const [id, token] of [["s1", "tok-alice"], ["s2", "tok-alice"], ["s2", "tok-alice"], ["s3", "tok-alice"], ["b1", "tok-bob"]] as const) {
        assert.strictEqual((yield* request(url, `/sessions/${id}/runs`, { token, body: { prompt: "go" } })).status, 200)
      }
      const turns = (n: number) => ({ inputTokens: 10 * n, outputTokens: 5 * n })
      const cost = (n: number) => Usage.cost(turns(n), price)
      const usage = (query: string, token = "tok-alice") => Effect.map(request(url, `/usage${query}`, { token }), (answer) => answer.body)
      assert.deepStrictEqual(yield* usage("?by=agent"), { by: "agent", rows: [{ key: "ops", usage: turns(3), cost: cost(3) }, { key: "dev", usage: turns(1) }] })
      assert.deepStrictEqual(yield* usage("?by=session"), {
        by: "session",
        rows: [{ key: "s2", usage: turns(2), cost: cost(2) }, { key: "s1", usage: turns(1), cost: cost(1) }, { key: "s3", usage: turns(1) }]
      })
      assert.deepStrictEqual(yield* usage("?by=session&limit=1"), { by: "session", rows: [{ key: "s2", usage: turns(2), cost: cost(2) }] })
      // A day that holds an agent with no price has no cost; bob's day, all of it priced, has one.
      assert.deepStrictEqual(yield* usage("?by=day"), { by: "day", rows: [{ key: day, usage: turns(4) }] })
      assert.deepStrictEqual(yield* usage("?by=day", "tok-bob"), { by: "day", rows: [{ key: day, usage: turns(1), cost: cost(1) }] })
      for (const query of ["", "?by=month", "?by=agent&limit=0", "?by=agent&limit=1001"]) {
        const refused = yield* request(url, `/usage${query}`, { token: "tok-alice" })
        assert.deepStrictEqual([query, refused.status, refused.body._tag], [query, 400, "BadRequest"])
      }
      assert.strictEqual((yield* request(url, "/usage?by=agent")).status, 401)
    }))

  it.live("GET /workflows/{name}/runs lists the principal's runs of it newest first, at most limit; another workflow, or a server without workflows, is a 404", () =>
    Effect.gen(function*() {
      const { url } = yield* serve([]).pipe(Effect.provide(workflowRuns))
      for (const token of ["tok-alice", "tok-bob", "tok-alice", "tok-alice"]) {
        assert.strictEqual((yield* request(url, "/workflows/deploy/runs", { token, body: { inputs: {} } })).status, 201)
      }
      const runIds = (query: string, token = "tok-alice") => Effect.map(request(url, `/workflows/deploy/runs${query}`, { token }), (answer) => answer.body.runs.map((run: { runId: string }) => run.runId))
      assert.deepStrictEqual(yield* runIds(""), ["run-3", "run-2", "run-0"])
      assert.deepStrictEqual(yield* runIds("?limit=2"), ["run-3", "run-2"])
      assert.deepStrictEqual(yield* runIds("", "tok-bob"), ["run-1"])
      const listed = yield* request(url, "/workflows/deploy/runs?limit=1", { token: "tok-bob" })
      assert.deepStrictEqual(listed, {
        status: 200,
        body: { runs: [{ runId: "run-1", workflow: "deploy", inputs: {}, outcome: "running", steps: { ship: { state: "running" } }, durable: false }] }
      })
      assert.deepStrictEqual(yield* request(url, "/workflows/other/runs", { token: "tok-alice" }), { status: 404, body: { _tag: "NotFound", message: "no workflow other is served here" } })
      const none = yield* serve([])
      assert.deepStrictEqual((yield* request(none.url, "/workflows/deploy/runs", { token: "tok-alice" })).status, 404)
      assert.strictEqual((yield* request(url, "/workflows/deploy/runs")).status, 401)
    }))

  it.live("the Studio is served at /studio without credentials when it is on, and is a 404 when it is off", () =>
    Effect.gen(function*() {
      const on = yield* serve([], { studio: true })
      const off = yield* serve([])
      const get = (url: string, path: string) =>
        Effect.promise(async () => {
          const response = await fetch(url + path)
          return { status: response.status, type: response.headers.get("content-type") }
        })
      assert.deepStrictEqual(yield* get(on.url, Studio.PATH), { status: 200, type: "text/html; charset=utf-8" })
      assert.deepStrictEqual(yield* get(on.url, `${Studio.PATH}/studio.js`), { status: 200, type: "text/javascript; charset=utf-8" })
      assert.deepStrictEqual(yield* get(on.url, `${Studio.PATH}/studio.css`), { status: 200, type: "text/css; charset=utf-8" })
      assert.deepStrictEqual((yield* get(off.url, Studio.PATH)).status, 404)
      // The API beside it still asks for credentials.
      assert.deepStrictEqual((yield* get(on.url, "/me")).status, 401)
    }))
})

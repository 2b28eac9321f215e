/**
 * Principal isolation at scale: 50 principals with 20 sessions each on one server. For every route
 * that names a session (and the approvals by id, the chat routes, the workflow runs by id), every
 * other principal's request answers 404 with the very body a missing session (approval, run) gets, and
 * changes nothing: the owners' sessions read the same afterwards — every session's record, and for
 * a sample waiting on an approval their history, events, waiting calls and approval records. Without
 * credentials every route but `/health` and `/openapi.json` is a 401 (the document is public: it
 * describes the API, not anyone's sessions).
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpApi } from "effect/http-api"
import * as Sandbox from "@condukt/core/Sandbox"
import * as SessionStore from "@condukt/core/SessionStore"
import { Api, Auth, Server, WorkflowRuns } from "../src/index.ts"
import { agent } from "./fixtures/ops.ts"

const PRINCIPALS = 50
const SESSIONS = 20
/** Sessions with a run waiting on an approval, read whole before and after: the first of every fifth principal. */
const SAMPLED = Array.from({ length: PRINCIPALS / 5 }, (_, i) => `p${i * 5}-s0`)
/** Requests in flight at once. */
const CONCURRENCY = 64

const tokens = Object.fromEntries(Array.from({ length: PRINCIPALS }, (_, i) => [`tok-${i}`, `p${i}`]))
const tokenOf = (principal: string) => `tok-${principal.slice(1)}`
const ownerOf = (session: string) => session.slice(0, session.indexOf("-"))

/** Workflow runs kept in memory: one workflow, `deploy`, whose runs stay running. */
const workflowRuns = Layer.sync(WorkflowRuns.WorkflowRuns, () => {
  const runs = new Map<string, WorkflowRuns.Owned>()
  return WorkflowRuns.WorkflowRuns.of({
    list: Effect.succeed([{ name: "deploy", inputs: {}, steps: ["ship"] }]),
    start: (workflow, inputs, principal) =>
      Effect.sync(() => {
        const runId = `run-${runs.size}`
        runs.set(runId, { principal, run: { runId, workflow, inputs, outcome: "running", steps: { ship: { state: "running" } }, durable: false } })
        return runId
      }),
    get: (runId) => {
      const owned = runs.get(runId)
      return owned === undefined ? Effect.fail(new WorkflowRuns.WorkflowRunsError({ reason: "UnknownRun", message: `no run ${runId}` })) : Effect.succeed(owned)
    },
    runs: (workflow, principal, limit) =>
      Effect.sync(() => Array.from(runs.values()).filter((owned) => owned.principal === principal && owned.run.workflow === workflow).map((owned) => owned.run).reverse().slice(0, limit))
  })
})

const serve = Server.listen(Server.layer({
  agents: { ops: agent },
  auth: Auth.bearer(tokens),
  defaultAgent: "ops",
  // The rate limit is Hostile.test.ts's; here each principal sends hundreds of requests at once.
  limits: { requestsPerSecond: 1_000_000, burst: 1_000_000 }
})).pipe(
  Effect.provide(Layer.mergeAll(
    TestModel.layer(SAMPLED.map(() => TestModel.toolCall("deploy", { target: "prod" }))),
    Sandbox.layerNoop(),
    SessionStore.layerMemory,
    workflowRuns
  ))
)

type Answer = { readonly status: number; readonly type: string | null; readonly text: string }

/** One request; an event stream's body is dropped unread (only its status and headers count). */
const send = (url: string, method: string, path: string, options: { token?: string | undefined; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> =>
  (async () => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    if (options.body !== undefined) headers["content-type"] = "application/json"
    const response = await fetch(url + path, { method, headers, ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }) })
    const type = response.headers.get("content-type")
    if (type?.startsWith("text/event-stream") === true) {
      await response.body?.cancel()
      return { status: response.status, type, text: "<stream>" }
    }
    return { status: response.status, type, text: await response.text() }
  })()

const json = (answer: Answer) => JSON.parse(answer.text)

/** The first `count` events of `path`'s SSE stream, as `id event data` lines. */
const eventsOf = (url: string, path: string, token: string, count: number) =>
  (async () => {
    const controller = new AbortController()
    const response = await fetch(url + path, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal })
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    const got: Array<string> = []
    let buffer = ""
    while (got.length < count) {
      const { done, value } = await reader.read()
      if (done) break
      buffer += value
      let end: number
      while ((end = buffer.indexOf("\n\n")) >= 0 && got.length < count) {
        const frame = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        if (frame.startsWith("id: ")) got.push(frame.replaceAll("\n", " "))
      }
    }
    controller.abort()
    return got
  })()

/** A session's view without what a wait's notice moves (its last event and activity). */
const unnoticed = (view: Record<string, unknown>) => ({ ...view, lastEventId: undefined, lastActivity: undefined })

/**
 * A snapshot as time alone leaves it: the `StillWaiting` notices a waiting run's caller publishes
 * after `waitNotice` (a slow machine passes 30 s within the test) dropped, with what they move.
 */
const untimed = <S extends { readonly records: ReadonlyArray<Answer>; readonly whole: ReadonlyArray<{ readonly view: Record<string, unknown>; readonly events: ReadonlyArray<string> }> }>(snapshot: S) => ({
  ...snapshot,
  records: snapshot.records.map((answer) => answer.status === 200 ? { ...answer, text: JSON.stringify(unnoticed(json(answer))) } : answer),
  whole: snapshot.whole.map((sampled) => ({ ...sampled, view: unnoticed(sampled.view), events: sampled.events.filter((frame) => !frame.includes('"_tag":"StillWaiting"')) }))
})

/** A route naming a session (or an approval), and the body it sends. */
type Route = { readonly method: string; readonly path: string; readonly body?: (id: string) => unknown }

const chatBody = (id: string) => ({ id, messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }], trigger: "submit-message" })

/** Every route with `{id}` (the session's), and the chat's POST, which names its session in the body. */
const sessionRoutes: ReadonlyArray<Route> = [
  { method: "GET", path: "/sessions/{id}" },
  { method: "DELETE", path: "/sessions/{id}" },
  { method: "POST", path: "/sessions/{id}/runs", body: () => ({ prompt: "x" }) },
  { method: "POST", path: "/sessions/{id}/runs/stream", body: () => ({ prompt: "x" }) },
  { method: "POST", path: "/sessions/{id}/abort" },
  { method: "GET", path: "/sessions/{id}/events" },
  { method: "GET", path: "/sessions/{id}/history" },
  { method: "GET", path: "/sessions/{id}/approvals" },
  { method: "POST", path: "/sessions/{id}/approvals/{callId}", body: () => ({ approved: true }) },
  { method: "POST", path: "/sessions/{id}/elicitations/{requestId}", body: () => ({ action: "decline" }) },
  { method: "GET", path: "/sessions/{id}/usage" },
  { method: "GET", path: "/chat/{id}/stream" },
  { method: "POST", path: "/chat", body: chatBody }
]
const approvalRoute: Route = { method: "POST", path: "/approvals/{approvalId}", body: () => ({ approved: true }) }
const workflowRunRoute: Route = { method: "GET", path: "/workflows/{name}/runs/{runId}" }

/** The Api's routes, as `METHOD /path/{param}`. */
const apiRoutes = () => {
  const routes: Array<{ method: string; path: string }> = []
  HttpApi.reflect(Api.Api, { onGroup: () => {}, onEndpoint: ({ endpoint }) => void routes.push({ method: endpoint.method, path: endpoint.path.replace(/:(\w+)/g, "{$1}") }) })
  return routes
}

const fill = (path: string, ids: { id: string; callId?: string | undefined; approvalId?: string | undefined; runId?: string | undefined }) =>
  path.replace("{id}", encodeURIComponent(ids.id)).replace("{callId}", ids.callId ?? "c1").replace("{requestId}", "r1").replace("{approvalId}", ids.approvalId ?? "a1")
    .replace("{name}", "deploy").replace("{runId}", ids.runId ?? "run-0")

describe("Isolation", () => {
  it.live("another principal's session answers every route as a missing one and is left unchanged; no credentials is a 401 everywhere but health and the document", () =>
    Effect.gen(function*() {
      const { url } = yield* serve
      const all = <A>(tasks: ReadonlyArray<() => Promise<A>>) => Effect.forEach(tasks, (task) => Effect.promise(task), { concurrency: CONCURRENCY })
      const sessions = Array.from({ length: PRINCIPALS * SESSIONS }, (_, i) => `p${Math.floor(i / SESSIONS)}-s${i % SESSIONS}`)

      const started = yield* all(sessions.map((id) => () => send(url, "POST", "/sessions", { token: tokenOf(ownerOf(id)), body: { id } })))
      assert.deepStrictEqual(started.map((answer) => answer.status), sessions.map(() => 201))

      // The sampled sessions wait on an approval: a run streamed until it asks, then left waiting.
      const waiting = yield* all(SAMPLED.map((id) => async () => {
        const token = tokenOf(ownerOf(id))
        await send(url, "POST", `/sessions/${id}/runs/stream`, { token, body: { prompt: "deploy" } })
        let pending: Array<{ callId: string }> = []
        while (pending.length === 0) pending = json(await send(url, "GET", `/sessions/${id}/approvals`, { token }))
        const records = json(await send(url, "GET", "/approvals?status=all", { token })).records as Array<{ id: string; sessionId: string }>
        return { id, callId: pending[0]!.callId, approvalId: records.find((record) => record.sessionId === id)!.id } as const
      }))
      const waitingOf = new Map(waiting.map((entry) => [entry.id, entry]))

      // Each principal's workflow run.
      const principals = Array.from({ length: PRINCIPALS }, (_, i) => `p${i}`)
      const runIds = yield* all(principals.map((principal) => async () => json(await send(url, "POST", "/workflows/deploy/runs", { token: tokenOf(principal), body: {} })).runId as string))

      /** What the owners see: every session's record, and the sampled sessions whole. */
      const snapshot = Effect.gen(function*() {
        const records = yield* all(sessions.map((id) => () => send(url, "GET", `/sessions/${id}`, { token: tokenOf(ownerOf(id)) })))
        const whole = yield* all(SAMPLED.map((id) => async () => {
          const token = tokenOf(ownerOf(id))
          const view = json(await send(url, "GET", `/sessions/${id}`, { token }))
          return {
            view,
            history: await send(url, "GET", `/sessions/${id}/history`, { token }),
            pending: await send(url, "GET", `/sessions/${id}/approvals`, { token }),
            approvals: await send(url, "GET", "/approvals?status=all", { token }),
            events: await eventsOf(url, `/sessions/${id}/events`, token, view.lastEventId)
          }
        }))
        const runs = yield* all(principals.map((principal, i) => () => send(url, "GET", `/workflows/deploy/runs/${runIds[i]}`, { token: tokenOf(principal) })))
        return { records, whole, runs }
      })
      const before = yield* snapshot
      for (const sampled of before.whole) {
        assert.deepStrictEqual([sampled.view.running, json(sampled.pending).length, sampled.events.length > 0], [true, 1, true])
      }

      // The routes checked are every route of the Api naming a session or an approval.
      assert.deepStrictEqual(
        apiRoutes().filter((route) => /\{(id|approvalId|runId)\}/.test(route.path) || route.path === "/chat").map((route) => `${route.method} ${route.path}`).sort(),
        [...sessionRoutes, approvalRoute, workflowRunRoute].map((route) => `${route.method} ${route.path}`).sort()
      )
      assert.deepStrictEqual(before.runs.map((answer) => answer.status), principals.map(() => 200))

      // What a missing session (approval) gets, per route: the body, its id aside.
      const MISSING = "missing-0000"
      const missingBody = (route: Route) =>
        route.path === "/chat"
          ? send(url, "GET", `/sessions/${MISSING}`, { token: "tok-0" })
          : send(url, route.method, fill(route.path, { id: MISSING, approvalId: MISSING }), { token: "tok-0", body: route.body?.(MISSING) })
      const baselines = yield* all([...sessionRoutes, approvalRoute].map((route) => () => missingBody(route)))
      assert.deepStrictEqual(baselines.map((answer) => answer.status), [...sessionRoutes, approvalRoute].map(() => 404))

      // Every other principal, on every route, asks for the owner's sessions: each pair of
      // principals meets on every route, each session is asked on every route (by two or more), and
      // a session waiting on an approval is asked on every route by all 49 others.
      const attack = (other: string, id: string, route: Route) => {
        const known = waitingOf.get(id)
        const baseline = baselines[[...sessionRoutes, approvalRoute].indexOf(route)]!
        const target = route === approvalRoute ? known!.approvalId : id
        const expected = { status: 404, type: baseline.type, text: baseline.text.replaceAll(MISSING, target) }
        const path = fill(route.path, { id, callId: known?.callId, approvalId: known?.approvalId })
        return { what: `${other} ${route.method} ${path}`, covers: `${id} ${route.method} ${route.path}`, expected, run: () => send(url, route.method, path, { token: tokenOf(other), body: route.body?.(id) }) }
      }
      const attempts = principals.flatMap((owner) =>
        principals.filter((other) => other !== owner).flatMap((other, a) => [
          ...sessionRoutes.map((route, r) => attack(other, `${owner}-s${(a + r) % SESSIONS}`, route)),
          ...(waitingOf.has(`${owner}-s0`) ? [...sessionRoutes, approvalRoute].map((route) => attack(other, `${owner}-s0`, route)) : [])
        ])
      )
      const answers = yield* all(attempts.map((attempt) => attempt.run))
      const wrong = attempts.flatMap((attempt, i) => JSON.stringify(answers[i]) === JSON.stringify(attempt.expected) ? [] : [{ what: attempt.what, got: answers[i], expected: attempt.expected }])
      assert.deepStrictEqual(wrong.slice(0, 5), [])
      assert.deepStrictEqual(
        new Set(attempts.flatMap((attempt) => attempt.covers.includes("/approvals/{approvalId}") ? [] : [attempt.covers])),
        new Set(sessions.flatMap((id) => sessionRoutes.map((route) => `${id} ${route.method} ${route.path}`)))
      )
      assert.strictEqual(attempts.length, PRINCIPALS * (PRINCIPALS - 1) * sessionRoutes.length + SAMPLED.length * (PRINCIPALS - 1) * (sessionRoutes.length + 1))

      // Each workflow run, read by every other principal: what a missing run gets.
      const missingRun = yield* Effect.promise(() => send(url, "GET", `/workflows/deploy/runs/${MISSING}`, { token: "tok-0" }))
      assert.strictEqual(missingRun.status, 404)
      const reads = principals.flatMap((owner, i) => principals.filter((other) => other !== owner).map((other) => ({ other, runId: runIds[i]! })))
      const readAnswers = yield* all(reads.map(({ other, runId }) => () => send(url, "GET", `/workflows/deploy/runs/${runId}`, { token: tokenOf(other) })))
      const missingOf = (runId: string) => JSON.stringify({ ...missingRun, text: missingRun.text.replaceAll(MISSING, runId) })
      assert.deepStrictEqual(readAnswers.flatMap((answer, i) => JSON.stringify(answer) === missingOf(reads[i]!.runId) ? [] : [{ ...reads[i], answer }]).slice(0, 5), [])
      // A principal's runs of the workflow are its own only.
      const listedRuns = yield* all(principals.map((principal) => async () => json(await send(url, "GET", "/workflows/deploy/runs", { token: tokenOf(principal) })).runs.map((run: { runId: string }) => run.runId)))
      assert.deepStrictEqual(listedRuns, runIds.map((runId) => [runId]))

      // Starting a session under another's id is refused (ids are the server's), and changes nothing either.
      const taken = yield* Effect.promise(() => send(url, "POST", "/sessions", { token: "tok-1", body: { id: "p0-s3" } }))
      assert.deepStrictEqual([taken.status, json(taken)._tag], [409, "Conflict"])
      // Nor does another's list show them.
      const listed = yield* Effect.promise(() => send(url, "GET", "/sessions?limit=1000", { token: "tok-1" }))
      assert.deepStrictEqual(json(listed).sessions.map((owned: { id: string }) => owned.id).sort(), sessions.filter((id) => ownerOf(id) === "p1").sort())
      const approvalsOfOthers = yield* Effect.promise(() => send(url, "GET", "/approvals?status=all", { token: "tok-1" }))
      assert.deepStrictEqual(json(approvalsOfOthers), { records: [] })

      // Time alone may add one thing to a waiting session: its caller's StillWaiting notice, 30 s into
      // the wait (ADR 0092), with the view's last event and activity it moves. Anything else is a change.
      const after = yield* snapshot
      assert.deepStrictEqual(untimed(after), untimed(before))

      // No credentials, unknown ones, another scheme, a valid token without its scheme: 401 on every route but health and the document.
      const unauthorized = JSON.stringify({ _tag: "Unauthorized", message: "missing or unknown bearer token: send `Authorization: Bearer <token>`" })
      const credentials = [
        ...[{}, { authorization: "Bearer nobody" }, { authorization: "Bearer " }, { authorization: "Basic cDA6dG9rLTA=" }],
        ...[{ authorization: "tok-0" }, { authorization: "Bearer tok-0 tok-1" }]
      ]
      const anonymous = yield* all(apiRoutes().flatMap((route) =>
        credentials.map((headers) => async () => {
          const answer = await send(url, route.method, fill(route.path, { id: "p0-s1" }), { headers, body: route.method === "POST" ? {} : undefined })
          return `${route.method} ${route.path} ${answer.status} ${answer.status === 401 ? answer.text === unauthorized : answer.text}`
        })
      ))
      assert.deepStrictEqual(anonymous, apiRoutes().flatMap((route) =>
        credentials.map(() => `${route.method} ${route.path} ${route.path === "/health" ? `200 ${JSON.stringify({ status: "ok" })}` : "401 true"}`)
      ))
      const document = yield* Effect.promise(() => send(url, "GET", "/openapi.json"))
      assert.strictEqual(document.status, 200)
    }), { timeout: 120_000 })
})

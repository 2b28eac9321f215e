/**
 * The server over real HTTP on loopback: a principal starts a session of a scripted agent, runs a
 * prompt and waits, streams a run, follows the session's events and resumes them after
 * `Last-Event-ID`, answers a call waiting for approval, reads history and usage; another principal
 * sees none of it; no credentials is a 401 everywhere but health.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import * as Sandbox from "@condukt/core/Sandbox"
import { Auth, Server } from "../src/index.ts"
import { agent } from "./fixtures/ops.ts"

const tokens = { "tok-alice": "alice", "tok-bob": "bob" }

const serve = (replies: ReadonlyArray<TestModel.Reply>) =>
  Server.listen(Server.layer({ agents: { ops: agent }, auth: Auth.bearer(tokens), defaultAgent: "ops" })).pipe(
    Effect.provide(Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop()))
  )

const call = (url: string, path: string, init: { method?: string; token?: string | undefined; body?: unknown; headers?: Record<string, string> } = {}) =>
  Effect.promise(async () => {
    const headers: Record<string, string> = { ...init.headers }
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`
    if (init.body !== undefined) headers["content-type"] = "application/json"
    const response = await fetch(url + path, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers,
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) as any }
  })

/** The SSE frames of `path` until `count` events came (then the connection is dropped). */
const events = (url: string, path: string, token: string, count: number, lastEventId?: string) =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const response = await fetch(url + path, {
      headers: { authorization: `Bearer ${token}`, ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }) },
      signal: controller.signal
    })
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    const got: Array<{ id: number; event: string; data: any }> = []
    let buffer = ""
    while (got.length < count) {
      const { done, value } = await reader.read()
      if (done) break
      buffer += value
      let end: number
      while ((end = buffer.indexOf("\n\n")) >= 0 && got.length < count) {
        const frame = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const fields = Object.fromEntries(frame.split("\n").filter((line) => !line.startsWith(":")).map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]))
        if (fields.id !== undefined) got.push({ id: Number(fields.id), event: fields.event!, data: JSON.parse(fields.data!) })
      }
    }
    controller.abort()
    return { status: response.status, events: got }
  })

describe("Server", () => {
  it.live("runs a prompt over HTTP, streams its events, resumes after Last-Event-ID, and answers an approval", () =>
    Effect.gen(function*() {
      const { url } = yield* serve([
        TestModel.text("Hello there."),
        TestModel.toolCall("deploy", { target: "prod" }, "c1"),
        TestModel.text("Deployed.")
      ])
      const started = yield* call(url, "/sessions", { token: "tok-alice", body: { id: "s1" } })
      assert.strictEqual(started.status, 201)
      assert.deepStrictEqual([started.body.id, started.body.principal, started.body.agent], ["s1", "alice", "ops"])

      const ran = yield* call(url, "/sessions/s1/runs", { token: "tok-alice", body: { prompt: "hi" } })
      assert.strictEqual(ran.status, 200)
      assert.deepStrictEqual({ ...ran.body, runId: "" }, { runId: "", outcome: "completed", text: "Hello there.", turns: 1, lastEventId: ran.body.lastEventId })

      const all = yield* events(url, "/sessions/s1/events", "tok-alice", ran.body.lastEventId)
      assert.deepStrictEqual(all.events.map((e) => e.id), Array.from({ length: ran.body.lastEventId }, (_, i) => i + 1))
      assert.strictEqual(all.events[0]!.event, "AgentStart")
      assert.strictEqual(all.events.at(-1)!.event, "AgentEnd")
      const resumed = yield* events(url, "/sessions/s1/events", "tok-alice", 2, "2")
      assert.deepStrictEqual(resumed.events, all.events.slice(2, 4))

      // A run that waits for approval: the answer, as alice, lets it finish.
      const second = call(url, "/sessions/s1/runs", { token: "tok-alice", body: { prompt: "deploy" } })
      const waiting = yield* Effect.forkChild(second)
      let pending: any
      do pending = yield* call(url, "/sessions/s1/approvals", { token: "tok-alice" })
      while (pending.body.length === 0)
      assert.deepStrictEqual(pending.body, [{ callId: "c1", tool: "deploy", input: { target: "prod" } }])
      const busy = yield* call(url, "/sessions/s1/runs", { token: "tok-alice", body: { prompt: "again" } })
      assert.strictEqual(busy.status, 409)
      const answered = yield* call(url, "/sessions/s1/approvals/c1", { token: "tok-alice", body: { approved: true } })
      assert.strictEqual(answered.status, 204)
      const finished = yield* Fiber.join(waiting)
      assert.deepStrictEqual([finished.body.outcome, finished.body.text, finished.body.turns], ["completed", "Deployed.", 2])

      const history = yield* call(url, "/sessions/s1/history", { token: "tok-alice" })
      assert.deepStrictEqual(history.body.map((m: any) => m._tag), ["UserMessage", "AssistantMessage", "UserMessage", "AssistantMessage", "ToolResultMessage", "AssistantMessage"])
      const usage = yield* call(url, "/sessions/s1/usage", { token: "tok-alice" })
      assert.strictEqual(usage.status, 200)
      assert.deepStrictEqual(Object.keys(usage.body), ["usage"])
    }))

  it.live("answers another principal's session as one that does not exist, and no credentials with 401", () =>
    Effect.gen(function*() {
      const { url } = yield* serve([TestModel.text("Hi.")])
      yield* call(url, "/sessions", { token: "tok-alice", body: { id: "mine" } })
      for (const [method, path, body] of [
        ["GET", "/sessions/mine", undefined],
        ["GET", "/sessions/mine/history", undefined],
        ["GET", "/sessions/mine/events", undefined],
        ["POST", "/sessions/mine/runs", { prompt: "x" }],
        ["POST", "/sessions/mine/abort", undefined],
        ["DELETE", "/sessions/mine", undefined],
        ["POST", "/sessions/mine/approvals/c1", { approved: true }]
      ] as const) {
        const theirs = yield* call(url, path, { method, token: "tok-bob", body })
        const nobody = yield* call(url, path.replace("mine", "nothing"), { method, token: "tok-bob", body })
        assert.deepStrictEqual([theirs.status, theirs.body], [nobody.status, { ...nobody.body, message: nobody.body.message.replace("nothing", "mine") }], `${method} ${path}`)
        assert.strictEqual(theirs.status, 404, `${method} ${path}`)
        const anonymous = yield* call(url, path, { method, body })
        assert.strictEqual(anonymous.status, 401, `${method} ${path}`)
      }
      const listed = yield* call(url, "/sessions", { token: "tok-bob" })
      assert.deepStrictEqual(listed.body, { sessions: [] })
      const health = yield* call(url, "/health")
      assert.deepStrictEqual(health, { status: 200, body: { status: "ok" } })
      const openapi = yield* call(url, "/openapi.json")
      assert.strictEqual(openapi.status, 200)
      assert.isTrue("/sessions/{id}/events" in openapi.body.paths)
    }))

  it.live("CORS is configured, not open: an allowed origin's preflight is answered, another origin gets no grant, and none is sent by default", () =>
    Effect.gen(function*() {
      const preflight = (url: string, origin: string) =>
        Effect.promise(() =>
          fetch(`${url}/sessions`, {
            method: "OPTIONS",
            headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" }
          }).then((response) => ({
            origin: response.headers.get("access-control-allow-origin"),
            headers: response.headers.get("access-control-allow-headers")
          }))
        )
      const routes = Server.layer({ agents: { ops: agent }, auth: Auth.bearer(tokens), cors: { origins: ["https://app.example.com"] } })
      const configured = yield* Server.listen(routes)
      assert.deepStrictEqual(yield* preflight(configured.url, "https://app.example.com"), { origin: "https://app.example.com", headers: "authorization,content-type,last-event-id" })
      // Another origin is never granted (a browser refuses a grant naming someone else), nor is "*".
      assert.include([null, "https://app.example.com"], (yield* preflight(configured.url, "https://evil.example.com")).origin)
      const plain = yield* serve([])
      assert.strictEqual((yield* preflight(plain.url, "https://app.example.com")).origin, null)
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([]), Sandbox.layerNoop()))))

  it.live("a hostile session id (NUL, control characters) is refused at the door: a start or a chat is a 400 naming why, any other route a 404, and no store sees it", () =>
    Effect.gen(function*() {
      const { url } = yield* serve([])
      for (const id of ["alice\u0000x", "tab\there", "new\nline"]) {
        const started = yield* call(url, "/sessions", { token: "tok-alice", body: { id } })
        assert.deepStrictEqual([started.status, started.body._tag], [400, "BadRequest"], id)
        assert.include(started.body.message, "holds", id)
        const chat = yield* call(url, "/chat", { token: "tok-alice", body: { id, trigger: "submit-message", messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "hi" }] }] } })
        assert.deepStrictEqual([chat.status, chat.body._tag], [400, "BadRequest"], id)
        const read = yield* call(url, `/sessions/${encodeURIComponent(id)}/history`, { token: "tok-alice" })
        assert.deepStrictEqual([read.status, read.body._tag], [404, "NotFound"], id)
      }
      assert.deepStrictEqual((yield* call(url, "/sessions", { token: "tok-alice" })).body, { sessions: [] })
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([]), Sandbox.layerNoop()))))
})

/**
 * A run through the server at each edge of its life: aborted while it streams, its session stopped
 * while it waits for an approval, its client gone mid-run (the run goes on and its events are all
 * there), the server closed mid-stream (the stream ends, the session stops), and a stopped session
 * started again from its store by the next call.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope } from "effect"
import * as Sandbox from "@condukt/core/Sandbox"
import * as SessionStore from "@condukt/core/SessionStore"
import { Auth, Server } from "../src/index.ts"
import { agent } from "./fixtures/ops.ts"

const routes = Server.layer({ agents: { ops: agent }, auth: Auth.bearer({ tok: "ada" }), defaultAgent: "ops" })

const env = (replies: ReadonlyArray<TestModel.Reply>) => Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop(), SessionStore.layerMemory)

const post = (url: string, path: string, body?: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(url + path, {
      method: "POST",
      headers: { authorization: "Bearer tok", "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
  })

const get = (url: string, path: string) =>
  Effect.promise(async () => {
    const response = await fetch(url + path, { headers: { authorization: "Bearer tok" } })
    return { status: response.status, body: await response.json() }
  })

/** The event tags of an SSE body read to its end. */
const tagsOf = (text: string) => text.split("\n\n").flatMap((frame) => frame.split("\n").filter((line) => line.startsWith("event: ")).map((line) => line.slice(7)))

/** The session's events, from the first, until `until` (a tag) came; the connection then dropped. */
const eventsUntil = (url: string, id: string, until: string) =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const response = await fetch(`${url}/sessions/${id}/events`, { headers: { authorization: "Bearer tok" }, signal: controller.signal })
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ""
    while (!tagsOf(text).includes(until)) text += (await reader.read()).value ?? ""
    controller.abort()
    return tagsOf(text)
  })

const waitForPending = (url: string, id: string) =>
  Effect.gen(function*() {
    while ((yield* get(url, `/sessions/${id}/approvals`)).body.length === 0) yield* Effect.sleep("5 millis")
  })

describe("a run through the server, at each edge", () => {
  it.live("aborted while it waits: the run ends aborted, its events end with AgentEnd", () =>
    Effect.gen(function*() {
      const { url } = yield* Server.listen(routes)
      yield* post(url, "/sessions", { id: "a" })
      const run = yield* Effect.forkChild(post(url, "/sessions/a/runs", { prompt: "deploy" }))
      yield* waitForPending(url, "a")
      assert.strictEqual((yield* post(url, "/sessions/a/abort")).status, 204)
      const ended = yield* Fiber.join(run)
      assert.strictEqual(ended.body.outcome, "aborted")
      const tags = yield* eventsUntil(url, "a", "AgentEnd")
      assert.deepStrictEqual(tags.slice(-1), ["AgentEnd"])
      assert.isFalse((yield* get(url, "/sessions/a")).body.running)
    }).pipe(Effect.scoped, Effect.provide(env([TestModel.toolCall("deploy", { target: "prod" }, "c1")]))))

  it.live("its session stopped while it waits: the run ends, and the next call starts the session again from its store", () =>
    Effect.gen(function*() {
      const { url } = yield* Server.listen(routes)
      yield* post(url, "/sessions", { id: "s" })
      assert.strictEqual((yield* post(url, "/sessions/s/runs", { prompt: "hello" })).body.text, "Hi.")
      const run = yield* Effect.forkChild(post(url, "/sessions/s/runs", { prompt: "deploy" }))
      yield* waitForPending(url, "s")
      const stopped = yield* Effect.promise(() => fetch(`${url}/sessions/s`, { method: "DELETE", headers: { authorization: "Bearer tok" } }))
      assert.strictEqual(stopped.status, 204)
      const ended = yield* Fiber.join(run)
      assert.notStrictEqual(ended.body.outcome, "completed")
      const tags = yield* eventsUntil(url, "s", "AgentEnd")
      assert.strictEqual(tags.filter((tag) => tag === "AgentEnd").length, 2)
      // Started again from its store by the next call: the first exchange is still there.
      const history = yield* get(url, "/sessions/s/history")
      assert.deepStrictEqual(history.body.slice(0, 2).map((m: { _tag: string }) => m._tag), ["UserMessage", "AssistantMessage"])
    }).pipe(Effect.scoped, Effect.provide(env([TestModel.text("Hi."), TestModel.toolCall("deploy", { target: "prod" }, "c1")]))))

  it.live("its client gone mid-run: the run goes on to its end, and every event is there for the next reader", () =>
    Effect.gen(function*() {
      const { url } = yield* Server.listen(routes)
      yield* post(url, "/sessions", { id: "c" })
      // The streaming client reads the run's first events and goes away while it waits for an answer.
      const controller = new AbortController()
      const partial = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/sessions/c/runs/stream`, {
          method: "POST",
          headers: { authorization: "Bearer tok", "content-type": "application/json" },
          body: JSON.stringify({ prompt: "deploy" }),
          signal: controller.signal
        })
        const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
        let text = ""
        while (!tagsOf(text).includes("ApprovalRequested")) text += (await reader.read()).value ?? ""
        controller.abort()
        return tagsOf(text)
      })
      assert.deepStrictEqual(partial, ["AgentStart", "TurnStart", "TurnEnd", "ToolCall", "ApprovalRequested"])
      assert.strictEqual((yield* post(url, "/sessions/c/approvals/c1", { approved: true })).status, 204)
      const all = yield* eventsUntil(url, "c", "AgentEnd")
      assert.deepStrictEqual(all, [...partial, "ToolResult", "TurnStart", "TextDelta", "TurnEnd", "AgentEnd"])
    }).pipe(Effect.scoped, Effect.provide(env([TestModel.toolCall("deploy", { target: "prod" }, "c1"), TestModel.text("Done.")]))))

  it.live("the server closed mid-stream: the open stream ends and the port is closed", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { url } = yield* Server.listen(routes).pipe(Scope.provide(scope))
      yield* post(url, "/sessions", { id: "x" })
      const run = yield* Effect.forkChild(post(url, "/sessions/x/runs", { prompt: "deploy" }).pipe(Effect.exit))
      yield* waitForPending(url, "x")
      const reading = yield* Effect.forkChild(Effect.promise(async () => {
        const response = await fetch(`${url}/sessions/x/events`, { headers: { authorization: "Bearer tok" } })
        try {
          await response.text()
          return "ended"
        } catch {
          return "cut"
        }
      }))
      yield* Effect.sleep("50 millis")
      yield* Scope.close(scope, Exit.void)
      assert.include(["ended", "cut"], yield* Fiber.join(reading))
      yield* Fiber.join(run)
      const refused = yield* Effect.promise(() => fetch(`${url}/health`).then(() => "answered", () => "refused"))
      assert.strictEqual(refused, "refused")
    }).pipe(Effect.scoped, Effect.provide(env([TestModel.toolCall("deploy", { target: "prod" }, "c1")]))))
})

/**
 * What an MCP server asks, answered over HTTP: server-everything (a real MCP server from npm, over
 * stdio) asks for a form while a run streams; the client sees `ElicitationRequested` in the
 * session's events, answers it wrongly (a 400 saying what the form wants), then rightly (204), and
 * the tool's result carries the answer.
 */
import { McpServer } from "@condukt/mcp"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as path from "node:path"
import { Auth, Server } from "../src/index.ts"

const everything = path.resolve(import.meta.dirname, "../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js")
const ELICITATION_TOOL = "everything.trigger-elicitation-request"

const agent = Agent.make({
  name: "asked",
  model: "test:x",
  mcpServers: [McpServer.stdio({ name: "everything", command: process.execPath, args: [everything, "stdio"] })]
})

const headers = { authorization: "Bearer tok", "content-type": "application/json" }

const post = (url: string, path: string, body: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(url + path, { method: "POST", headers, body: JSON.stringify(body) })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
  })

/** The first `ElicitationRequested` of the session's events. */
const firstQuestion = (url: string, id: string) =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const response = await fetch(`${url}/sessions/${id}/events`, { headers, signal: controller.signal })
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ""
    while (!text.includes("event: ElicitationRequested\n")) text += (await reader.read()).value ?? ""
    while (!/event: ElicitationRequested\ndata: [^\n]*\n\n/.test(text)) text += (await reader.read()).value ?? ""
    controller.abort()
    const data = /event: ElicitationRequested\ndata: ([^\n]*)\n/.exec(text)![1]!
    return JSON.parse(data) as { id: string; server: string; message: string }
  })

describe("elicitations over HTTP", () => {
  it.live("an MCP server's question is answered by POST /sessions/{id}/elicitations/{requestId}, checked against its form", () =>
    Effect.gen(function*() {
      const { url } = yield* Server.listen(Server.layer({ agents: { asked: agent }, auth: Auth.bearer({ tok: "ada" }) }))
      assert.strictEqual((yield* post(url, "/sessions", { agent: "asked", id: "e" })).status, 201)
      const run = yield* Effect.forkChild(post(url, "/sessions/e/runs", { prompt: "go" }))
      const question = yield* firstQuestion(url, "e")
      assert.strictEqual(question.server, "everything")
      const wrong = yield* post(url, `/sessions/e/elicitations/${question.id}`, { action: "accept", content: { check: true } })
      assert.strictEqual(wrong.status, 400)
      assert.strictEqual(wrong.body._tag, "BadRequest")
      const right = yield* post(url, `/sessions/e/elicitations/${question.id}`, { action: "accept", content: { name: "Ada Lovelace", check: true } })
      assert.strictEqual(right.status, 204)
      const again = yield* post(url, `/sessions/e/elicitations/${question.id}`, { action: "decline" })
      assert.strictEqual(again.status, 409)
      const ended = yield* Fiber.join(run)
      assert.strictEqual(ended.body.outcome, "completed")
      const history = yield* Effect.promise(() => fetch(`${url}/sessions/e/history`, { headers }).then((r) => r.json()))
      assert.isTrue(JSON.stringify(history).includes("Name: Ada Lovelace"))
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.toolCall(ELICITATION_TOOL, {}), TestModel.text("done")]), Condukt.layer))
    ))
})

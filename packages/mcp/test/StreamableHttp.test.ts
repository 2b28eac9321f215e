import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { Agent, Session } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { McpServer } from "../src/index.ts"
import { loopbackServer } from "./fixtures/httpServer.ts"
import { results } from "./support.ts"

const session = (url: string, replies: ReadonlyArray<TestModel.Reply>) =>
  Session.start(Agent.make({ name: "http", model: "test:x", mcpServers: [McpServer.http({ name: "lb", url })] })).pipe(
    Effect.provide(TestModel.layer(replies)),
    Effect.provide(Condukt.layer)
  )

const echo = (text: string) => [TestModel.toolCall("lb.echo", { text }), TestModel.text("done")]

describe("Streamable HTTP", () => {
  it.live("closing the session DELETEs its Streamable HTTP session", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer
      const id = yield* Effect.scoped(Effect.gen(function*() {
        const s = yield* session(server.url, echo("hi"))
        const events = Array.from(yield* Stream.runCollect(s.stream("go")))
        assert.deepStrictEqual(results(events), [{ name: "lb.echo", content: "hi", isError: false }])
        return server.requests.find((r) => r.session !== undefined)!.session
      }))
      assert.isDefined(id)
      assert.deepStrictEqual(server.requests.filter((r) => r.method === "DELETE"), [{ method: "DELETE", session: id, rpc: undefined }])
    }).pipe(Effect.scoped))

  it.live("a 404 on a known session re-initialises once and the call goes through", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer
      const s = yield* session(server.url, [...echo("first"), ...echo("second")])
      yield* s.run("first")
      server.loseSessions(1)
      const events = Array.from(yield* Stream.runCollect(s.stream("second")))
      assert.deepStrictEqual(results(events), [{ name: "lb.echo", content: "second", isError: false }])
      assert.deepStrictEqual(server.requests.filter((r) => r.rpc === "initialize").length, 2)
      const calls = server.requests.filter((r) => r.rpc === "tools/call")
      // The lost session's call, then the same call on the new session.
      assert.strictEqual(calls.length, 3)
      assert.notStrictEqual(calls[1]!.session, calls[2]!.session)
    }).pipe(Effect.scoped))

  it.live("a second 404 after re-initialising fails the call with TransportDown", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer
      const s = yield* session(server.url, echo("lost"))
      server.loseSessions(2)
      const events = Array.from(yield* Stream.runCollect(s.stream("go")))
      assert.deepStrictEqual(results(events), [{
        name: "lb.echo",
        content: "Error: MCP server lb is down (the server lost the session again (HTTP 404) after a new one was opened); its tools cannot be called until it is back",
        isError: true
      }])
      assert.deepStrictEqual(server.requests.filter((r) => r.rpc === "initialize").length, 2)
      assert.deepStrictEqual(
        events.flatMap((e) => (e._tag === "McpServerDown" ? [e.description] : [])),
        ["the server lost the session again (HTTP 404) after a new one was opened"]
      )
    }).pipe(Effect.scoped))
})

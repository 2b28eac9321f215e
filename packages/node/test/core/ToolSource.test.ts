import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Ref, Schema, Stream } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as Session from "@condukt/core/Session"
import * as Tool from "@condukt/core/Tool"
import type * as ToolSource from "@condukt/core/ToolSource"
import * as Condukt from "../../src/Condukt.ts"

const named = (name: string, text: string) =>
  Tool.make(name, { description: name, parameters: Schema.Struct({}), call: () => Effect.succeed(text) })

/** A source whose tools a test swaps through `tools`; `closed` completes when its scope closes. */
const source = (name: string, tools: Ref.Ref<ReadonlyArray<Tool.Tool>>, closed: Deferred.Deferred<void>): ToolSource.ToolSource => ({
  _tag: "ToolSource",
  name,
  start: () => Effect.as(Effect.addFinalizer(() => Deferred.succeed(closed, undefined)), { tools: Ref.get(tools) })
})

const failing = (name: string): ToolSource.ToolSource => ({
  _tag: "ToolSource",
  name,
  start: () => Effect.fail(new Session.McpStartFailed({ server: name, description: "no" }))
})

describe("ToolSource", () => {
  it.live("a source's tools join the agent's, and a change shows from the next request", () =>
    Effect.gen(function*() {
      const tools = yield* Ref.make<ReadonlyArray<Tool.Tool>>([named("src.a", "from a")])
      const closed = yield* Deferred.make<void>()
      const agent = Agent.make({ name: "s", model: "test:x", mcpServers: [source("src", tools, closed)] })
      const session = yield* Session.start(agent)
      const first = yield* session.run("one")
      assert.deepStrictEqual(first.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])), ["from a"])
      yield* Ref.set(tools, [named("src.b", "from b")])
      const second = yield* session.run("two")
      assert.deepStrictEqual(second.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])), ["from b"])
      yield* session.stop
      // The stop has closed the source's scope by the time it returns.
      assert.isTrue(yield* Deferred.isDone(closed))
    }).pipe(
      Effect.scoped,
      Effect.provide(TestModel.layer([
        TestModel.toolCall("src.a", {}),
        TestModel.text("1"),
        TestModel.toolCall("src.b", {}),
        TestModel.text("2")
      ])),
      Effect.provide(Condukt.layer)
    ))

  it.live("one source failing fails the start with McpStartFailed and closes the others", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<void>()
      const tools = yield* Ref.make<ReadonlyArray<Tool.Tool>>([])
      const agent = Agent.make({ name: "s", model: "test:x", mcpServers: [source("ok", tools, closed), failing("bad")] })
      // The start fails with the source's reason, caught by it; the test's scope stays open, so
      // only the failed start can have closed the source that started.
      const reason = yield* Session.start(agent, { id: "s" }).pipe(
        Effect.flatMap(() => Effect.die("started")),
        Effect.catchReason("SessionError", "McpStartFailed", Effect.succeed)
      )
      assert.deepStrictEqual(reason, new Session.McpStartFailed({ server: "bad", description: "no" }))
      // The failed start has closed the source that had started by the time it fails.
      assert.isTrue(yield* Deferred.isDone(closed))
    }).pipe(Effect.provide(TestModel.layer([])), Effect.provide(Condukt.layer)))

  it.live("two sources with one name fail the start", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "s", model: "test:x", mcpServers: [failing("x"), failing("x")] })
      assert.deepStrictEqual(
        yield* Effect.flip(Effect.scoped(Session.start(agent, { id: "s" }))),
        new Session.SessionError({
          sessionId: "s",
          reason: new Session.McpStartFailed({ server: "x", description: "two servers have this name: names must be unique" })
        })
      )
    }).pipe(Effect.provide(TestModel.layer([])), Effect.provide(Condukt.layer)))

  it.live("McpServer events between runs reach the next run's stream after AgentStart", () =>
    Effect.gen(function*() {
      const announcing: ToolSource.ToolSource = {
        _tag: "ToolSource",
        name: "srv",
        start: (context) =>
          Effect.as(context.emit({ _tag: "McpServerStarted", server: "srv", transport: "stdio", tools: 0 }), { tools: Effect.succeed([]) })
      }
      const session = yield* Session.start(Agent.make({ name: "s", model: "test:x", mcpServers: [announcing] }))
      const tags = Array.from(yield* Stream.runCollect(session.stream("hi"))).map((e) => e._tag)
      assert.deepStrictEqual(tags.slice(0, 2), ["AgentStart", "McpServerStarted"])
    }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.text("ok")])), Effect.provide(Condukt.layer)))

  it.live("a server flapping between runs leaves only the latest events for the next run, not all of them", () =>
    Effect.gen(function*() {
      const flapping: ToolSource.ToolSource = {
        _tag: "ToolSource",
        name: "srv",
        start: (context) =>
          Effect.as(
            Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) =>
              context.emit(i % 2 === 0
                ? { _tag: "McpServerDown", server: "srv", description: `flap ${i}` }
                : { _tag: "McpServerStarted", server: "srv", transport: "stdio", tools: 0 }), { discard: true }),
            { tools: Effect.succeed([]) }
          )
      }
      const session = yield* Session.start(Agent.make({ name: "s", model: "test:x", mcpServers: [flapping] }))
      const events = Array.from(yield* Stream.runCollect(session.stream("hi")))
      const mcp = events.filter((e) => e._tag === "McpServerDown" || e._tag === "McpServerStarted")
      assert.strictEqual(mcp.length, 64)
      const lastDown = mcp.at(-2)
      assert.strictEqual(lastDown?._tag === "McpServerDown" ? lastDown.description : undefined, "flap 198")
    }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.text("ok")])), Effect.provide(Condukt.layer)))

  it.live("two servers offering one tool name fail the start naming both servers", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<void>()
      const tools = yield* Ref.make<ReadonlyArray<Tool.Tool>>([named("search", "x")])
      const agent = Agent.make({ name: "s", model: "test:x", mcpServers: [source("web", tools, closed), source("docs", tools, closed)] })
      const error = yield* Effect.flip(Effect.scoped(Session.start(agent)))
      assert.strictEqual(
        error.message,
        "Two tools are named search (by MCP server web and MCP server docs): tool names must be unique (rename one, or give a prefix)"
      )
    }).pipe(Effect.provide(TestModel.layer([])), Effect.provide(Condukt.layer)))
})

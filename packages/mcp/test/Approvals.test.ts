import { assert, describe, it } from "@effect/vitest"
import { Agent, Session } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { Effect, Stream } from "effect"
import { McpServer } from "../src/index.ts"
import { fixture, node, results } from "./support.ts"

describe("MCP tools and approval rules", () => {
  it.live("a glob rule covers a server's tools without touching them: fx.* asks, fx.fail is denied, the answer runs the call", () =>
    Effect.gen(function*() {
      const agent = Agent.make({
        name: "mcp",
        model: "test:x",
        mcpServers: [McpServer.stdio({ name: "fx", command: node, args: [fixture] })],
        approvals: { ask: ["fx.*"], deny: ["*.fail"] }
      })
      const session = yield* Session.start(agent)
      const asked: Array<string> = []
      const events = yield* Stream.runCollect(Stream.tap(session.stream("go"), (event) => {
        if (event._tag !== "ApprovalRequested") return Effect.void
        asked.push(`${event.tool} ${JSON.stringify(event.input)}`)
        return Effect.orDie(session.approve(event.callId))
      }))
      assert.deepStrictEqual(asked, ['fx.echo {"text":"hi"}'])
      // fx.fail's denial is shown once the batch parks (fx.echo waiting), or in call order when the
      // answer came first: which of the two is timing's, so the results are compared in name order.
      assert.deepStrictEqual(results(events).toSorted((a, b) => b.name.localeCompare(a.name)), [
        { name: "fx.fail", content: "Denied by a rule: fx.fail matches \"*.fail\"", isError: true },
        { name: "fx.echo", content: "hi", isError: false }
      ])
    }).pipe(
      Effect.provide(TestModel.layer([
        TestModel.reply(TestModel.toolCall("fx.echo", { text: "hi" }), TestModel.toolCall("fx.fail", {})),
        TestModel.text("done")
      ])),
      Effect.provide(Condukt.layer),
      Effect.scoped
    ))

  it.live("a server declared approval: ask: its tools ask unless a rule allows one by its exact name; a glob allow does not count", () =>
    Effect.gen(function*() {
      const agent = Agent.make({
        name: "mcp",
        model: "test:x",
        mcpServers: [McpServer.stdio({ name: "fx", command: node, args: [fixture], approval: "ask" })],
        // `fx.*` would let a tool the server adds tomorrow run: only the exact name counts.
        approvals: { allow: ["fx.*", "fx.echo"] }
      })
      const session = yield* Session.start(agent)
      const asked: Array<string> = []
      const events = yield* Stream.runCollect(Stream.tap(session.stream("go"), (event) => {
        if (event._tag !== "ApprovalRequested") return Effect.void
        asked.push(event.tool)
        return Effect.orDie(session.deny(event.callId, "not this one"))
      }))
      assert.deepStrictEqual(asked, ["fx.fail"])
      assert.deepStrictEqual(results(events), [
        { name: "fx.echo", content: "hi", isError: false },
        { name: "fx.fail", content: "Denied by the user: not this one", isError: true }
      ])
    }).pipe(
      Effect.provide(TestModel.layer([
        TestModel.reply(TestModel.toolCall("fx.echo", { text: "hi" }), TestModel.toolCall("fx.fail", {})),
        TestModel.text("done")
      ])),
      Effect.provide(Condukt.layer),
      Effect.scoped
    ))

  it.live("a server declared approval: deny: a tool no rule allows by name is refused without asking; the map form takes the key too", () =>
    Effect.gen(function*() {
      const server = McpServer.fromConfig({ name: "fx", transport: "stdio", command: node, args: [fixture], approval: "deny" })
      assert.strictEqual(server.invalid, undefined)
      const agent = Agent.make({ name: "mcp", model: "test:x", mcpServers: [server], approvals: { allow: ["fx.echo"] } })
      const session = yield* Session.start(agent)
      const events = yield* Stream.runCollect(session.stream("go"))
      assert.deepStrictEqual([...events].filter((event) => event._tag === "ApprovalRequested"), [])
      assert.deepStrictEqual(results(events), [
        { name: "fx.echo", content: "hi", isError: false },
        { name: "fx.fail", content: "Denied: fx.fail is a tool the server fx lists that no rule allows by name", isError: true }
      ])
    }).pipe(
      Effect.provide(TestModel.layer([
        TestModel.reply(TestModel.toolCall("fx.echo", { text: "hi" }), TestModel.toolCall("fx.fail", {})),
        TestModel.text("done")
      ])),
      Effect.provide(Condukt.layer),
      Effect.scoped
    ))
})

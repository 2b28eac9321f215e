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
      assert.deepStrictEqual(results(events), [
        { name: "fx.echo", content: "hi", isError: false },
        { name: "fx.fail", content: "Denied by a rule: fx.fail matches \"*.fail\"", isError: true }
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

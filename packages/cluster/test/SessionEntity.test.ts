/**
 * SessionEntity: what a run delivered again after its runner died finds in the history (nothing of
 * it, all of it, a part), and an entity that passivates after `maxIdleTime` (its session stops, its
 * history stays and comes back with the next message).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Queue } from "effect"
import { TestRunner } from "effect/cluster"
import * as path from "node:path"
import * as Agent from "@condukt/core/Agent"
import * as Message from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Sessions from "@condukt/core/Sessions"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as ClusterSessions from "../src/ClusterSessions.ts"
import * as SessionEntity from "../src/SessionEntity.ts"
import { tempDir } from "../../node/test/sessionStore/conformance.ts"
import { echoModel } from "../../core/test/fixtures/sessionsById.ts"
import { startProbe } from "../../core/test/fixtures/startProbe.ts"

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

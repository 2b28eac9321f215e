/**
 * A session handed from one runner to the next with part of a run saved: runner `a` (in this
 * process, on a SQLite file) stops while a tool call of a run runs, or while a call waits for
 * approval; this process's client keeps waiting for the run; runner `b` then takes the session
 * over. The run delivered again answers the reply of the session's own continuation (the cut-off
 * call reads that it was interrupted), and an approval given while no runner held the session
 * reaches it on `b`. Runner processes killed with `kill -9`: ClusterSessions.processes.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Schema, Scope, Stream } from "effect"
import * as path from "node:path"
import * as Agent from "@condukt/core/Agent"
import * as History from "@condukt/core/History"
import * as Message from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Session from "@condukt/core/Session"
import * as Sessions from "@condukt/core/Sessions"
import * as Tool from "@condukt/core/Tool"
import * as Runner from "../src/Runner.ts"
import { freePort } from "../../mcp/test/support.ts"
import { TempDir } from "@condukt/testing"

const tempDir = TempDir.make("condukt-store-")

/** `note` and `rm <path>` call their tool (call ids `c1`, `c_rm`); a tool's result is answered `done: <result>`. */
const model = Model.Model.of({
  name: "test:handover",
  stream: (request) => {
    const last = History.toArray(request.messages).at(-1)
    if (last?._tag === "ToolResultMessage") {
      return Stream.make<Array<Model.Part>>({ _tag: "TextDelta", text: `done: ${last.content}` }, { _tag: "Finish", reason: "stop" })
    }
    const prompt = last?._tag === "UserMessage" ? last.content : ""
    const call = prompt === "note"
      ? { _tag: "ToolCall" as const, id: "c1", name: "note", input: {} }
      : { _tag: "ToolCall" as const, id: "c_rm", name: "rm", input: { path: prompt.slice(3) } }
    return Stream.make<Array<Model.Part>>(call, { _tag: "Finish", reason: "tool-calls" })
  }
})

/**
 * The agent: `note` tells `started` and never returns (its runner stops meanwhile); `rm` tells
 * `asked` when it asks for approval, and counts its runs in `removed`.
 */
const workerOf = (started: Deferred.Deferred<void>, asked: Deferred.Deferred<void>, removed: Array<string>) =>
  Agent.make({
    name: "worker",
    model: "test:handover",
    sandbox: Sandbox.layerNoop(),
    tools: [
      Tool.make("note", { description: "Notes", parameters: Schema.Struct({}), call: () => Effect.andThen(Deferred.succeed(started, undefined), Effect.never) }),
      Tool.make("rm", {
        description: "Removes",
        parameters: Schema.Struct({ path: Schema.String }),
        needsApproval: () => Effect.as(Deferred.succeed(asked, undefined), true),
        call: ({ path }) => Effect.sync(() => removed.push(path)).pipe(Effect.as(`removed ${path}`))
      })
    ]
  })

/**
 * A runner on `file` in a scope of its own, up: built with a memo map of its own, so that it shares
 * no service (its sharding above all) with the client it is started beside.
 */
const runnerOn = (file: string, agent: Agent.Agent<never>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const port = yield* freePort
    const runner = Runner.layerSqlite({ agents: { worker: agent }, port, file }).pipe(Layer.provide(Layer.succeed(Model.Model, model)))
    yield* Layer.buildWithMemoMap(runner, Layer.makeMemoMapUnsafe(), scope)
    return scope
  })

describe("SessionEntity: a session handed over to another runner", () => {
  it.live("a run stopped inside a tool call answers, from the next runner, the reply of the session's continuation; each turn once", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "cluster.db")
      const started = yield* Deferred.make<void>()
      const agent = workerOf(started, yield* Deferred.make<void>(), [])
      const a = yield* runnerOn(file, agent)
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const id = yield* sessions.start("worker", { id: "h1" })
        const run = yield* Effect.forkChild(sessions.run(id, "note"))
        yield* Deferred.await(started)
        yield* Scope.close(a, Exit.void)
        const b = yield* runnerOn(file, agent)
        const messages = [
          Message.assistant([Message.toolCallPart({ id: "c1", name: "note", input: {} })]),
          Message.toolResult({ callId: "c1", name: "note", content: Session.INTERRUPTED_RESULT, isError: true }),
          Message.assistant([Message.textPart(`done: ${Session.INTERRUPTED_RESULT}`)])
        ]
        assert.deepStrictEqual(yield* Fiber.join(run), { text: `done: ${Session.INTERRUPTED_RESULT}`, turns: 2, messages })
        assert.deepStrictEqual(yield* sessions.history(id), [Message.user("note"), ...messages])
        yield* Scope.close(b, Exit.void)
      }).pipe(Effect.provide(Runner.layerSqliteClient({ file })))
    }), 60_000)

  it.live("an approval given while no runner holds the session reaches it on the next runner: the call runs once, the run answers", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "cluster.db")
      const asked = yield* Deferred.make<void>()
      const removed: Array<string> = []
      const agent = workerOf(yield* Deferred.make<void>(), asked, removed)
      const a = yield* runnerOn(file, agent)
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const id = yield* sessions.start("worker", { id: "h2" })
        const run = yield* Effect.forkChild(sessions.run(id, "rm /tmp/x"))
        yield* Deferred.await(asked)
        assert.deepStrictEqual(yield* sessions.pending(id), [{ callId: "c_rm", tool: "rm", input: { path: "/tmp/x" } }])
        yield* Scope.close(a, Exit.void)
        // No runner holds the session: the answer waits in the cluster's storage.
        const approved = yield* Effect.forkChild(sessions.approve(id, "c_rm"))
        const b = yield* runnerOn(file, agent)
        yield* Fiber.join(approved)
        assert.deepStrictEqual((yield* Fiber.join(run)).text, "done: removed /tmp/x")
        assert.deepStrictEqual(removed, ["/tmp/x"])
        assert.deepStrictEqual((yield* sessions.history(id)).length, 4)
        yield* Scope.close(b, Exit.void)
      }).pipe(Effect.provide(Runner.layerSqliteClient({ file })))
    }), 60_000)
})

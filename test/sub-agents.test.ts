/**
 * Sub-agents (`Agent.asTool`) with real processes: a parent aborted while its child runs a Bash
 * `sleep` on a LocalSandbox ends both runs aborted with the process gone, and stopped, with the
 * process gone when `stop` returns; an MCP server the parent
 * and the child both declare runs once, the child calling the parent's connection.
 */
import { Agent, Model, type SessionEvent, Session, Tools } from "@condukt/core"
import { McpServer } from "@condukt/mcp"
import { Condukt, LocalSandbox } from "@condukt/node"
import { Processes, TempDir, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream } from "effect"
import * as path from "node:path"
import { root } from "./support/exec.ts"

const tempDir = TempDir.make("condukt-subagents-")

/** Each agent its own scripted model, through the provider registry, and the Node host. */
const models = (parent: ReadonlyArray<TestModel.Reply>, child: ReadonlyArray<TestModel.Reply>) =>
  Layer.mergeAll(
    Layer.unwrap(Effect.gen(function*() {
      const p = yield* TestModel.make(parent, { name: "parent:x" })
      const c = yield* TestModel.make(child, { name: "child:x" })
      return Model.layerProviders({ parent: () => Effect.succeed(p.model), child: () => Effect.succeed(c.model) })
    })),
    Condukt.layer
  )

const ends = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((e) => (e._tag === "AgentEnd" ? [[e.agentPath?.join("/") ?? "", e.outcome]] : []))

const server = (name: string) =>
  McpServer.stdio({ name, command: process.execPath, args: [path.join(root, "packages/mcp/test/fixtures/server.ts")] })

const worker = Agent.make({ name: "worker", model: "child:x", tools: [Tools.Bash] })
const main = Agent.make({ name: "main", model: "parent:x", tools: [Agent.asTool(worker, { description: "Does the work" })] })

/** A session of `main` on a LocalSandbox in a fresh directory, whose run has the worker run a `sleep`. */
const sleeping = <A, E, R>(test: (session: Session.Session, pid: Effect.Effect<number, string>) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const session = yield* Session.start(main, { sandbox: LocalSandbox.layer({ cwd: dir }), projectInstructions: false })
    return yield* test(session, Processes.awaitPidFile(path.join(dir, "pid")))
  }).pipe(
    Effect.scoped,
    Effect.provide(models(
      [TestModel.toolCall("worker", { prompt: "Sleep" })],
      [TestModel.toolCall("Bash", { command: "echo $$ > pid && exec sleep 30" })]
    ))
  )

describe("sub-agents with processes", () => {
  it.live("a parent aborted while its child runs a Bash sleep: both runs end aborted, the process is gone", () =>
    sleeping((session, awaitPid) =>
      Effect.gen(function*() {
        const reading = yield* Effect.forkChild(Stream.runCollect(session.stream("Work")))
        const pid = yield* awaitPid
        yield* session.abort
        const events = Array.from(yield* Fiber.join(reading))
        assert.deepStrictEqual(ends(events), [["main/worker", "aborted"], ["", "aborted"]])
        assert.isTrue(yield* Processes.isDead(pid), `the sleep (pid ${pid}) is ${yield* Processes.state(pid)}`)
        // The parent's model reads that its call was cut short; the session goes on.
        const calls = (yield* session.history).flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))
        assert.deepStrictEqual(calls, [Session.ABORTED_RESULT])
      })))

  it.live("a parent stopped while its child runs a Bash sleep: the process is gone when stop returns", () =>
    sleeping((session, awaitPid) =>
      Effect.gen(function*() {
        const running = yield* Effect.forkChild(Effect.flip(session.run("Work")))
        const pid = yield* awaitPid
        yield* session.stop
        assert.isTrue(yield* Processes.isDead(pid), `the sleep (pid ${pid}) is ${yield* Processes.state(pid)}`)
        assert.strictEqual((yield* Fiber.join(running)).message, `Session ${session.id} is stopped`)
      })))

  it.live("an MCP server the parent and its child both declare runs once: the child calls the parent's connection", () =>
    Effect.gen(function*() {
      const asker = Agent.make({ name: "worker", model: "child:x", mcpServers: [server("fx")] })
      const parent = Agent.make({ name: "main", model: "parent:x", tools: [Agent.asTool(asker, { description: "Asks the server" })], mcpServers: [server("fx")] })
      const session = yield* Session.start(parent, { projectInstructions: false })
      const events = Array.from(yield* Stream.runCollect(session.stream("Which process?")))
      const pids = events.flatMap((e) => (e._tag === "ToolResult" && e.name === "fx.pid" ? [[e.agentPath?.join("/") ?? "", e.content]] : []))
      assert.deepStrictEqual(pids.map(([who]) => who), ["", "main/worker"])
      assert.strictEqual(pids[0]![1], pids[1]![1])
      assert.isFalse(yield* Processes.isDead(Number(pids[0]![1])))
      // One server started, by the parent (its event opens the first run's stream); none by the child.
      assert.deepStrictEqual(events.flatMap((e) => (e._tag === "McpServerStarted" ? [[e.agentPath?.join("/") ?? "", e.server]] : [])), [["", "fx"]])
    }).pipe(
      Effect.scoped,
      Effect.provide(models(
        [TestModel.toolCall("fx.pid", {}), TestModel.toolCall("worker", { prompt: "Ask" }), TestModel.text("Same")],
        [TestModel.toolCall("fx.pid", {}), TestModel.text("Asked")]
      ))
    ))
})

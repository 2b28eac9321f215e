import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Stream, Tracer } from "effect"
import { Agent, Session, type SessionEvent } from "@condukt/core"
import { Condukt, NodeProcessRunner } from "@condukt/node"
import { Processes, Spans, TestModel } from "@condukt/testing"
import { McpClient, McpServer } from "../src/index.ts"
import { fixture, node, results, runWith } from "./support.ts"

const pidOf = (events: ReadonlyArray<SessionEvent.SessionEvent>) => Number(results(events)[0]!.content)

/** A session on TestModel with one fixture server; the model's replies are scripted per test. */
const session = (server: McpServer.McpServer, replies: ReadonlyArray<TestModel.Reply>) =>
  Session.start(Agent.make({ name: "faults", model: "test:x", mcpServers: [server] })).pipe(
    Effect.provide(TestModel.layer(replies)),
    Effect.provide(Condukt.layer)
  )

/** Runs `prompt`; when the run announces `tool`, runs `onCall` (while the call is pending). */
const runUntil = (s: Session.Session, tool: string, onCall: Effect.Effect<void>) =>
  s.stream("go").pipe(
    Stream.tap((e) => (e._tag === "ToolCall" && e.name === tool ? onCall : Effect.void)),
    Stream.runCollect,
    Effect.map((events) => Array.from(events))
  )

const DOWN = "Error: MCP server fx is down (the server exited); its tools cannot be called until it is back"
/** A temporary server (the default) that died is never restarted: its tools say so from then on. */
const GONE = "Error: MCP server fx is down (the server exited) and will not come back in this session"

describe("McpClient", () => {
  it.live("interrupting a session mid-call on a server started through sh -c leaves no process (by pid)", () =>
    Effect.gen(function*() {
      // `; true` keeps sh alive as the server's parent, so the server is a grandchild; the fixture
      // ignores SIGTERM and stdin EOF, so only the group's SIGKILL ends it.
      const server = McpServer.stdio({ name: "fx", command: "sh", args: ["-c", `'${node}' '${fixture}' ignore-term; true`] })
      const s = yield* session(server, [
        TestModel.toolCall("fx.pid", {}),
        TestModel.text("ok"),
        TestModel.toolCall("fx.hang", {}),
        TestModel.text("never")
      ])
      const pid = pidOf(yield* Stream.runCollect(s.stream("pid")).pipe(Effect.map((c) => Array.from(c))))
      const calling = yield* Deferred.make<void>()
      const run = yield* Effect.forkChild(runUntil(s, "fx.hang", Deferred.succeed(calling, undefined)))
      yield* Deferred.await(calling)
      yield* Fiber.interrupt(run)
      yield* s.stop
      // SIGKILL is delivered asynchronously: the check polls, bounded (2 s), instead of sleeping.
      yield* Processes.awaitDeath(pid)
    }).pipe(Effect.scoped))

  it.live("a server killed mid-call fails the call with TransportDown; the session's next run works", () =>
    Effect.gen(function*() {
      const s = yield* session(McpServer.stdio({ name: "fx", command: node, args: [fixture], requestTimeout: "5 minutes" }), [
        TestModel.toolCall("fx.pid", {}),
        TestModel.text("ok"),
        TestModel.toolCall("fx.hang", {}),
        TestModel.text("it died"),
        TestModel.toolCall("fx.echo", { text: "again" }),
        TestModel.text("still here")
      ])
      const pid = pidOf(Array.from(yield* Stream.runCollect(s.stream("pid"))))
      const events = yield* runUntil(s, "fx.hang", Effect.sync(() => process.kill(pid, "SIGKILL")))
      assert.deepStrictEqual(results(events), [{ name: "fx.hang", content: DOWN, isError: true }])
      assert.deepStrictEqual(
        events.flatMap((e) => (e._tag === "McpServerDown" ? [e.description] : [])),
        ["the server exited"]
      )
      // Temporary (the default): the server stays down, the session goes on.
      const next = yield* s.run("again")
      assert.strictEqual(next.text, "still here")
      assert.deepStrictEqual(next.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])), [GONE])
    }).pipe(Effect.scoped))

  it.live("a call the server never answers ends at requestTimeout; the server stays up", () =>
    Effect.gen(function*() {
      const s = yield* session(McpServer.stdio({ name: "fx", command: node, args: [fixture], requestTimeout: "300 millis" }), [
        TestModel.toolCall("fx.hang", {}),
        TestModel.text("gave up"),
        TestModel.toolCall("fx.echo", { text: "still up" }),
        TestModel.text("ok")
      ])
      const events = Array.from(yield* Stream.runCollect(s.stream("hang")))
      assert.deepStrictEqual(results(events), [{ name: "fx.hang", content: "Error: MCP server fx did not answer hang within 300ms", isError: true }])
      assert.deepStrictEqual(events.filter((e) => e._tag === "McpServerDown"), [])
      const next = Array.from(yield* Stream.runCollect(s.stream("again")))
      assert.deepStrictEqual(results(next), [{ name: "fx.echo", content: "still up", isError: false }])
    }).pipe(Effect.scoped))

  it.live("with restart: permanent, the supervisor brings the server back and its tool works again", () =>
    Effect.gen(function*() {
      const s = yield* session(McpServer.stdio({ name: "fx", command: node, args: [fixture], restart: "permanent" }), [
        TestModel.toolCall("fx.pid", {}),
        TestModel.text("ok"),
        TestModel.toolCall("fx.hang", {}),
        TestModel.text("it died"),
        TestModel.toolCall("fx.echo", { text: "back" }),
        TestModel.text("works")
      ])
      const pid = pidOf(Array.from(yield* Stream.runCollect(s.stream("pid"))))
      const restarted = yield* Deferred.make<void>()
      yield* Effect.forkChild(s.events.pipe(
        Stream.filter((e) => e._tag === "McpServerStarted"),
        Stream.runForEach(() => Deferred.succeed(restarted, undefined))
      ), { startImmediately: true })
      const events = yield* runUntil(s, "fx.hang", Effect.sync(() => process.kill(pid, "SIGKILL")))
      assert.deepStrictEqual(results(events), [{ name: "fx.hang", content: DOWN, isError: true }])
      yield* Deferred.await(restarted)
      const next = Array.from(yield* Stream.runCollect(s.stream("again")))
      assert.deepStrictEqual(results(next), [{ name: "fx.echo", content: "back", isError: false }])
    }).pipe(Effect.scoped))

  it.live("interrupting a call cancels its request on the server (notifications/cancelled)", () =>
    Effect.gen(function*() {
      const declaration = McpServer.stdio({ name: "fx", command: node, args: [fixture] }).declaration
      const connection = yield* McpClient.connect(declaration, {}, () => Effect.void)
      const hang = yield* Effect.forkChild(McpClient.caller(declaration, "hang")(connection, {}), { startImmediately: true })
      // The server reads in order: once a later call is answered, `hang` is on the server.
      assert.strictEqual(yield* McpClient.caller(declaration, "echo")(connection, { text: "after" }), "after")
      yield* Fiber.interrupt(hang)
      // The server reads in order: the cancellation arrived before this call.
      assert.strictEqual(yield* McpClient.caller(declaration, "cancelled")(connection, {}), "1")
    }).pipe(Effect.scoped, Effect.provide(NodeProcessRunner.layer)))

  it.live("every MCP request is a span McpClient.<method> with the server's name", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* Spans.make
      const { events } = yield* runWith([McpServer.stdio({ name: "fx", command: node, args: [fixture] })], [
        TestModel.toolCall("fx.echo", { text: "traced" }),
        TestModel.text("done")
      ]).pipe(Effect.provideService(Tracer.Tracer, tracer))
      assert.deepStrictEqual(results(events), [{ name: "fx.echo", content: "traced", isError: false }])
      const mcp = spans
        .filter((span) => span.name.startsWith("McpClient."))
        .map((span) => ({ name: span.name, attributes: Object.fromEntries(span.attributes), ended: span.status._tag === "Ended" }))
      assert.deepStrictEqual(mcp, [
        { name: "McpClient.initialize", attributes: { server: "fx" }, ended: true },
        { name: "McpClient.tools/list", attributes: { server: "fx" }, ended: true },
        { name: "McpClient.tools/call", attributes: { server: "fx", tool: "echo" }, ended: true }
      ])
    }).pipe(Effect.scoped))
})

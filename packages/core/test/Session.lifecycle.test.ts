/**
 * The actor's promises at every edge of a run's life: abort and interruption before the first
 * pause and mid-tool, stop mid-run, a crash, a stream reader that leaves early or never reads.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Queue, Schema, Scope, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import type * as SessionEvent from "../src/SessionEvent.ts"
import * as Tool from "../src/Tool.ts"

/** What a run's failure says: its reason's tag, for a SessionError. */
const reasonOf = (error: Session.RunError) => (error._tag === "SessionError" ? error.reason._tag : error._tag)

const label = (e: SessionEvent.SessionEvent) =>
  e._tag === "AgentEnd" ? `AgentEnd ${e.outcome}` : e._tag === "ToolCall" ? `ToolCall ${e.callId}` : e._tag

const Echo = Tool.make("echo", {
  description: "Echoes",
  parameters: Schema.Struct({ text: Schema.String }),
  call: ({ text }) => Effect.succeed(text)
})

/** A tool that says it started, then runs until interrupted, and says that too. */
const blocking = Effect.gen(function*() {
  const started = yield* Deferred.make<void>()
  const interrupted = yield* Deferred.make<void>()
  const tool = Tool.make("block", {
    description: "Blocks",
    parameters: Schema.Struct({}),
    call: () =>
      Deferred.succeed(started, undefined).pipe(
        Effect.andThen(Effect.never),
        Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
      )
  })
  return { tool, started, interrupted }
})

const blockThenAnswer = TestModel.layer([TestModel.toolCall("block", {}), TestModel.text("after")])

describe("Session lifecycle", () => {
  it.effect("abort right after a tool signals it started stops the run, and the next run works", () =>
    Effect.gen(function*() {
      const block = yield* blocking
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [block.tool] }))
      const run = yield* Effect.forkChild(Effect.flip(session.run("go")), { startImmediately: true })
      yield* Deferred.await(block.started)
      yield* session.abort
      yield* Deferred.await(block.interrupted)
      assert.strictEqual(reasonOf(yield* Fiber.join(run)), "RunAborted")
      assert.strictEqual((yield* session.run("again")).text, "after")
    }).pipe(Effect.provide(Layer.mergeAll(blockThenAnswer, Sandbox.layerNoop()))))

  it.effect("abort from a stream reader right after the ToolCall event stops the run", () =>
    Effect.gen(function*() {
      const block = yield* blocking
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [block.tool] }))
      const events = yield* Stream.runCollect(
        session.stream("go").pipe(Stream.tap((e) => (e._tag === "ToolCall" ? session.abort : Effect.void)))
      )
      assert.deepStrictEqual(events.map(label), ["AgentStart", "TurnStart", "TurnEnd", "ToolCall call_1", "AgentEnd aborted"])
      assert.deepStrictEqual((yield* session.history).at(-1), {
        _tag: "ToolResultMessage",
        callId: "call_1",
        name: "block",
        content: Session.ABORTED_RESULT,
        isError: true
      })
    }).pipe(Effect.provide(Layer.mergeAll(blockThenAnswer, Sandbox.layerNoop()))))

  it.effect("interrupting the caller right after the tool started aborts the run", () =>
    Effect.gen(function*() {
      const block = yield* blocking
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [block.tool] }))
      const run = yield* Effect.forkChild(session.run("go"), { startImmediately: true })
      yield* Deferred.await(block.started)
      yield* Fiber.interrupt(run)
      yield* Deferred.await(block.interrupted)
      assert.strictEqual((yield* session.run("again")).text, "after")
    }).pipe(Effect.provide(Layer.mergeAll(blockThenAnswer, Sandbox.layerNoop()))))

  it.effect("a session stopped mid-run ends that run with one AgentEnd, last, on the stream and on events", () =>
    Effect.gen(function*() {
      const block = yield* blocking
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [block.tool] }))
      const observed = yield* Effect.forkChild(Stream.runCollect(session.events), { startImmediately: true })
      const streamed = yield* Effect.forkChild(Stream.runCollect(session.stream("go")), { startImmediately: true })
      yield* Deferred.await(block.started)
      yield* session.stop
      const expected = ["AgentStart", "TurnStart", "TurnEnd", "ToolCall call_1", "AgentEnd aborted"]
      assert.deepStrictEqual((yield* Fiber.join(streamed)).map(label), expected)
      assert.deepStrictEqual((yield* Fiber.join(observed)).map(label), expected)
      assert.isTrue(Deferred.isDoneUnsafe(block.interrupted))
    }).pipe(Effect.provide(Layer.mergeAll(blockThenAnswer, Sandbox.layerNoop()))))

  it.effect("a crash closes the session's scope at once: its sandbox is released before the caller's scope ends", () =>
    Effect.gen(function*() {
      const released = yield* Deferred.make<Exit.Exit<unknown, unknown>>()
      const sandbox = Layer.effect(
        Sandbox.Sandbox,
        Effect.acquireRelease(Effect.succeed(Sandbox.makeNoop()), (_, exit) => Deferred.succeed(released, exit))
      )
      // The first request calls a tool (so the sandbox is built), the second one crashes.
      const crashing = Model.Model.of({
        name: "test:crashing",
        stream: (request) =>
          request.messages.at(-1)?._tag === "UserMessage"
            ? Stream.make({ _tag: "ToolCall", id: "e", name: "echo", input: { text: "x" } })
            : Stream.die(new Error("adapter bug"))
      })
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [Echo] }), { sandbox }).pipe(
        Effect.provideService(Model.Model, crashing)
      )
      assert.strictEqual(reasonOf(yield* Effect.flip(session.run("go"))), "SessionCrashed")
      const exit = yield* Deferred.await(released)
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual((yield* Effect.flip(session.join)).message, `Session ${session.id} crashed: adapter bug`)
      assert.strictEqual(reasonOf(yield* Effect.flip(session.run("again"))), "SessionStopped")
    }).pipe(Effect.provide(TestModel.layer([]))))

  it.effect("abort while the sandbox is being built releases what the build had acquired; the next run builds it again", () =>
    Effect.gen(function*() {
      const building = yield* Queue.unbounded<number>()
      const released = yield* Queue.unbounded<number>()
      let builds = 0
      // The first build acquires a resource, then waits forever; the second completes.
      const sandbox = Layer.effect(
        Sandbox.Sandbox,
        Effect.gen(function*() {
          const n = ++builds
          yield* Effect.acquireRelease(Queue.offer(building, n), () => Queue.offer(released, n))
          if (n === 1) return yield* Effect.never
          return Sandbox.makeNoop()
        })
      )
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [Echo] }), {
        sandbox,
        projectInstructions: false
      })
      const first = yield* Effect.forkChild(Effect.flip(session.run("echo")), { startImmediately: true })
      assert.strictEqual(yield* Queue.take(building), 1)
      yield* session.abort
      assert.strictEqual(reasonOf(yield* Fiber.join(first)), "RunAborted")
      assert.strictEqual(yield* Queue.take(released), 1)
      assert.strictEqual((yield* session.run("echo again")).text, "after")
      assert.strictEqual(yield* Queue.take(building), 2)
      yield* session.stop
      assert.strictEqual(yield* Queue.take(released), 2)
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.toolCall("echo", { text: "x" }),
      TestModel.toolCall("echo", { text: "y" }),
      TestModel.text("after")
    ]))))

  it.effect("a stream reader that stops early aborts its run, tools and all", () =>
    Effect.gen(function*() {
      const block = yield* blocking
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [block.tool] }))
      const observed = yield* Effect.forkChild(Stream.runCollect(session.events), { startImmediately: true })
      // The reader takes events up to the ToolCall, waits for the tool to be running, and leaves.
      const read = yield* Stream.runCollect(
        session.stream("go").pipe(
          Stream.tap((e) => (e._tag === "ToolCall" ? Deferred.await(block.started) : Effect.void)),
          Stream.takeUntil((e) => e._tag === "ToolCall")
        )
      )
      assert.deepStrictEqual(read.map(label), ["AgentStart", "TurnStart", "TurnEnd", "ToolCall call_1"])
      yield* Deferred.await(block.interrupted)
      assert.strictEqual((yield* session.run("again")).text, "after")
      yield* session.stop
      assert.deepStrictEqual((yield* Fiber.join(observed)).map(label).filter((l) => l.startsWith("AgentEnd")), [
        "AgentEnd aborted",
        "AgentEnd completed"
      ])
    }).pipe(Effect.provide(Layer.mergeAll(blockThenAnswer, Sandbox.layerNoop()))))

  it.effect("a stream reader that leaves while its run is queued drops the run: it never reaches the model", () =>
    Effect.gen(function*() {
      const block = yield* blocking
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [block.tool] }))
      const first = yield* Effect.forkChild(session.run("first"), { startImmediately: true })
      yield* Deferred.await(block.started)
      const queued = yield* Effect.forkChild(Stream.runCollect(session.stream("queued")), { startImmediately: true })
      yield* Fiber.interrupt(queued)
      yield* session.abort
      assert.isTrue(Exit.isFailure(yield* Fiber.await(first)))
      assert.strictEqual((yield* session.run("third")).text, "after")
      const requests = yield* (yield* TestModel.TestModel).requests
      assert.deepStrictEqual(requests.map((r) => r.messages.filter((m) => m._tag === "UserMessage").length), [1, 2])
    }).pipe(Effect.provide(Layer.mergeAll(blockThenAnswer, Sandbox.layerNoop()))))

  it.effect("a stream reader that never reads holds its run back instead of buffering it, and abort still works", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x" }))
      const gate = yield* Deferred.make<void>()
      const seen = yield* Deferred.make<void>()
      let observed = 0
      // An observer signals once the run has published 200 events; the stream's reader is stuck on
      // its first event meanwhile.
      yield* Effect.forkChild(
        Stream.runForEach(session.events, () => (++observed === 200 ? Deferred.succeed(seen, undefined) : Effect.void)),
        { startImmediately: true }
      )
      const streamed = yield* Effect.forkChild(
        Stream.runCollect(session.stream("talk").pipe(Stream.tap(() => Deferred.await(gate)))),
        { startImmediately: true }
      )
      yield* Deferred.await(seen)
      yield* session.abort
      yield* Deferred.succeed(gate, undefined)
      const events = yield* Fiber.join(streamed)
      assert.strictEqual(events.at(-1)?._tag === "AgentEnd" && events.at(-1)?._tag, "AgentEnd")
      assert.strictEqual(label(events.at(-1)!), "AgentEnd aborted")
      // 5,000 deltas were scripted; the run stopped a bounded distance ahead of its reader.
      assert.isBelow(events.length, 300)
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.text("x".repeat(5000), { chunkSize: 1 })]),
      Sandbox.layerNoop()
    ))))

  it.effect("an observer that never reads loses the oldest events, never slows the session", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x" }))
      const gate = yield* Deferred.make<void>()
      const stuck = yield* Effect.forkChild(
        Stream.runCollect(session.events.pipe(Stream.tap(() => Deferred.await(gate)))),
        { startImmediately: true }
      )
      const result = yield* session.run("talk")
      assert.strictEqual(result.text.length, 5000)
      yield* session.stop
      yield* Deferred.succeed(gate, undefined)
      const events = yield* Fiber.join(stuck)
      // 5,004 events were published; the observer kept what it held plus the newest 1,024.
      assert.isBelow(events.length, 1100)
      assert.strictEqual(label(events.at(-1)!), "AgentEnd completed")
      const tail = events.slice(-1024).map((e) => e.seq)
      assert.deepStrictEqual(tail, tail.map((_, i) => tail[0]! + i))
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.text("x".repeat(5000), { chunkSize: 1 })]),
      Sandbox.layerNoop()
    ))))

  it.effect("two tool calls with one id each get their own result, and the session goes on", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [Echo] }))
      const events = yield* Stream.runCollect(session.stream("twice"))
      assert.deepStrictEqual(
        events.flatMap((e) => (e._tag === "ToolResult" ? [`${e.callId}=${e.content}`] : [])),
        ["dup=a", "dup_2=b"]
      )
      assert.strictEqual(label(events.at(-1)!), "AgentEnd completed")
      const [, second] = yield* (yield* TestModel.TestModel).requests
      assert.deepStrictEqual(second!.messages.slice(1).map((m) =>
        m._tag === "AssistantMessage"
          ? m.parts.map((p) => (p._tag === "ToolCall" ? p.id : p._tag)).join(",")
          : m._tag === "ToolResultMessage"
          ? m.callId
          : m._tag
      ), ["dup,dup_2", "dup", "dup_2"])
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([
        TestModel.reply(TestModel.toolCall("echo", { text: "a" }, "dup"), TestModel.toolCall("echo", { text: "b" }, "dup")),
        TestModel.text("both")
      ]),
      Sandbox.layerNoop()
    ))))

  it.effect("run returns a RunResult: text, finish reason, usage summed over turns, turns and new messages", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", tools: [Echo] }))
      const result = yield* session.run("echo hi")
      assert.deepStrictEqual(result, {
        text: "said hi",
        finishReason: "stop",
        usage: { inputTokens: 20, outputTokens: 10 },
        turns: 2,
        messages: (yield* session.history).slice(1)
      })
      assert.deepStrictEqual(result.messages.map((m) => m._tag), ["AssistantMessage", "ToolResultMessage", "AssistantMessage"])
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.toolCall("echo", { text: "hi" }), TestModel.text("said hi")]),
      Sandbox.layerNoop()
    ))))

  it.effect("a reply's usage is the sum of its Usage parts, in TurnEnd and in the result", () =>
    Effect.gen(function*() {
      const split = Model.Model.of({
        name: "test:split-usage",
        stream: () =>
          Stream.make<Array<Model.Part>>(
            { _tag: "Usage", inputTokens: 100, outputTokens: 0 },
            { _tag: "TextDelta", text: "ok" },
            { _tag: "Usage", inputTokens: 0, outputTokens: 7 },
            { _tag: "Finish", reason: "length" }
          )
      })
      const session = yield* Session.start(Agent.make({ name: "a", model: "test:x" })).pipe(
        Effect.provideService(Model.Model, split)
      )
      const events = yield* Stream.runCollect(session.stream("go"))
      const turnEnd = events.find((e) => e._tag === "TurnEnd")
      assert.deepStrictEqual(turnEnd?._tag === "TurnEnd" && turnEnd.usage, { inputTokens: 100, outputTokens: 7 })
      const result = yield* session.run("again")
      assert.deepStrictEqual([result.usage, result.finishReason], [{ inputTokens: 100, outputTokens: 7 }, "length"])
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("model settings from the agent reach every request; a run's own settings win key by key", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "a", model: "test:x", modelOptions: { temperature: 0.2, maxTokens: 100 } })
      const session = yield* Session.start(agent)
      yield* session.run("default")
      yield* session.run("warmer", { modelOptions: { temperature: 0.9, stopSequences: ["END"] } })
      const requests = yield* (yield* TestModel.TestModel).requests
      assert.deepStrictEqual(requests.map((r) => r.options), [
        { temperature: 0.2, maxTokens: 100 },
        { temperature: 0.9, maxTokens: 100, stopSequences: ["END"] }
      ])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.text("a"), TestModel.text("b")]), Sandbox.layerNoop()))))

  it.effect("an agent with two tools of one name fails to start with a typed error, and nothing stays running", () =>
    Effect.gen(function*() {
      const released = yield* Deferred.make<void>()
      const sandbox = Layer.effect(
        Sandbox.Sandbox,
        Effect.acquireRelease(Effect.succeed(Sandbox.makeNoop()), () => Deferred.succeed(released, undefined))
      )
      const scope = yield* Scope.make()
      const agent = Agent.make({ name: "twins", model: "test:x", tools: [Echo, Echo] })
      const error = yield* Effect.flip(Session.start(agent, { sandbox }).pipe(Scope.provide(scope)))
      assert.strictEqual(error.message, "Two tools are named echo: tool names must be unique (rename one, or give a prefix)")
      assert.isFalse(Deferred.isDoneUnsafe(released)) // refused before anything was built
    }).pipe(Effect.provide(TestModel.layer([]))))
})

import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Schema, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Agent from "../src/Agent.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as Tool from "../src/Tool.ts"

/** What a run's failure says: its reason's tag, for a SessionError. */
const reasonOf = (error: Session.RunError) => (error._tag === "SessionError" ? error.reason._tag : error._tag)

const memorySandbox = (files: Record<string, string>) =>
  Sandbox.layer({
    cwd: "/work",
    readStream: (path) =>
      files[path] === undefined
        ? Stream.fail(new Sandbox.SandboxError({ method: "readStream", reason: new Sandbox.NotFound({ path }) }))
        : Stream.succeed(new TextEncoder().encode(files[path])),
    writeFile: () => Effect.void,
    exec: () => Effect.succeed({ output: "", exitCode: 0, truncated: false })
  })

const ReadFile = Tool.make("read_file", {
  description: "Reads a file",
  parameters: Schema.Struct({ path: Schema.String }),
  call: ({ path }, { sandbox }) => sandbox.read(path)
})

const Echo = Tool.make("echo", {
  description: "Echoes",
  parameters: Schema.Struct({ text: Schema.String }),
  call: ({ text }) => Effect.succeed(text)
})

describe("Session", () => {
  it.effect("streams a run's events in order: two tool calls in one message, then text", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "echoer", model: "test:x", tools: [Echo] })
      const session = yield* Session.start(agent, { id: "s1" })
      const events = yield* Stream.runCollect(session.stream("say a and b"))
      const runId = events[0]!.runId
      assert.isTrue(events.every((e) => e.sessionId === "s1" && e.runId === runId))
      assert.deepStrictEqual(events.map((e) => e.seq), events.map((_, i) => i))
      assert.deepStrictEqual(events.map((e) => {
        const { runId: _r, sessionId: _s, seq: _q, ...rest } = e
        return { ...rest }
      }), [
        { _tag: "AgentStart", prompt: "say a and b" },
        { _tag: "TurnStart", turn: 1 },
        { _tag: "TurnEnd", turn: 1, usage: { inputTokens: 10, outputTokens: 5 } },
        { _tag: "ToolCall", callId: "call_1", name: "echo", input: { text: "a" } },
        { _tag: "ToolCall", callId: "call_2", name: "echo", input: { text: "b" } },
        { _tag: "ToolResult", callId: "call_1", name: "echo", content: "a", isError: false },
        { _tag: "ToolResult", callId: "call_2", name: "echo", content: "b", isError: false },
        { _tag: "TurnStart", turn: 2 },
        { _tag: "TextDelta", text: "a and " },
        { _tag: "TextDelta", text: "b" },
        { _tag: "TurnEnd", turn: 2, usage: { inputTokens: 10, outputTokens: 5 } },
        { _tag: "AgentEnd", outcome: "completed" }
      ])
      const history = yield* session.history
      assert.deepStrictEqual(history.map((m) => m._tag), [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "ToolResultMessage",
        "AssistantMessage"
      ])
    }).pipe(
      Effect.provide(Layer.mergeAll(
        TestModel.layer([
          TestModel.reply(TestModel.toolCall("echo", { text: "a" }), TestModel.toolCall("echo", { text: "b" })),
          TestModel.text("a and b", { chunkSize: 6 })
        ]),
        memorySandbox({})
      ))
    ))

  it.effect("sends the system prompt, the history and the tool schemas to the model", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "a", model: "test:x", system: "Be terse.", tools: [Echo] })
      const session = yield* Session.start(agent)
      assert.strictEqual((yield* session.run("first")).text, "one")
      assert.strictEqual((yield* session.run("second")).text, "two")
      const requests = yield* (yield* TestModel.TestModel).requests
      assert.deepStrictEqual(requests.map((r) => [r.system, r.messages.length, r.tools.map((t) => t.name)]), [
        ["Be terse.", 1, ["echo"]],
        ["Be terse.", 3, ["echo"]]
      ])
      assert.deepStrictEqual(requests[1]!.tools[0]!.parameters, {
        type: "object",
        properties: { text: { type: "string" } },
        required: ["text"],
        additionalProperties: false
      })
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.text("one"), TestModel.text("two")]), memorySandbox({})))))

  it.effect("keeps assigns across turns and runs: remember then recall, seeds untouched, a counter", () =>
    Effect.gen(function*() {
      const Remember = Tool.make("remember", {
        description: "Remembers",
        parameters: Schema.Struct({ fact: Schema.String }),
        call: ({ fact }) => Effect.succeed(Tool.assign("ok", { fact }))
      })
      const Recall = Tool.make("recall", {
        description: "Recalls",
        parameters: Schema.Struct({}),
        call: (_, { assigns }) => Effect.succeed(`${assigns.tenant}: ${assigns.fact ?? "nothing"}`)
      })
      const Count = Tool.make("count", {
        description: "Counts",
        parameters: Schema.Struct({}),
        call: (_, { assigns }) => {
          const n = typeof assigns.count === "number" ? assigns.count + 1 : 1
          return Effect.succeed(Tool.assign(String(n), { count: n }))
        }
      })
      const agent = Agent.make({ name: "a", model: "test:x", tools: [Remember, Recall, Count, Echo] })
      const session = yield* Session.start(agent, { assigns: { tenant: "acme" } })
      yield* session.run("remember and recall")
      yield* session.run("count again")
      const results = (yield* session.history).filter((m) => m._tag === "ToolResultMessage").map((m) => m.content)
      assert.deepStrictEqual(results, ["ok", "acme: the sky is blue", "hi", "1", "2"])
      assert.deepStrictEqual(yield* session.assigns, { tenant: "acme", fact: "the sky is blue", count: 2 })
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([
        TestModel.toolCall("remember", { fact: "the sky is blue" }),
        TestModel.reply(TestModel.toolCall("recall", {}), TestModel.toolCall("echo", { text: "hi" })),
        TestModel.text("done"),
        TestModel.toolCall("count", {}),
        TestModel.toolCall("count", {}),
        TestModel.text("counted")
      ]),
      memorySandbox({})
    ))))

  it.effect("swapping the sandbox by Layer changes what a tool sees, with no change to the agent", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "reader", model: "test:x", tools: [ReadFile] })
      const read = (files: Record<string, string>) =>
        Effect.gen(function*() {
          const session = yield* Session.start(agent)
          yield* session.run("read it")
          return (yield* session.history).find((m) => m._tag === "ToolResultMessage")
        }).pipe(Effect.provide(Layer.mergeAll(
          TestModel.layer([TestModel.toolCall("read_file", { path: "a.txt" }), TestModel.text("read")]),
          memorySandbox(files)
        )))
      assert.strictEqual((yield* read({ "a.txt": "first sandbox" }))?.content, "first sandbox")
      assert.strictEqual((yield* read({ "a.txt": "second sandbox" }))?.content, "second sandbox")
      assert.strictEqual((yield* read({}))?.content, "Error: File not found: a.txt")
    }))

  it.effect("the sandbox option wins over a provided Sandbox: built by the first tool call, released when the session stops", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const own = Layer.unwrap(Effect.acquireRelease(
        Effect.sync(() => {
          log.push("built")
          return memorySandbox({ "a.txt": "own sandbox" })
        }),
        () => Effect.sync(() => log.push("released"))
      ))
      const agent = Agent.make({ name: "reader", model: "test:x", tools: [ReadFile] })
      const session = yield* Session.start(agent, { sandbox: own })
      assert.deepStrictEqual(log, [])
      yield* session.run("read")
      assert.deepStrictEqual(log, ["built"])
      assert.strictEqual((yield* session.history).find((m) => m._tag === "ToolResultMessage")?.content, "own sandbox")
      const events = yield* Effect.forkChild(Stream.runCollect(session.events), { startImmediately: true })
      yield* session.stop
      assert.deepStrictEqual(log, ["built", "released"])
      assert.strictEqual(reasonOf(yield* Effect.flip(session.run("again"))), "SessionStopped")
      assert.deepStrictEqual(yield* Fiber.join(events), [])
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.toolCall("read_file", { path: "a.txt" }), TestModel.text("read")]),
      memorySandbox({ "a.txt": "provided sandbox" })
    ))))

  it.effect("a run past maxTurns fails with MaxTurnsExceeded and the session stays usable", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "looper", model: "test:x", tools: [Echo], maxTurns: 2 })
      const session = yield* Session.start(agent)
      const error = yield* Effect.flip(session.run("loop"))
      assert.strictEqual(reasonOf(error), "MaxTurnsExceeded")
      assert.strictEqual(error.message, `Session ${session.id}: the run needed more than 2 model requests (raise maxTurns or simplify the task)`)
      assert.strictEqual((yield* session.run("again")).text, "fine")
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.toolCall("echo", { text: "1" }), TestModel.toolCall("echo", { text: "2" }), TestModel.text("fine")]),
      memorySandbox({})
    ))))

  it.effect("an unknown model prefix is a typed error naming the registered providers", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "a", model: "nope:model-1" })
      const error = yield* Effect.flip(Session.start(agent))
      assert.strictEqual(error._tag, "ModelError")
      assert.strictEqual(error.message, `No provider for model "nope:model-1" (expected "provider:model"; registered providers: anthropic, openai)`)
    }).pipe(
      Effect.provide(Layer.mergeAll(
        memorySandbox({}),
        Model.layerProviders({ openai: () => Effect.die("unused"), anthropic: () => Effect.die("unused") })
      ))
    ))

  it.effect("a session without any sandbox fails to start with SandboxInitFailed", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Session.start(Agent.make({ name: "lost", model: "test:x" })))
      assert.strictEqual(
        error.message,
        "Agent lost: the sandbox could not be built: no sandbox: pass the sandbox option, give the agent one, provide a Sandbox layer, or use Condukt.layer"
      )
    }).pipe(Effect.provide(TestModel.layer([]))))

  it.live("closing the program's scope releases 100 live sessions; only those that called a tool built a sandbox", () =>
    Effect.gen(function*() {
      let built = 0
      let released = 0
      const counted = Layer.unwrap(Effect.acquireRelease(
        Effect.sync(() => {
          built++
          return memorySandbox({})
        }),
        () => Effect.sync(() => released++)
      ))
      const agent = Agent.make({ name: "idle", model: "test:x", tools: [Echo], sandbox: counted })
      const scope = yield* Scope.make()
      const sessions = yield* Effect.forEach(
        Array.from({ length: 100 }, (_, i) => `session-${i}`),
        (id) => Session.start(agent, { id }),
        { concurrency: "unbounded" }
      ).pipe(Scope.provide(scope))
      assert.strictEqual(new Set(sessions.map((s) => s.id)).size, 100)
      assert.strictEqual(built, 0)
      for (const session of sessions.slice(0, 10)) yield* session.run("echo")
      assert.deepStrictEqual([built, released], [10, 0])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual([built, released], [10, 10])
      assert.strictEqual(reasonOf(yield* Effect.flip(sessions[42]!.run("hello"))), "SessionStopped")
    }).pipe(Effect.provide(TestModel.layer(Array.from({ length: 10 }, () => [TestModel.toolCall("echo", { text: "x" }), TestModel.text("ok")]).flat()))))

  it.effect("a tool that needs a service makes the session need it: a type error without, works with a Layer", () =>
    Effect.gen(function*() {
      class Database extends Context.Service<Database, { readonly query: (sql: string) => Effect.Effect<string> }>()(
        "test/Database"
      ) {}
      const Query = Tool.make("query", {
        description: "Runs SQL",
        parameters: Schema.Struct({ sql: Schema.String }),
        call: ({ sql }) => Effect.flatMap(Database, (db) => db.query(sql))
      })
      const agent = Agent.make({ name: "analyst", model: "test:x", tools: [Query] })
      const program = Effect.gen(function*() {
        const session = yield* Session.start(agent)
        yield* session.run("how many users?")
        return (yield* session.history).find((m) => m._tag === "ToolResultMessage")?.content
      })
      // @ts-expect-error the session needs Database, which nothing provides
      const unprovided: Effect.Effect<string | undefined, unknown, Scope.Scope> = program
      void unprovided
      const provided = program.pipe(
        Effect.provide(Layer.succeed(Database, Database.of({ query: (sql) => Effect.succeed(`42 rows for ${sql}`) })))
      )
      assert.strictEqual(yield* provided, "42 rows for SELECT count(*) FROM users")
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.toolCall("query", { sql: "SELECT count(*) FROM users" }), TestModel.text("42")]),
      memorySandbox({})
    ))))

  it.effect("abort during the model's stream ends the run as aborted, and the next run works", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "waiter", model: "test:x", tools: [Echo] })
      const session = yield* Session.start(agent)
      const turnStarted = yield* Deferred.make<void>()
      const events = yield* Effect.forkChild(
        Stream.runCollect(session.stream("slow").pipe(
          Stream.tap((e) => (e._tag === "TurnStart" ? Deferred.succeed(turnStarted, undefined) : Effect.void))
        )),
        { startImmediately: true }
      )
      // The model's reply is an hour away: the run is in the model's stream from TurnStart on.
      yield* Deferred.await(turnStarted)
      yield* session.abort
      assert.deepStrictEqual((yield* Fiber.join(events)).map((e) => e._tag === "AgentEnd" ? `AgentEnd ${e.outcome}` : e._tag), [
        "AgentStart",
        "TurnStart",
        "AgentEnd aborted"
      ])
      assert.strictEqual((yield* session.run("fast")).text, "quick")
      assert.deepStrictEqual((yield* session.history).map((m) => m._tag), ["UserMessage", "UserMessage", "AssistantMessage"])
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.delayed("1 hour", TestModel.text("too late")), TestModel.text("quick")]),
      memorySandbox({})
    ))))

  it.effect("runs queue in the mailbox and run one at a time, in order", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(Agent.make({ name: "queue", model: "test:x" }))
      const tags = yield* Effect.forkChild(
        Stream.runCollect(session.events.pipe(Stream.take(10))),
        { startImmediately: true }
      )
      const first = yield* Effect.forkChild(session.run("first"), { startImmediately: true })
      const second = yield* Effect.forkChild(session.run("second"), { startImmediately: true })
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual([(yield* Fiber.join(first)).text, (yield* Fiber.join(second)).text], ["slow", "fast"])
      const events = yield* Fiber.join(tags)
      assert.deepStrictEqual(
        events.map((e) => e._tag === "AgentStart" ? `start ${e.prompt}` : e._tag === "AgentEnd" ? "end" : e._tag),
        ["start first", "TurnStart", "TextDelta", "TurnEnd", "end", "start second", "TurnStart", "TextDelta", "TurnEnd", "end"]
      )
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.delayed("1 second", TestModel.text("slow")), TestModel.text("fast")]),
      memorySandbox({})
    ))))

  it.effect("the caller owns its run: a timeout on run aborts it, and drops a run still queued", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(Agent.make({ name: "owned", model: "test:x" }))
      const outcomes = yield* Effect.forkChild(
        Stream.runCollect(session.events.pipe(
          Stream.filter((e) => e._tag === "AgentStart" || e._tag === "AgentEnd"),
          Stream.take(4)
        )),
        { startImmediately: true }
      )
      const slow = yield* Effect.forkChild(session.run("slow").pipe(Effect.timeout("1 second")), { startImmediately: true })
      const queued = yield* Effect.forkChild(session.run("queued").pipe(Effect.timeout("500 millis")), { startImmediately: true })
      yield* TestClock.adjust("500 millis")
      assert.strictEqual((yield* Effect.flip(Fiber.join(queued)))._tag, "TimeoutError")
      yield* TestClock.adjust("500 millis")
      assert.strictEqual((yield* Effect.flip(Fiber.join(slow)))._tag, "TimeoutError")
      assert.strictEqual((yield* session.run("next")).text, "answered")
      const requests = yield* (yield* TestModel.TestModel).requests
      assert.deepStrictEqual(requests.map((r) => r.messages.filter((m) => m._tag === "UserMessage").length), [1, 2])
      assert.deepStrictEqual(
        (yield* Fiber.join(outcomes)).map((e) => e._tag === "AgentStart" ? `start ${e.prompt}` : e._tag === "AgentEnd" ? e.outcome : ""),
        ["start slow", "aborted", "start next", "completed"]
      )
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.delayed("1 hour", TestModel.text("never")), TestModel.text("answered")]),
      memorySandbox({})
    ))))
})

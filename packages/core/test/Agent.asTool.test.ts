/**
 * Sub-agents (`Agent.asTool`) on scripted models: the child's answer is the parent's tool result;
 * the child's events reach the parent's stream in order, tagged with their agent path (the
 * parent's own untagged); the child's tokens join the parent run's usage, by agent and at the
 * program's prices; a child whose model fails is an error result and the parent goes on; a typed
 * answer and a custom input; the depth and concurrency bounds are error results for the model; a
 * child redacts its caller's secrets with its own, a name both declare with other values included.
 * Processes, MCP servers and spans: test/sub-agents.test.ts and test/genai-spans.test.ts.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Result, Schema, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Executor from "../src/Executor.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Secret from "../src/Secret.ts"
import * as Session from "../src/Session.ts"
import type * as SessionEvent from "../src/SessionEvent.ts"
import * as Tool from "../src/Tool.ts"
import * as Usage from "../src/Usage.ts"

const researcher = Agent.make({ name: "researcher", model: "child:x", system: "You research." })
const Research = Agent.asTool(researcher, { description: "Researches a question" })
const main = Agent.make({ name: "main", model: "parent:x", tools: [Research] })

/** Each agent its own scripted model, through the provider registry. */
const models = (parent: ReadonlyArray<TestModel.Reply>, child: ReadonlyArray<TestModel.Reply>) =>
  Layer.unwrap(Effect.gen(function*() {
    const p = yield* TestModel.make(parent, { name: "parent:x" })
    const c = yield* TestModel.make(child, { name: "child:x" })
    return Layer.mergeAll(
      Model.layerProviders({ parent: () => Effect.succeed(p.model), child: () => Effect.succeed(c.model) }),
      Sandbox.layerNoop()
    )
  }))

/** An event as a short line: its tag, the agent path for a sub-agent's, and what it says. */
const line = (event: SessionEvent.SessionEvent): string => {
  const who = event.agentPath === undefined ? "" : `${event.agentPath.join("/")} `
  switch (event._tag) {
    case "TextDelta":
      return `${who}TextDelta ${event.text}`
    case "ToolCall":
      return `${who}ToolCall ${event.name}`
    case "ToolResult":
      return `${who}ToolResult ${event.name} ${event.content}`
    case "AgentEnd":
      return `${who}AgentEnd ${event.outcome}`
    default:
      return `${who}${event._tag}`
  }
}

/**
 * A run of main whose sub-agent calls a sub-agent of its own, both tools with `bounds`: the
 * ToolResults of the stream, by agent path.
 */
const nested = (bounds: { readonly maxDepth?: number; readonly maxConcurrent?: number }) =>
  Effect.gen(function*() {
    const inner: Agent.Agent = Agent.make({ name: "researcher", model: "child:x", tools: [Agent.asTool(researcher, { description: "Itself", ...bounds })] })
    const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [Agent.asTool(inner, { description: "Researches", ...bounds })] }))
    const events = Array.from(yield* Stream.runCollect(session.stream("Find out")))
    return events.flatMap((e) => (e._tag === "ToolResult" ? [[e.agentPath?.join("/") ?? "", e.content]] : []))
  })

const nestedModels = models(
  [TestModel.toolCall("researcher", { prompt: "Go" }), TestModel.text("Done")],
  [TestModel.toolCall("researcher", { prompt: "Help" }), TestModel.text("On my own")]
)

describe("Agent.asTool", () => {
  it.effect("the child's answer is the call's result, its events in the parent's stream in order and tagged, its tokens in the parent's result", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(main)
      const events = Array.from(yield* Stream.runCollect(session.stream("Find out")))
      assert.deepStrictEqual(events.map(line), [
        "AgentStart",
        "TurnStart",
        "TurnEnd",
        "ToolCall researcher",
        "main/researcher AgentStart",
        "main/researcher TurnStart",
        "main/researcher TextDelta It is 42",
        "main/researcher TurnEnd",
        "main/researcher AgentEnd completed",
        "ToolResult researcher It is 42",
        "TurnStart",
        "TextDelta Done",
        "TurnEnd",
        "AgentEnd completed"
      ])
      const child = events.filter((e) => e.agentPath !== undefined)
      const own = events.filter((e) => e.agentPath === undefined)
      // Each as its session numbered it: the child's in its own session and run, in order.
      assert.strictEqual(new Set(child.map((e) => e.sessionId)).size, 1)
      assert.notStrictEqual(child[0]!.sessionId, session.id)
      assert.deepStrictEqual(child.map((e) => e.seq), child.map((_, i) => child[0]!.seq + i))
      assert.deepStrictEqual(own.map((e) => e.seq), own.map((_, i) => own[0]!.seq + i))
      assert.isTrue(child.every((e) => e.agentPath!.join("/") === "main/researcher"))
    }).pipe(Effect.provide(models(
      [TestModel.toolCall("researcher", { prompt: "What is it?" }), TestModel.text("Done")],
      [TestModel.text("It is 42")]
    ))))

  it.effect("the run's usage is its own and its sub-agents' summed, kept by agent, its cost at each model's price", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(main)
      const result = yield* session.run("Find out")
      // Parent: two replies of 10 + 5; the child: three (two calls of one reply, then one more).
      assert.deepStrictEqual(result.usage, { inputTokens: 50, outputTokens: 25 })
      assert.deepStrictEqual(result.byAgent, {
        main: { inputTokens: 20, outputTokens: 10 },
        "main/researcher": { inputTokens: 30, outputTokens: 15 }
      })
      assert.strictEqual(result.cost, 20 * 1 + 10 * 2 + 30 * 3 + 15 * 4)
      // The session's own usage is its own model's replies.
      assert.deepStrictEqual(yield* session.usage, { inputTokens: 20, outputTokens: 10 })
    }).pipe(Effect.provide(Layer.mergeAll(
      models(
        [TestModel.reply(TestModel.toolCall("researcher", { prompt: "one" }), TestModel.toolCall("researcher", { prompt: "two" })), TestModel.text("Done")],
        [TestModel.text("first"), TestModel.toolCall("missing", {}), TestModel.text("second")]
      ),
      Layer.succeed(Usage.Prices, {
        "parent:x": { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 },
        "child:x": { inputPerMillion: 3_000_000, outputPerMillion: 4_000_000 }
      })
    ))))

  it.effect("a child whose model fails is an error result the parent's model reads, and the parent goes on", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(main)
      const result = yield* session.run("Find out")
      assert.strictEqual(result.text, "Recovered")
      const results = result.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [[m.content, m.isError]] : []))
      assert.deepStrictEqual(results, [["Error: Sub-agent researcher failed: overloaded", true]])
    }).pipe(Effect.provide(models(
      [TestModel.toolCall("researcher", { prompt: "What?" }), TestModel.text("Recovered")],
      [TestModel.error("overloaded")]
    ))))

  it.effect("a typed answer is the result's JSON, a custom input the child's prompt as JSON", () =>
    Effect.gen(function*() {
      const Finding = Schema.Struct({ answer: Schema.Int })
      const typed = Agent.asTool(researcher, {
        description: "Researches a topic",
        input: Schema.Struct({ topic: Schema.String, depth: Schema.Int }),
        output: Finding
      })
      const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [typed] }))
      const events = Array.from(yield* Stream.runCollect(session.stream("Find out")))
      const prompts = events.flatMap((e) => (e._tag === "AgentStart" ? [[e.agentPath?.join("/") ?? "", e.prompt]] : []))
      assert.deepStrictEqual(prompts, [["", "Find out"], ["main/researcher", "{\"topic\":\"life\",\"depth\":2}"]])
      const results = events.flatMap((e) => (e._tag === "ToolResult" && e.agentPath === undefined ? [[e.content, e.data]] : []))
      assert.deepStrictEqual(results, [["{\"answer\":42}", { answer: 42 }]])
    }).pipe(Effect.provide(models(
      [TestModel.toolCall("researcher", { topic: "life", depth: 2 }), TestModel.text("Done")],
      [TestModel.toolCall("submit", { answer: 42 })]
    ))))

  it.effect("a reader that leaves the parent's stream while the child runs ends both runs, aborted", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(main)
      // The reader leaves once the child asked its model, which never answers (the test clock stands still).
      const seen = yield* session.stream("Find out").pipe(
        Stream.takeUntil((e) => e._tag === "TurnStart" && e.agentPath !== undefined),
        Stream.runCollect
      )
      assert.strictEqual(Array.from(seen).at(-1)!.agentPath?.join("/"), "main/researcher")
      // The session goes on; its model read that the call was cut short.
      assert.strictEqual((yield* session.run("Again")).text, "Fine")
      const calls = (yield* session.history).flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))
      assert.deepStrictEqual(calls, [Session.ABORTED_RESULT])
    }).pipe(Effect.provide(models(
      [TestModel.toolCall("researcher", { prompt: "What?" }), TestModel.text("Fine")],
      [TestModel.delayed("1 hour", TestModel.text("Too late"))]
    ))))

  it.effect("a child redacts its caller's secrets with its own, a name both declare with other values too; its tools receive its own only", () =>
    Effect.gen(function*() {
      const ours = "parent-7f2e9c41"
      const theirs = "child-3b8d0a56"
      const received: Array<string> = []
      const peek = Tool.make("peek", {
        description: "Reads the token it was given",
        parameters: Schema.Struct({}),
        call: (_, { secrets }) => Effect.sync(() => received.push(Redacted.value(secrets["TOKEN"]!))).pipe(Effect.as("seen"))
      })
      const child = Agent.make({ name: "researcher", model: "child:x", tools: [peek], secrets: { TOKEN: Secret.static(theirs) } })
      const parent = Agent.make({ name: "main", model: "parent:x", tools: [Agent.asTool(child, { description: "Researches" })], secrets: { TOKEN: Secret.static(ours) } })
      const p = yield* TestModel.make([TestModel.toolCall("researcher", { prompt: `use ${ours}` }), TestModel.text("Done")], { name: "parent:x" })
      const c = yield* TestModel.make([TestModel.toolCall("peek", {}), TestModel.text(`both ${ours} ${theirs}`)], { name: "child:x" })
      const events = yield* Effect.gen(function*() {
        const session = yield* Session.start(parent)
        return Array.from(yield* Stream.runCollect(session.stream("Go")))
      }).pipe(
        Effect.scoped,
        Effect.provide(Layer.merge(Model.layerProviders({ parent: () => Effect.succeed(p.model), child: () => Effect.succeed(c.model) }), Sandbox.layerNoop()))
      )
      const sent = yield* c.recorder.requests
      assert.deepStrictEqual(sent[0]!.messages, [{ _tag: "UserMessage", content: "use [REDACTED:TOKEN]" }])
      const said = events.flatMap((e) => (e._tag === "TextDelta" && e.agentPath !== undefined ? [e.text] : [])).join("")
      assert.strictEqual(said, "both [REDACTED:TOKEN] [REDACTED:TOKEN]")
      assert.deepStrictEqual(received, [theirs])
      const seen = JSON.stringify({ events, sent, parent: yield* p.recorder.requests })
      assert.notInclude(seen, ours)
      assert.notInclude(seen, theirs)
    }))

  it.effect("a sub-agent's events name the call that started it (parentCallId), a grandchild's its parent's call, the session's own none", () =>
    Effect.gen(function*() {
      const inner: Agent.Agent = Agent.make({ name: "researcher", model: "child:x", tools: [Agent.asTool(researcher, { description: "Itself" })] })
      const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [Agent.asTool(inner, { description: "Researches" })] }))
      const events = Array.from(yield* Stream.runCollect(session.stream("Find out")))
      const calls = events.flatMap((e) => (e._tag === "ToolCall" ? [[e.agentPath?.join("/") ?? "", e.callId]] : []))
      assert.deepStrictEqual(calls, [["", "call-top"], ["main/researcher", "call-inner"]])
      const parents = new Map<string, Set<string | undefined>>()
      for (const e of events) {
        const path = e.agentPath?.join("/") ?? ""
        parents.set(path, (parents.get(path) ?? new Set()).add(e.parentCallId))
      }
      assert.deepStrictEqual(Object.fromEntries(Array.from(parents, ([path, ids]) => [path, Array.from(ids)])), {
        "": [undefined],
        "main/researcher": ["call-top"],
        "main/researcher/researcher": ["call-inner"]
      })
    }).pipe(Effect.provide(models(
      [TestModel.toolCall("researcher", { prompt: "Go" }, "call-top"), TestModel.text("Done")],
      [TestModel.toolCall("researcher", { prompt: "Help" }, "call-inner"), TestModel.text("Deep answer"), TestModel.text("On my own")]
    ))))

  it.effect("a call deeper than maxDepth is an error result, and the child that made it goes on", () =>
    Effect.gen(function*() {
      // main > researcher > researcher is depth 2: the tool allows 1.
      assert.deepStrictEqual(yield* nested({ maxDepth: 1 }), [
        ["main/researcher", "Error: Sub-agent researcher was not started: sub-agents may nest 1 deep at most; do this task yourself"],
        ["", "On my own"]
      ])
    }).pipe(Effect.provide(nestedModels)))

  it.effect("a call while maxConcurrent sub-agents run under the top-level run is an error result", () =>
    Effect.gen(function*() {
      // The child runs (one of one allowed) while it calls a sub-agent of its own.
      assert.deepStrictEqual(yield* nested({ maxConcurrent: 1 }), [
        ["main/researcher", "Error: Sub-agent researcher was not started: 1 sub-agents are running, the most at once; call it again once one has answered"],
        ["", "On my own"]
      ])
    }).pipe(Effect.provide(nestedModels)))

  it.effect("outside a session (an executor of its own), a call is an error result", () =>
    Effect.gen(function*() {
      const executor = Result.getOrThrow(Executor.make([Research]))
      const sandbox = yield* Sandbox.Sandbox
      const outcome = yield* executor.run([{ id: "c1", name: "researcher", input: { prompt: "Hi" } }], {
        sessionId: "s",
        agent: "main",
        sandbox,
        cwd: sandbox.cwd,
        secrets: {}
      }, {})
      assert.deepStrictEqual(outcome.results, [{ callId: "c1", name: "researcher", content: "Error: Sub-agent researcher can only run inside a session", isError: true }])
    }).pipe(Effect.provide(Sandbox.layerNoop())))
})

/**
 * Sub-agents' limits as a session meets them, with the defaults (`Agent.DEFAULT_MAX_DEPTH`,
 * `Agent.DEFAULT_MAX_CONCURRENT`): a 4th level is refused with its text and the agent that asked
 * goes on; 8 children run at once under one run and a 9th is refused; a 9th call of one message
 * waits for one of the agent's 8 tool slots and then runs; siblings run at the same time; several
 * children failing are each reported and the parent goes on; and children that failed give their
 * places back, so 8 more run at once after them. Bounds set per tool: Agent.asTool.test.ts.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Queue, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as History from "../src/History.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"

/**
 * A child's model that holds every child until `opensAt` of them have asked it: each request
 * tells `started` the child's prompt, then waits for the gate, then answers `answer to <prompt>`.
 * With `opensAt` children running at once it answers them all; with fewer it never opens.
 */
const gated = (opensAt: number) =>
  Effect.gen(function*() {
    const started = yield* Queue.unbounded<string>()
    const open = yield* Deferred.make<void>()
    let asked = 0
    const model = Model.Model.of({
      name: "gate:x",
      stream: (request) =>
        Stream.unwrap(Effect.gen(function*() {
          const first = History.toArray(request.messages)[0]
          const prompt = first?._tag === "UserMessage" ? first.content : "?"
          yield* Queue.offer(started, prompt)
          if (++asked >= opensAt) yield* Deferred.succeed(open, undefined)
          yield* Deferred.await(open)
          return Stream.fromIterable<Model.Part>([
            { _tag: "TextDelta", text: `answer to ${prompt}` },
            { _tag: "Finish", reason: "stop" }
          ])
        }))
    })
    return { model, started }
  })

const worker = Agent.make({ name: "worker", model: "gate:x" })
const Work = Agent.asTool(worker, { description: "Works on a task" })

/** `n` calls of `tool` in one reply, prompts `task 1`…`task n`, ids `<id>1`…`<id>n`. */
const calls = (tool: string, n: number, id = "w") =>
  TestModel.reply(...Array.from({ length: n }, (_, i) => TestModel.toolCall(tool, { prompt: `task ${i + 1}` }, `${id}${i + 1}`)))

/** The parent's model scripted, the gated children's, and a scripted model for children that fail. */
const models = (parent: ReadonlyArray<TestModel.Reply>, opensAt: number, failing: ReadonlyArray<TestModel.Reply> = []) =>
  Effect.gen(function*() {
    const p = yield* TestModel.make(parent, { name: "parent:x" })
    const f = yield* TestModel.make(failing, { name: "fail:x" })
    const gate = yield* gated(opensAt)
    const layer = Layer.mergeAll(
      Model.layerProviders({ parent: () => Effect.succeed(p.model), gate: () => Effect.succeed(gate.model), fail: () => Effect.succeed(f.model) }),
      Sandbox.layerNoop()
    )
    return { layer, started: gate.started }
  })

/** The run's tool results, as [agent path, content] in the order the stream gave them. */
const resultsOf = (session: Session.Session, prompt: string) =>
  Effect.map(Stream.runCollect(session.stream(prompt)), (events) =>
    Array.from(events).flatMap((e) => (e._tag === "ToolResult" ? [[e.agentPath?.join("/") ?? "", e.callId, e.content]] : [])))

const answered = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => ["", `w${from + i}`, `answer to task ${from + i}`])

const tooMany = "Error: Sub-agent worker was not started: 8 sub-agents are running, the most at once; call it again once one has answered"

describe("Agent.asTool limits", () => {
  it.effect("sub-agents nest 3 deep by default: a call at the 4th level is an error result with its text, and the agent that made it goes on", () =>
    Effect.gen(function*() {
      const d = Agent.make({ name: "d", model: "child:x" })
      const c = Agent.make({ name: "c", model: "child:x", tools: [Agent.asTool(d, { description: "Level 4" })] })
      const b = Agent.make({ name: "b", model: "child:x", tools: [Agent.asTool(c, { description: "Level 3" })] })
      const a = Agent.make({ name: "a", model: "child:x", tools: [Agent.asTool(b, { description: "Level 2" })] })
      const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [Agent.asTool(a, { description: "Level 1" })] }))
      assert.deepStrictEqual(yield* resultsOf(session, "Go down"), [
        ["main/a/b/c", "call-d", "Error: Sub-agent d was not started: sub-agents may nest 3 deep at most; do this task yourself"],
        ["main/a/b", "call-c", "c did it"],
        ["main/a", "call-b", "b did it"],
        ["", "call-a", "a did it"]
      ])
    }).pipe(Effect.provide(Layer.unwrap(Effect.gen(function*() {
      const p = yield* TestModel.make([TestModel.toolCall("a", { prompt: "1" }, "call-a"), TestModel.text("Done")], { name: "parent:x" })
      // One model for the three levels, asked in turn: each calls the next level down, then answers.
      const child = yield* TestModel.make([
        TestModel.toolCall("b", { prompt: "2" }, "call-b"),
        TestModel.toolCall("c", { prompt: "3" }, "call-c"),
        TestModel.toolCall("d", { prompt: "4" }, "call-d"),
        TestModel.text("c did it"),
        TestModel.text("b did it"),
        TestModel.text("a did it")
      ], { name: "child:x" })
      return Layer.mergeAll(
        Model.layerProviders({ parent: () => Effect.succeed(p.model), child: () => Effect.succeed(child.model) }),
        Sandbox.layerNoop()
      )
    })))))

  it.effect("eight sub-agents run at once by default: the ninth call of a message while they run is an error result with its text", () =>
    Effect.gen(function*() {
      const { layer, started } = yield* models([calls("worker", 9), TestModel.text("Done")], 8)
      const results = yield* Effect.gen(function*() {
        // Nine tool slots, so only the sub-agents' bound holds the ninth back.
        const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [Work], toolConcurrency: 9 }))
        return yield* resultsOf(session, "Nine tasks")
      }).pipe(Effect.scoped, Effect.provide(layer))
      assert.deepStrictEqual(results, [...answered(1, 8), ["", "w9", tooMany]])
      assert.deepStrictEqual((yield* Queue.clear(started)).toSorted(), answered(1, 8).map(([, , text]) => text!.slice("answer to ".length)).toSorted())
    }))

  it.effect("a ninth sub-agent call of one message waits for one of the agent's 8 tool slots, and runs once a child has answered", () =>
    Effect.gen(function*() {
      const { layer, started } = yield* models([calls("worker", 9), TestModel.text("Done")], 8)
      const results = yield* Effect.gen(function*() {
        const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [Work] }))
        return yield* resultsOf(session, "Nine tasks")
      }).pipe(Effect.scoped, Effect.provide(layer))
      assert.deepStrictEqual(results, answered(1, 9))
      // The eight first held each other until all eight had started: the ninth started after them.
      const order = yield* Queue.clear(started)
      assert.deepStrictEqual([order.slice(0, 8).toSorted(), order.slice(8)], [
        Array.from({ length: 8 }, (_, i) => `task ${i + 1}`).toSorted(),
        ["task 9"]
      ])
    }))

  it.effect("sibling sub-agents of one message run at the same time: both have started before either answers", () =>
    Effect.gen(function*() {
      // The gate opens only once both children wait at it.
      const { layer, started } = yield* models([calls("worker", 2), TestModel.text("Done")], 2)
      const results = yield* Effect.gen(function*() {
        const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [Work] }))
        return yield* resultsOf(session, "Two tasks")
      }).pipe(Effect.scoped, Effect.provide(layer))
      assert.deepStrictEqual(results, answered(1, 2))
      assert.deepStrictEqual((yield* Queue.clear(started)).toSorted(), ["task 1", "task 2"])
    }))

  it.effect("two children failing are each reported to the parent's model, which goes on", () =>
    Effect.gen(function*() {
      const alpha = Agent.asTool(Agent.make({ name: "alpha", model: "fail:x" }), { description: "Alpha" })
      const beta = Agent.asTool(Agent.make({ name: "beta", model: "fail:y" }), { description: "Beta" })
      const p = yield* TestModel.make([
        TestModel.reply(TestModel.toolCall("alpha", { prompt: "a" }, "c1"), TestModel.toolCall("beta", { prompt: "b" }, "c2")),
        TestModel.text("Both failed; I will do it myself")
      ], { name: "parent:x" })
      const x = yield* TestModel.make([TestModel.error("alpha is overloaded")], { name: "fail:x" })
      const y = yield* TestModel.make([TestModel.error("beta ran out of credit")], { name: "fail:y" })
      const result = yield* Effect.gen(function*() {
        const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [alpha, beta] }))
        return yield* session.run("Two tasks")
      }).pipe(
        Effect.scoped,
        Effect.provide(Layer.mergeAll(
          Model.layerProviders({ parent: () => Effect.succeed(p.model), fail: (model) => Effect.succeed(model === "x" ? x.model : y.model) }),
          Sandbox.layerNoop()
        ))
      )
      assert.strictEqual(result.text, "Both failed; I will do it myself")
      const read = (yield* p.recorder.requests)[1]!.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [[m.callId, m.content, m.isError]] : []))
      assert.deepStrictEqual(read, [
        ["c1", "Error: Sub-agent alpha failed: alpha is overloaded", true],
        ["c2", "Error: Sub-agent beta failed: beta ran out of credit", true]
      ])
    }))

  it.effect("children that failed give their places back: after eight failed, eight more run at once", () =>
    Effect.gen(function*() {
      const failer = Agent.asTool(Agent.make({ name: "failer", model: "fail:x" }), { description: "Fails" })
      const { layer, started } = yield* models(
        [calls("failer", 8, "f"), calls("worker", 8), TestModel.text("Done")],
        8,
        Array.from({ length: 8 }, () => TestModel.error("down"))
      )
      const results = yield* Effect.gen(function*() {
        const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [failer, Work] }))
        return yield* resultsOf(session, "Try twice")
      }).pipe(Effect.scoped, Effect.provide(layer))
      assert.deepStrictEqual(results, [
        ...Array.from({ length: 8 }, (_, i) => ["", `f${i + 1}`, "Error: Sub-agent failer failed: down"]),
        ...answered(1, 8)
      ])
      assert.strictEqual((yield* Queue.clear(started)).length, 8)
    }))
})

/**
 * Compaction at session level, where it goes wrong: a compactor that fails after a run is logged
 * and the session's history kept (saved whole, no Compacted event, the run completed); a
 * compaction on demand that fails is the caller's typed error and keeps the history too; and a
 * compaction whose history a run moved while it worked is dropped, the run's history kept.
 * The sizes of a compaction that succeeds and its save: Session.store.test.ts.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Logger, Option, Queue, Schema, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Compactor from "../src/Compactor.ts"
import * as Message from "../src/Message.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as SessionStore from "../src/SessionStore.ts"
import * as Tool from "../src/Tool.ts"

const Echo = Tool.make("echo", {
  description: "Echoes",
  parameters: Schema.Struct({ text: Schema.String }),
  call: ({ text }) => Effect.succeed(text)
})

const agent = Agent.make({ name: "echoer", model: "test:x", system: "Echo things.", tools: [Echo] })

const echoTurn = (n: number) => [TestModel.toolCall("echo", { text: `t${n}` }, `c${n}`), TestModel.text(`done ${n}`)]

/** The four messages a run of `echoTurn(n)` adds to the history. */
const echoed = (n: number, prompt: string): ReadonlyArray<Message.Message> => [
  Message.user(prompt),
  Message.assistant([Message.toolCallPart({ id: `c${n}`, name: "echo", input: { text: `t${n}` } })]),
  Message.toolResult({ callId: `c${n}`, name: "echo", content: `t${n}`, isError: false }),
  Message.assistant([Message.textPart(`done ${n}`)])
]

/** A logger keeping each message's level and text, and its layer. */
const capturedLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    lines.push(`${logLevel}: ${(Array.isArray(message) ? message : [message]).join(" ")}`)
  })
  return { lines, layer: Logger.layer([logger]) }
}

const failing: Compactor.Service = {
  compact: () => Effect.fail(new Compactor.CompactorError({ reason: new Compactor.Failed({ description: "the summariser is down" }) }))
}

describe("Session compaction", () => {
  const logs = capturedLogs()

  it.effect("a compactor that fails after a run is logged, and the run completes with the whole history kept and saved", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      const session = yield* Session.start(agent, { id: "s1", store, compactor: failing })
      const events = Array.from(yield* Stream.runCollect(session.stream("one")))
      assert.deepStrictEqual(events.map((e) => e._tag), [
        "AgentStart",
        "TurnStart",
        "TurnEnd",
        "ToolCall",
        "ToolResult",
        "TurnStart",
        "TextDelta",
        "TurnEnd",
        "AgentEnd"
      ])
      const end = events.at(-1)!
      assert.strictEqual(end._tag === "AgentEnd" ? end.outcome : undefined, "completed")
      assert.deepStrictEqual(yield* session.history, echoed(1, "one"))
      assert.deepStrictEqual(Option.map(yield* store.load("s1"), (s) => s.messages), Option.some(echoed(1, "one")))
      assert.deepStrictEqual(logs.lines, ["Warn: Session s1: Compaction failed: the summariser is down"])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer(echoTurn(1)), Sandbox.layerNoop(), logs.layer))))

  it.effect("a compaction on demand that fails is the caller's typed error, and the history stays as it was", () =>
    Effect.gen(function*() {
      let failures = 0
      const failsOnDemand: Compactor.Service = {
        // The compaction after the run has nothing to do; the one asked for fails.
        compact: (messages) => failures++ === 0 ? Effect.succeed(messages) : failing.compact(messages)
      }
      const session = yield* Session.start(agent, { id: "s1", compactor: failsOnDemand })
      yield* session.run("one")
      const error = yield* Effect.flip(session.compact)
      assert.deepStrictEqual(error, new Compactor.CompactorError({ reason: new Compactor.Failed({ description: "the summariser is down" }) }))
      assert.deepStrictEqual(yield* session.history, echoed(1, "one"))
      assert.strictEqual(failures, 2)
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer(echoTurn(1)), Sandbox.layerNoop()))))

  it.effect("a compaction whose history a run moved while it worked is dropped: the history is the run's, saved, and no Compacted event", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      // The sizes each compaction was given; the second (on demand) waits for `release`.
      const given = yield* Queue.unbounded<number>()
      const release = yield* Deferred.make<void>()
      let calls = 0
      const compactor: Compactor.Service = {
        compact: (messages) =>
          Effect.gen(function*() {
            yield* Queue.offer(given, messages.length)
            if (++calls !== 2) return messages
            yield* Deferred.await(release)
            return [Message.user("Summary of the earlier conversation:\n\nall done")]
          })
      }
      const session = yield* Session.start(agent, { id: "s1", store, compactor })
      yield* session.run("one")
      assert.strictEqual(yield* Queue.take(given), 4)
      const observed = yield* Queue.unbounded<string>()
      yield* Stream.runForEach(session.events, (event) => Queue.offer(observed, event._tag)).pipe(Effect.forkScoped({ startImmediately: true }))
      const compacting = yield* Effect.forkScoped(session.compact, { startImmediately: true })
      // The compaction has the four messages of the first run, and waits.
      assert.strictEqual(yield* Queue.take(given), 4)
      const second = yield* session.run("two")
      assert.strictEqual(second.text, "done 2")
      assert.strictEqual(yield* Queue.take(given), 8)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(compacting)
      const history = [...echoed(1, "one"), ...echoed(2, "two")]
      assert.deepStrictEqual(yield* session.history, history)
      assert.deepStrictEqual(Option.map(yield* store.load("s1"), (s) => s.messages), Option.some(history))
      // What observers saw up to the end of a third run: the second run, then the third, no compaction between.
      yield* session.run("three")
      const seen: Array<string> = []
      while (seen.filter((tag) => tag === "AgentEnd").length < 2) {
        const tag = yield* Queue.take(observed)
        if (tag === "Compacted" || tag === "AgentStart" || tag === "AgentEnd") seen.push(tag)
      }
      assert.deepStrictEqual(seen, ["AgentStart", "AgentEnd", "AgentStart", "AgentEnd"])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([...echoTurn(1), ...echoTurn(2), TestModel.text("done 3")]), Sandbox.layerNoop()))))
})

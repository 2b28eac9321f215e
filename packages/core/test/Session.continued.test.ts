/**
 * A run continued after a restart (a batch waiting for approval, answered in a new process) asks
 * the model as the run that started it did: the batch's save keeps where the run stood and its
 * settings (`Snapshot.Run`), and the run that goes on takes them back — its model options, its
 * typed answer and how many corrections it may take, its turns counted from the first run's.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Logger, Option, Schema, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Model from "../src/Model.ts"
import * as Output from "../src/Output.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import type * as SessionEvent from "../src/SessionEvent.ts"
import * as SessionStore from "../src/SessionStore.ts"
import * as Tool from "../src/Tool.ts"

const Removed = Schema.Struct({ removed: Schema.Int })

const rm = Tool.make("rm", {
  description: "Removes a path",
  parameters: Schema.Struct({ path: Schema.String }),
  needsApproval: true,
  call: () => Effect.succeed("removed")
})

const agent = Agent.make({ name: "cleaner", model: "test:x", tools: [rm] })

const options = { modelOptions: { temperature: 0.25, maxTokens: 300 }, output: Removed, outputRetries: 1 } as const

/** A first "process": its run, given `options`, waits on rm; it stops once the store holds the batch. */
const diesWaiting = (memory: SessionStore.Service) =>
  Effect.scoped(Effect.gen(function*() {
    const saved = yield* Deferred.make<void>()
    const store: SessionStore.Service = {
      ...memory,
      save: (snapshot, saving) => Effect.tap(memory.save(snapshot, saving), () => snapshot.batch?.waiting.length === 1 ? Deferred.succeed(saved, undefined) : Effect.void)
    }
    const first = yield* Session.start(agent, { id: "s", store })
    yield* Effect.forkScoped(first.run("clean up", options))
    yield* Deferred.await(saved)
    yield* first.stop
  })).pipe(Effect.provide(TestModel.layer([TestModel.toolCall("rm", { path: "/tmp/x" }, "c_rm")], { nativeOutput: true })))

/** The second process: approves rm and collects the continued run's events until its end. */
const continued = (store: SessionStore.Service, replies: ReadonlyArray<TestModel.Reply>) =>
  Effect.gen(function*() {
    const { model, recorder } = yield* TestModel.make(replies, { nativeOutput: true })
    const second = yield* Session.start(agent, { id: "s", store }).pipe(Effect.provideService(Model.Model, model))
    const events: Array<SessionEvent.SessionEvent> = []
    const ended = yield* Deferred.make<void>()
    yield* Effect.forkChild(
      Stream.runForEach(second.events, (event) => {
        events.push(event)
        return event._tag === "AgentEnd" ? Deferred.succeed(ended, undefined) : Effect.void
      }),
      { startImmediately: true }
    )
    yield* second.approve("c_rm")
    yield* Deferred.await(ended)
    return { events, requests: yield* recorder.requests, remaining: yield* recorder.remaining }
  })

describe("a run continued after a restart", () => {
  it.effect("the batch's save keeps where the run stood and its settings", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      yield* diesWaiting(store)
      const batch = Option.getOrThrow(yield* store.load("s")).batch
      const { options: saved, ...stood } = batch!.run!
      assert.deepStrictEqual(stood, { turn: 1, from: 1, usage: { inputTokens: 10, outputTokens: 5 }, finishReason: "tool-calls", retries: 0 })
      assert.deepStrictEqual(saved, {
        modelOptions: { temperature: 0.25, maxTokens: 300 },
        outputRetries: 1,
        output: {
          schema: {
            type: "object",
            properties: { removed: { type: "integer", minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER } },
            required: ["removed"],
            additionalProperties: false
          },
          definitions: {}
        }
      })
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("asks with the first run's model options and typed answer, takes its corrections, and counts turns on from it", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      yield* diesWaiting(store)
      // Two answers that do not decode: one correction is allowed (outputRetries 1, not the default 2).
      const { events, remaining, requests } = yield* continued(store, [
        TestModel.text(`{"removed":"all"}`),
        TestModel.text(`{"removed":"everything"}`),
        TestModel.text(`{"removed":1}`)
      ])
      assert.strictEqual(requests.length, 2)
      assert.strictEqual(remaining, 1)
      for (const request of requests) {
        assert.deepStrictEqual(request.options, { temperature: 0.25, maxTokens: 300 })
        assert.deepStrictEqual(request.output, Output.spec(Removed))
      }
      assert.deepStrictEqual(events.flatMap((e) => (e._tag === "TurnStart" ? [e.turn] : [])), [2, 3])
      const end = events.at(-1)!
      assert.strictEqual(end._tag === "AgentEnd" && end.outcome, "failed")
      const failed = events.find((e) => e._tag === "Error")
      assert.match(failed?._tag === "Error" ? failed.message : "", /schema/i)
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("a correct answer completes the continued run", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      yield* diesWaiting(store)
      const { events, requests } = yield* continued(store, [TestModel.text(`{"removed":1}`)])
      assert.strictEqual(requests.length, 1)
      const end = events.at(-1)!
      assert.strictEqual(end._tag === "AgentEnd" && end.outcome, "completed")
      const stored = Option.getOrThrow(yield* store.load("s"))
      assert.strictEqual(stored.batch, undefined)
      assert.strictEqual(stored.messages.at(-1)?._tag, "AssistantMessage")
    }).pipe(Effect.provide(Sandbox.layerNoop())))

  it.effect("a saved output that is no JSON Schema this Condukt can read: the run goes on without a typed answer, with a warning", () => {
    const logs: Array<string> = []
    return Effect.gen(function*() {
      const memory = SessionStore.makeMemory()
      yield* diesWaiting(memory)
      const snapshot = Option.getOrThrow(yield* memory.load("s"))
      const run = snapshot.batch!.run!
      yield* memory.save({ ...snapshot, batch: { ...snapshot.batch!, run: { ...run, options: { ...run.options, output: { schema: { $ref: "#/$defs/Missing" }, definitions: {} } } } } })
      const { events, requests } = yield* continued(memory, [TestModel.text("not json at all")])
      assert.strictEqual(requests.length, 1)
      assert.strictEqual(requests[0]!.output, undefined)
      assert.deepStrictEqual(requests[0]!.options, { temperature: 0.25, maxTokens: 300 })
      const end = events.at(-1)!
      assert.strictEqual(end._tag === "AgentEnd" && end.outcome, "completed")
      const warned = logs.filter((line) => line.includes("output schema"))
      assert.strictEqual(warned.length, 1)
      assert.match(warned[0]!, /^Warn: Session s: the continued run's output schema cannot be read back \(.*Missing.*\): its answer is not decoded$/)
    }).pipe(Effect.provide(Layer.mergeAll(Sandbox.layerNoop(), Logger.layer([Logger.make(({ logLevel, message }) => {
      logs.push(`${logLevel}: ${(Array.isArray(message) ? message : [message]).join(" ")}`)
    })]))))
  })
})

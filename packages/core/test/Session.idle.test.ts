/**
 * Session.idle: it waits for the run a session started from the store continues (ADR 0065) and
 * for a batch restored waiting for a person's answer; an idle or stopped session answers at once.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Message from "../src/Message.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import { cutOff } from "./fixtures/cutOff.ts"
import * as LoggedTools from "./fixtures/loggedTools.ts"

const sandbox = Sandbox.layerNoop()

const worker = (ran: Array<string>) =>
  Agent.make({
    name: "worker",
    model: "test:x",
    tools: [LoggedTools.note(ran), LoggedTools.rm(ran)]
  })

const note = Message.toolCallPart({ id: "c1", name: "note", input: { n: 1 } })
const rm = Message.toolCallPart({ id: "c_rm", name: "rm", input: { path: "/tmp/x" } })

/** A session started from a store holding a call of `rm` waiting for approval, and the store. */
const restoredWaiting = (ran: Array<string>) =>
  Effect.gen(function*() {
    const store = yield* cutOff({
      id: "w",
      agent: "worker",
      prompt: "clean",
      calls: [rm],
      batch: { waiting: [{ callId: "c_rm", tool: "rm", input: { path: "/tmp/x" } }], results: [], started: [] }
    })
    return { session: yield* Session.start(worker(ran), { id: "w", store, sandbox, projectInstructions: false }), store }
  })

/** How `effect` ended when started now, before anything else ran: `undefined` while it still waits. */
const atOnce = <A, E>(effect: Effect.Effect<A, E>) => Effect.map(Effect.forkChild(effect, { startImmediately: true }), (fiber) => fiber.pollUnsafe())

describe("Session.idle", () => {
  it.effect("waits for the run a session started from the store goes on with, to its reply", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      // The model's turn with the call was committed; the call had not started.
      const store = yield* cutOff({ id: "w", agent: "worker", prompt: "work", calls: [note], batch: { waiting: [], results: [], started: [] } })
      const session = yield* Session.start(worker(ran), { id: "w", store, sandbox, projectInstructions: false })
      yield* session.idle
      assert.deepStrictEqual(yield* session.history, [
        Message.user("work"),
        Message.assistant([note]),
        Message.toolResult({ callId: "c1", name: "note", content: "noted 1", isError: false }),
        Message.assistant([Message.textPart("done")])
      ])
      assert.deepStrictEqual(ran, ["c1"])
    }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.text("done")]))))

  it.effect("waits for a batch restored waiting for approval until it is answered and its run ends", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const { session } = yield* restoredWaiting(ran)
      const waiting = yield* Effect.forkChild(session.idle)
      yield* Effect.yieldNow
      assert.isUndefined(waiting.pollUnsafe())
      yield* session.approve("c_rm")
      yield* Fiber.join(waiting)
      assert.deepStrictEqual((yield* session.history).at(-1), Message.assistant([Message.textPart("clean done")]))
      assert.deepStrictEqual(ran, ["c_rm"])
    }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.text("clean done")]))))

  it.effect("an abort ends a batch restored waiting for approval: idle completes, its calls read the aborted-run text, the store offers it no more", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const { session, store } = yield* restoredWaiting(ran)
      const waiting = yield* Effect.forkChild(session.idle)
      yield* session.abort
      yield* Fiber.join(waiting)
      const aborted = Message.toolResult({ callId: "c_rm", name: "rm", content: Session.ABORTED_RESULT, isError: true })
      assert.deepStrictEqual((yield* session.history).at(-1), aborted)
      assert.deepStrictEqual(yield* session.pending, [])
      const saved = yield* store.load("w")
      assert.deepStrictEqual(saved._tag === "Some" ? [saved.value.batch, saved.value.messages.at(-1)] : [], [undefined, aborted])
      assert.deepStrictEqual(ran, [])
    }).pipe(Effect.scoped, Effect.provide(TestModel.layer([]))))

  it.effect("an idle session and a stopped one answer at once", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(worker([]), { sandbox, projectInstructions: false })
      assert.deepStrictEqual(yield* atOnce(session.idle), Exit.void)
      assert.strictEqual((yield* session.run("hi")).text, "hello")
      // The run's fiber hands back after its caller has the result: idle waits for that, then answers at once.
      yield* session.idle
      assert.deepStrictEqual(yield* atOnce(session.idle), Exit.void)
      yield* session.stop
      assert.deepStrictEqual(yield* atOnce(session.idle), Exit.void)
      assert.deepStrictEqual(yield* session.history, [Message.user("hi"), Message.assistant([Message.textPart("hello")])])
    }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.text("hello")]))))
})

import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Queue, Schema, Scope, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import type * as Session from "../src/Session.ts"
import * as Sessions from "../src/Sessions.ts"
import * as Tool from "../src/Tool.ts"
import type * as ToolSource from "../src/ToolSource.ts"
import { startProbe } from "./fixtures/startProbe.ts"

/** What a run's failure says: its reason's tag, for a SessionError. */
const reasonOf = (error: Session.RunError) => (error._tag === "SessionError" ? error.reason._tag : error._tag)

const noSandbox = Sandbox.layerNoop()

/** A model that crashes (a defect, a bug) when the prompt says "crash" and answers "ok" otherwise. */
const crashingModel = Layer.succeed(
  Model.Model,
  Model.Model.of({
    name: "test:crashing",
    stream: (request) => {
      const last = request.messages.at(-1)
      return last?._tag === "UserMessage" && last.content === "crash"
        ? Stream.die(new Error("the model adapter has a bug"))
        : Stream.make({ _tag: "TextDelta", text: "ok" })
    }
  })
)

const agent = Agent.make({ name: "worker", model: "test:x" })

/** An agent whose every session start and end is told on `queue`. */
const probed = (queue: Queue.Queue<string>) => Agent.make({ name: "worker", model: "test:x", mcpServers: [startProbe(queue)] })

/** Crashes on "crash", calls the blocking tool on any other prompt, then answers. */
const crashOrBlock = Model.Model.of({
  name: "test:crash-or-block",
  stream: (request) => {
    const last = request.messages.at(-1)
    if (last?._tag === "UserMessage" && last.content === "crash") return Stream.die(new Error("adapter bug"))
    if (last?._tag === "UserMessage") return Stream.make({ _tag: "ToolCall", id: "b", name: "block", input: {} })
    return Stream.make({ _tag: "TextDelta", text: "done" })
  }
})

describe("Sessions", () => {
  it.effect("starts sessions by id and finds, lists, counts and stops them", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.make()
      const a = yield* sessions.start(agent, { id: "a" })
      yield* sessions.start(agent, { id: "b" })
      assert.strictEqual(yield* sessions.count, 2)
      assert.deepStrictEqual(yield* sessions.list, ["a", "b"])
      assert.strictEqual(Option.getOrUndefined(yield* sessions.whereis("a")), a)
      assert.strictEqual((yield* a.run("hello")).text, "ok")
      const duplicate = yield* Effect.flip(sessions.start(agent, { id: "a" }))
      assert.strictEqual(duplicate.message, "A child with id a is already supervised")
      yield* sessions.stop("a")
      assert.deepStrictEqual(yield* sessions.list, ["b"])
      assert.isTrue(Option.isNone(yield* sessions.whereis("a")))
      assert.strictEqual(reasonOf(yield* Effect.flip(a.run("again"))), "SessionStopped")
    }).pipe(Effect.provide(Layer.mergeAll(crashingModel, noSandbox))))

  it.effect("a crashed permanent session comes back under its id with a fresh history; the others never notice", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.make()
      const queue = yield* Queue.unbounded<string>()
      const first = yield* sessions.start(probed(queue), { id: "phoenix", restart: "permanent" })
      assert.strictEqual(yield* Queue.take(queue), "started")
      const bystander = yield* sessions.start(agent, { id: "bystander" })
      yield* bystander.run("hi")
      const error = yield* Effect.flip(first.run("crash"))
      assert.strictEqual(error.message, "Session phoenix crashed: the model adapter has a bug")
      assert.deepStrictEqual(yield* Queue.takeN(queue, 2), ["released", "started"])
      const reborn = yield* sessions.whereis("phoenix")
      assert.isTrue(Option.isSome(reborn) && reborn.value !== first)
      const session = Option.getOrThrow(reborn)
      assert.strictEqual(session.id, "phoenix")
      assert.deepStrictEqual(yield* session.history, [])
      assert.strictEqual((yield* session.run("hello again")).text, "ok")
      assert.strictEqual((yield* bystander.history).length, 2)
      assert.strictEqual((yield* bystander.run("still here")).text, "ok")
    }).pipe(Effect.provide(Layer.mergeAll(crashingModel, noSandbox))))

  it.effect("a crashed temporary session stays down and leaves the registry", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.make()
      const queue = yield* Queue.unbounded<string>()
      const doomed = yield* sessions.start(probed(queue), { id: "doomed" })
      assert.strictEqual(reasonOf(yield* Effect.flip(doomed.run("crash"))), "SessionCrashed")
      assert.strictEqual((yield* Effect.flip(doomed.join)).message, "Session doomed crashed: the model adapter has a bug")
      // The registry forgets a crashed session before what it owns is released.
      assert.deepStrictEqual(yield* Queue.takeN(queue, 2), ["started", "released"])
      assert.strictEqual(yield* sessions.count, 0)
    }).pipe(Effect.provide(Layer.mergeAll(crashingModel, noSandbox))))

  it.effect("closing the registry's scope stops every session", () =>
    Effect.gen(function*() {
      const queue = yield* Queue.unbounded<string>()
      const scope = yield* Scope.make()
      const sessions = yield* Sessions.make().pipe(Scope.provide(scope))
      for (const id of ["a", "b", "c"]) yield* sessions.start(probed(queue), { id })
      yield* sessions.start(probed(queue), { id: "d", restart: "permanent" })
      assert.deepStrictEqual(yield* Queue.takeN(queue, 4), ["started", "started", "started", "started"])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* Queue.takeN(queue, 4), ["released", "released", "released", "released"])
      assert.strictEqual(yield* sessions.count, 0)
      const refused = yield* Effect.flip(sessions.start(agent, { id: "late" }))
      assert.strictEqual(refused.message, "Cannot start child late: the supervisor has stopped (its scope is closed)")
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([]), noSandbox))))

  it.effect("a session that keeps crashing is dropped alone when its own restart intensity runs out", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.make({ maxRestarts: 2 })
      const bystander = yield* sessions.start(agent, { id: "bystander", restart: "permanent" })
      const queue = yield* Queue.unbounded<string>()
      let current = yield* sessions.start(probed(queue), { id: "flapping", restart: "permanent" })
      assert.strictEqual(yield* Queue.take(queue), "started")
      for (let crash = 1; crash <= 2; crash++) {
        assert.strictEqual(reasonOf(yield* Effect.flip(current.run("crash"))), "SessionCrashed")
        assert.deepStrictEqual(yield* Queue.takeN(queue, 2), ["released", "started"])
        current = Option.getOrThrow(yield* sessions.whereis("flapping"))
      }
      // The third crash within the period exceeds the intensity: the session is dropped for good.
      assert.strictEqual(reasonOf(yield* Effect.flip(current.run("crash"))), "SessionCrashed")
      assert.deepStrictEqual(yield* Queue.take(queue), "released")
      yield* Effect.flip(current.join)
      assert.deepStrictEqual(yield* sessions.list, ["bystander"])
      assert.strictEqual((yield* bystander.run("still fine")).text, "ok")
    }).pipe(Effect.provide(Layer.mergeAll(crashingModel, noSandbox))))

  it.effect("a session restarted by its supervisor can be aborted mid-tool like the first incarnation", () =>
    Effect.gen(function*() {
      const started = yield* Queue.unbounded<void>()
      const Block = Tool.make("block", {
        description: "Blocks",
        parameters: Schema.Struct({}),
        call: () => Queue.offer(started, undefined).pipe(Effect.andThen(Effect.never))
      })
      const sessions = yield* Sessions.make()
      const queue = yield* Queue.unbounded<string>()
      const first = yield* sessions.start(Agent.make({ name: "w", model: "test:x", tools: [Block], mcpServers: [startProbe(queue)] }), {
        id: "w",
        restart: "permanent"
      })
      yield* Queue.take(queue)
      yield* Effect.flip(first.run("crash"))
      yield* Queue.takeN(queue, 2)
      const reborn = Option.getOrThrow(yield* sessions.whereis("w"))
      const run = yield* Effect.forkChild(Effect.flip(reborn.run("block")), { startImmediately: true })
      yield* Queue.take(started)
      yield* reborn.abort
      assert.strictEqual(reasonOf(yield* Fiber.join(run)), "RunAborted")
      assert.deepStrictEqual((yield* reborn.history).map((m) => m._tag), ["UserMessage", "AssistantMessage", "ToolResultMessage"])
    }).pipe(Effect.provideService(Model.Model, crashOrBlock), Effect.provide(noSandbox)))

  it.effect("a start that waits (a slow MCP server) holds up no other start; a second start of its id is refused at once", () =>
    Effect.gen(function*() {
      const go = yield* Deferred.make<void>()
      const slow: ToolSource.ToolSource = {
        _tag: "ToolSource",
        name: "slow",
        start: () => Effect.as(Deferred.await(go), { tools: Effect.succeed([]) })
      }
      const sessions = yield* Sessions.make()
      const waiting = yield* Effect.forkChild(
        sessions.start(Agent.make({ name: "slow", model: "test:x", mcpServers: [slow] }), { id: "slow", restart: "permanent" }),
        { startImmediately: true }
      )
      const duplicate = yield* Effect.flip(sessions.start(agent, { id: "slow" }))
      assert.strictEqual(duplicate.message, "A child with id slow is already supervised")
      yield* sessions.start(agent, { id: "fast", restart: "permanent" })
      yield* sessions.start(agent, { id: "plain" })
      assert.deepStrictEqual(yield* sessions.list, ["fast", "plain"])
      yield* Deferred.succeed(go, undefined)
      assert.strictEqual((yield* Fiber.join(waiting)).id, "slow")
      assert.deepStrictEqual(yield* sessions.list, ["fast", "plain", "slow"])
    }).pipe(Effect.provide(Layer.mergeAll(crashingModel, noSandbox))))

  it.effect("stopping a restartable session ends it for good and frees its id", () =>
    Effect.gen(function*() {
      const queue = yield* Queue.unbounded<string>()
      const sessions = yield* Sessions.make()
      const first = yield* sessions.start(probed(queue), { id: "p", restart: "permanent" })
      assert.strictEqual(yield* Queue.take(queue), "started")
      yield* sessions.stop("p")
      assert.strictEqual(yield* Queue.take(queue), "released")
      assert.strictEqual(yield* sessions.count, 0)
      assert.strictEqual(reasonOf(yield* Effect.flip(first.run("hello"))), "SessionStopped")
      const again = yield* sessions.start(probed(queue), { id: "p", restart: "transient" })
      assert.strictEqual((yield* again.run("hello")).text, "ok")
    }).pipe(Effect.provide(Layer.mergeAll(crashingModel, noSandbox))))

  it.effect("options a session supervisor could not honour are refused when the registry is made", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Sessions.make({ period: 0 }))
      assert.strictEqual(error.message, "Supervisor option period must be a finite duration above zero (got 0)")
    }))
})

import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Ref, Scope, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Sessions from "../src/Sessions.ts"

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
      assert.strictEqual((yield* Effect.flip(a.run("again")))._tag, "SessionStopped")
    }).pipe(Effect.provide(Layer.mergeAll(crashingModel, noSandbox))))

  it.effect("a crashed permanent session comes back under its id with a fresh history; the others never notice", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.make()
      const first = yield* sessions.start(agent, { id: "phoenix", restart: "permanent" })
      const bystander = yield* sessions.start(agent, { id: "bystander" })
      yield* bystander.run("hi")
      const error = yield* Effect.flip(first.run("crash"))
      assert.strictEqual(error.message, "Session phoenix crashed: the model adapter has a bug")
      let reborn = Option.none<typeof first>()
      for (let i = 0; i < 100 && (Option.isNone(reborn) || reborn.value === first); i++) {
        yield* Effect.yieldNow
        reborn = yield* sessions.whereis("phoenix")
      }
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
      const doomed = yield* sessions.start(agent, { id: "doomed" })
      assert.strictEqual((yield* Effect.flip(doomed.run("crash")))._tag, "SessionCrashed")
      assert.strictEqual((yield* Effect.flip(doomed.join)).message, "Session doomed crashed: the model adapter has a bug")
      for (let i = 0; i < 100 && (yield* sessions.count) > 0; i++) yield* Effect.yieldNow
      assert.strictEqual(yield* sessions.count, 0)
    }).pipe(Effect.provide(Layer.mergeAll(crashingModel, noSandbox))))

  it.effect("closing the registry's scope stops every session", () =>
    Effect.gen(function*() {
      const released = yield* Ref.make(0)
      const counted = Layer.unwrap(Effect.acquireRelease(Effect.succeed(noSandbox), () => Ref.update(released, (n) => n + 1)))
      const scope = yield* Scope.make()
      const sessions = yield* Sessions.make().pipe(Scope.provide(scope))
      const counting = Agent.make({ name: "counting", model: "test:x", sandbox: counted })
      for (const id of ["a", "b", "c"]) yield* sessions.start(counting, { id })
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* Ref.get(released), 3)
    }).pipe(Effect.provide(TestModel.layer([]))))

  it.effect("a session that keeps crashing is dropped alone when its own restart intensity runs out", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.make({ maxRestarts: 2 })
      const bystander = yield* sessions.start(agent, { id: "bystander", restart: "permanent" })
      let current = yield* sessions.start(agent, { id: "flapping", restart: "permanent" })
      for (let crash = 1; crash <= 3; crash++) {
        assert.strictEqual((yield* Effect.flip(current.run("crash")))._tag, "SessionCrashed")
        for (let i = 0; i < 100; i++) {
          const found = yield* sessions.whereis("flapping")
          if (crash === 3 ? Option.isNone(found) : Option.isSome(found) && found.value !== current) {
            if (Option.isSome(found)) current = found.value
            break
          }
          yield* Effect.yieldNow
        }
      }
      assert.deepStrictEqual(yield* sessions.list, ["bystander"])
      assert.strictEqual((yield* bystander.run("still fine")).text, "ok")
    }).pipe(Effect.provide(Layer.mergeAll(crashingModel, noSandbox))))
})

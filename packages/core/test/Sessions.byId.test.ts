/**
 * `Sessions.layerById`: the registry of this process spoken to by id and agent name, through the
 * body every `ById` layer runs (fixtures/sessionsById.ts); the cluster's layer runs the same body.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as Model from "../src/Model.ts"
import * as SessionStore from "../src/SessionStore.ts"
import * as Sessions from "../src/Sessions.ts"
import { agents, conformance, echoModel } from "./fixtures/sessionsById.ts"

const byId = Sessions.layerById(agents).pipe(
  Layer.provideMerge(Sessions.layer),
  Layer.provide(Layer.mergeAll(Layer.succeed(Model.Model, echoModel), SessionStore.layerMemory))
)

describe("Sessions.layerById", () => {
  conformance((f) => Effect.flatMap(Sessions.ById, f).pipe(Effect.provide(byId)), it.effect)

  it.effect("a session started by id is the registry's: whereis and list see it", () =>
    Effect.gen(function*() {
      const byIdSessions = yield* Sessions.ById
      const registry = yield* Sessions.Sessions
      const id = yield* byIdSessions.start("echo", { id: "seen" })
      assert.deepStrictEqual(yield* registry.list, ["seen"])
      const session = yield* registry.whereis(id)
      assert.strictEqual(Option.getOrThrow(session).agent, "echo")
    }).pipe(Effect.provide(byId)))
})

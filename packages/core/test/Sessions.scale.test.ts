/**
 * Many sessions leave nothing behind: 10,000 start in a registry, each answers one run that calls a
 * tool (so each builds its sandbox and forks its mailbox fiber), all stop, and after a full gc the
 * heap is back within 5 % of where it started. The model is stateless (`TestModel.callThenAnswer`:
 * a scripted `TestModel` keeps every request it sees, which would be its residue, not the sessions').
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema, Scope } from "effect"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as Agent from "../src/Agent.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Sessions from "../src/Sessions.ts"
import * as Tool from "../src/Tool.ts"

const COUNT = 10_000

/** A full collection, however the worker was started. */
const gc: () => void = (() => {
  setFlagsFromString("--expose-gc")
  return runInNewContext("gc") as () => void
})()

const heapAfterGc = () => {
  for (let i = 0; i < 3; i++) gc()
  return process.memoryUsage().heapUsed
}

const Echo = Tool.make("echo", {
  description: "Echoes",
  parameters: Schema.Struct({ text: Schema.String }),
  call: ({ text }) => Effect.succeed(text)
})

const stateless = TestModel.callThenAnswer("echo", { text: "hi" }, "ok")

const agent = Agent.make({ name: "many", model: "test:x", tools: [Echo], sandbox: Sandbox.layerNoop() })

/** `count` sessions in a registry of their own: each runs once; then the registry's scope closes. */
const lifetime = (count: number) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const registry = yield* Sessions.make().pipe(Scope.provide(scope))
    const sessions = yield* Effect.forEach(Array.from({ length: count }, (_, i) => `s-${i}`), (id) => registry.start(agent, { id }))
    assert.strictEqual(yield* registry.count, count)
    const answers = yield* Effect.forEach(sessions, (session) => Effect.map(session.run("go"), (r) => r.text), { concurrency: 100 })
    assert.isTrue(answers.every((text) => text === "ok"))
    const held = heapAfterGc()
    yield* Scope.close(scope, Exit.void)
    assert.strictEqual(yield* registry.count, 0)
    return held
  }).pipe(Effect.provideService(Model.Model, stateless))

describe("Sessions at scale", () => {
  it.live("10,000 sessions start, each answers one run, all stop, and the heap returns to within 5% of its start", () =>
    Effect.gen(function*() {
      // Warm-up: the JIT and module-level caches are not residue.
      yield* lifetime(1_000)
      const before = heapAfterGc()
      const held = yield* lifetime(COUNT)
      const after = heapAfterGc()
      // The sessions were really there: they held memory while alive.
      assert.isAbove(held - before, COUNT * 500)
      assert.isBelow((after - before) / before, 0.05, `heap ${before} before, ${held} with the sessions, ${after} after`)
    }), 120_000)
})

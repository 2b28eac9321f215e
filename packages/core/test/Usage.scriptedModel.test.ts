import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as Usage from "../src/Usage.ts"

const agent = Agent.make({ name: "priced", model: "anthropic:claude-haiku-4-5" })
const prices = Layer.succeed(Usage.Prices, { "anthropic:claude-haiku-4-5": { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 } })

describe("Usage under a scripted model", () => {
  it.effect("TestModel, named test:scripted, is priced as the model the agent names: the run and the session have a cost", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent, { projectInstructions: false })
      const result = yield* session.run("Hello?")
      // TestModel spends 10 input and 5 output tokens a reply: 10 × 1 + 5 × 2.
      assert.deepStrictEqual({ usage: result.usage, cost: result.cost, session: yield* session.cost }, {
        usage: { inputTokens: 10, outputTokens: 5 },
        cost: 20,
        session: 20
      })
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.text("hi")]), Sandbox.layerNoop(), prices))))

  it.effect("a table naming the provided model's own name prices by it first", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent, { projectInstructions: false })
      assert.strictEqual((yield* session.run("Hello?")).cost, 5)
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(
        TestModel.layer([TestModel.text("hi")]),
        Sandbox.layerNoop(),
        Layer.succeed(Usage.Prices, {
          "test:scripted": { inputPerMillion: 0, outputPerMillion: 1_000_000 },
          "anthropic:claude-haiku-4-5": { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 }
        })
      ))
    ))
})

import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import * as Message from "../src/Message.ts"
import * as Model from "../src/Model.ts"

const echo = (name: string): Model.Service => ({ name, stream: () => Stream.make({ _tag: "TextDelta", text: name }) })

describe("Model", () => {
  it("folds streamed parts into one assistant message, deltas joined, tool calls in place", () => {
    const message = Model.toMessage([
      { _tag: "ThinkingDelta", text: "let me " },
      { _tag: "ThinkingDelta", text: "see" },
      { _tag: "TextDelta", text: "Reading " },
      { _tag: "TextDelta", text: "both." },
      { _tag: "ToolCall", id: "1", name: "Read", input: { path: "a" } },
      { _tag: "ToolCall", id: "2", name: "Read", input: { path: "b" } },
      { _tag: "Usage", inputTokens: 3, outputTokens: 4 },
      { _tag: "Finish", reason: "tool-calls" }
    ])
    assert.deepStrictEqual(message, Message.assistant([
      Message.thinkingPart("let me see"),
      Message.textPart("Reading both."),
      Message.toolCallPart({ id: "1", name: "Read", input: { path: "a" } }),
      Message.toolCallPart({ id: "2", name: "Read", input: { path: "b" } })
    ]))
  })

  it.effect("resolves provider:model strings through the registry", () =>
    Effect.gen(function*() {
      const model = yield* Model.resolve("acme:large-1")
      assert.strictEqual(model.name, "acme/large-1")
      const unknown = yield* Effect.flip(Model.resolve("large-1"))
      assert.strictEqual(unknown.message, `No provider for model "large-1" (expected "provider:model"; known providers: acme, zeta)`)
    }).pipe(Effect.provide(Layer.mergeAll(
      Model.layerProviders({ acme: (name) => Effect.succeed(echo(`acme/${name}`)) }).pipe(
        Layer.provideMerge(Model.layerProviders({ zeta: (name) => Effect.succeed(echo(name)) }))
      )
    ))))

  it.effect("says when no provider is registered at all", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Model.resolve("openai:gpt-4.1"))
      assert.strictEqual(error.message, `No provider for model "openai:gpt-4.1" (expected "provider:model"; none are registered)`)
    }))

  it.effect("usage adds up, cache counts included only when there are some", () =>
    Effect.sync(() => {
      const parts: ReadonlyArray<Model.Part> = [
        { _tag: "Usage", inputTokens: 100, outputTokens: 0, cacheReadTokens: 80 },
        { _tag: "TextDelta", text: "ok" },
        { _tag: "Usage", inputTokens: 0, outputTokens: 7 }
      ]
      const turn = Model.usageOf(parts)
      assert.deepStrictEqual(turn, { inputTokens: 100, outputTokens: 7, cacheReadTokens: 80 })
      assert.deepStrictEqual(Model.addUsage(turn, { inputTokens: 1, outputTokens: 1, cacheWriteTokens: 5 }), {
        inputTokens: 101,
        outputTokens: 8,
        cacheReadTokens: 80,
        cacheWriteTokens: 5
      })
      assert.deepStrictEqual(Model.usageOf([]), { inputTokens: 0, outputTokens: 0 })
    }))
})

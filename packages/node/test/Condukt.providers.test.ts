/**
 * Provider layers compose: three vendors' layers, merged or provided in every order, alone or with
 * `Condukt.layer` before, after, inside or around them, all resolve, each with the key its own
 * layer was given (not the environment's, which `Condukt.layer`'s defaults read).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import * as Condukt from "../src/Condukt.ts"
import * as Model from "@condukt/core/Model"
import * as Anthropic from "@condukt/providers/Anthropic"
import * as Google from "@condukt/providers/Google"
import * as OpenAi from "@condukt/providers/OpenAi"

type Providers = Layer.Layer<Model.Providers>

const vendors: readonly [readonly [string, Providers], readonly [string, Providers], readonly [string, Providers]] = [
  ["Anthropic", Anthropic.layer({ apiKey: Redacted.make("sk-ant-explicit") }).pipe(Layer.provide(NodeHttpClient.layerUndici))],
  ["ollama", OpenAi.layerCompatible("ollama", { apiKey: Redacted.make("ollama-explicit") }).pipe(Layer.provide(NodeHttpClient.layerUndici))],
  ["Google", Google.layer({ apiKey: Redacted.make("google-explicit") }).pipe(Layer.provide(NodeHttpClient.layerUndici))]
]

type Index = 0 | 1 | 2
const orders: ReadonlyArray<readonly [Index, Index, Index]> = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]

// Condukt.layer's defaults would answer with these: every resolved model below must show its own key.
const environment = ConfigProvider.layer(ConfigProvider.fromEnv({
  env: { ANTHROPIC_API_KEY: "env-anthropic", OLLAMA_API_KEY: "env-ollama", GOOGLE_API_KEY: "env-google" }
}))

/** Each model's name and secrets, and the message of a model no provider serves. */
const resolved = Effect.gen(function*() {
  const models = yield* Effect.forEach(["anthropic:claude-sonnet-4-6", "ollama:llama3.2", "google:gemini-2.5-flash"], (name) =>
    Effect.map(Model.resolve(name), (model) => [
      model.name,
      Object.entries(model.secrets ?? {}).map(([variable, value]) => [variable, Redacted.value(value)])
    ]))
  const unknown = yield* Effect.flip(Model.resolve("nope:x"))
  return { models, unknown: unknown.message }
})

const explicit = [
  ["anthropic:claude-sonnet-4-6", [["ANTHROPIC_API_KEY", "sk-ant-explicit"]]],
  ["ollama:llama3.2", [["OLLAMA_API_KEY", "ollama-explicit"]]],
  ["google:gemini-2.5-flash", [["GOOGLE_API_KEY", "google-explicit"]]]
]
const three = `No provider for model "nope:x" (expected "provider:model"; registered providers: anthropic, google, ollama)`
const all = `No provider for model "nope:x" (expected "provider:model"; registered providers: anthropic, deepseek, google, groq, lmstudio, mistral, ollama, openai, openai-responses, openrouter, together, vllm, xai)`

describe("Condukt.layer and provider layers", () => {
  for (const order of orders) {
    const names = order.map((i) => vendors[i][0]).join(", ")
    const [a, b, c] = [vendors[order[0]][1], vendors[order[1]][1], vendors[order[2]][1]]

    describe(names, () => {
      it.effect("merged side by side, all three resolve", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* resolved, { models: explicit, unknown: three })
        }).pipe(Effect.provide(Layer.mergeAll(a, b, c)), Effect.provide(environment)))

      it.effect("stacked with provideMerge, all three resolve", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* resolved, { models: explicit, unknown: three })
        }).pipe(Effect.provide(a.pipe(Layer.provideMerge(b), Layer.provideMerge(c))), Effect.provide(environment)))

      it.effect("provided one inside the other, all three resolve", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* resolved, { models: explicit, unknown: three })
        }).pipe(Effect.provide(a), Effect.provide(b), Effect.provide(c), Effect.provide(environment)))

      it.effect("merged after Condukt.layer, each keeps its own key", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* resolved, { models: explicit, unknown: all })
        }).pipe(Effect.provide(Layer.mergeAll(Condukt.layer, a, b, c)), Effect.provide(environment)))

      it.effect("merged before Condukt.layer, each keeps its own key", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* resolved, { models: explicit, unknown: all })
        }).pipe(Effect.provide(Layer.mergeAll(a, b, c, Condukt.layer)), Effect.provide(environment)))

      it.effect("provided inside Condukt.layer, each keeps its own key", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* resolved, { models: explicit, unknown: all })
        }).pipe(Effect.provide(Layer.mergeAll(a, b, c)), Effect.provide(Condukt.layer), Effect.provide(environment)))

      it.effect("provided around Condukt.layer, each keeps its own key", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* resolved, { models: explicit, unknown: all })
        }).pipe(Effect.provide(Condukt.layer), Effect.provide(Layer.mergeAll(a, b, c)), Effect.provide(environment)))
    })
  }

  it.effect("alone, Condukt.layer's providers read the environment", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* resolved, {
        models: [
          ["anthropic:claude-sonnet-4-6", [["ANTHROPIC_API_KEY", "env-anthropic"]]],
          ["ollama:llama3.2", [["OLLAMA_API_KEY", "env-ollama"]]],
          ["google:gemini-2.5-flash", [["GOOGLE_API_KEY", "env-google"]]]
        ],
        unknown: all
      })
    }).pipe(Effect.provide(Condukt.layer), Effect.provide(environment)))

  it.effect("a provider layer provided to one part of the program serves only that part", () =>
    Effect.gen(function*() {
      const inner = yield* resolved.pipe(Effect.provide(Layer.mergeAll(vendors[0][1], vendors[1][1], vendors[2][1])))
      const after = yield* resolved
      assert.deepStrictEqual([inner.models, after.models], [explicit, [
        ["anthropic:claude-sonnet-4-6", [["ANTHROPIC_API_KEY", "env-anthropic"]]],
        ["ollama:llama3.2", [["OLLAMA_API_KEY", "env-ollama"]]],
        ["google:gemini-2.5-flash", [["GOOGLE_API_KEY", "env-google"]]]
      ]])
    }).pipe(Effect.provide(Condukt.layer), Effect.provide(environment)))
})

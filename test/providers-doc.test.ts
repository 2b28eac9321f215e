/**
 * The example of docs/providers.md ("Options"), run as written: `test/fixtures/providers-doc.ts` is
 * that block byte for byte (the first test keeps it so), and both of its providers resolve — alone,
 * and with `Condukt.layer` merged beside it or provided inside or around it, where its Anthropic
 * key wins over the environment's (once lost: the merge kept only `ollama`, and `anthropic:` then
 * failed with "no API key").
 */
import { Model } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { providers } from "./fixtures/providers-doc.ts"
import { root } from "./support/exec.ts"

// No key in the environment: `Condukt.layer`'s own `anthropic:` would fail with MissingApiKey.
const emptyEnvironment = ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} }))

const resolved = Effect.gen(function*() {
  const anthropic = yield* Model.resolve("anthropic:claude-sonnet-4-6")
  const ollama = yield* Model.resolve("ollama:llama3.2")
  return [
    [anthropic.name, Object.entries(anthropic.secrets ?? {}).map(([name, value]) => [name, Redacted.value(value)])],
    [ollama.name, Object.entries(ollama.secrets ?? {}).map(([name, value]) => [name, Redacted.value(value)])]
  ]
})

const both = [
  ["anthropic:claude-sonnet-4-6", [["ANTHROPIC_API_KEY", "sk-ant-…"]]],
  ["ollama:llama3.2", []]
]

describe("docs/providers.md", () => {
  it("the example is test/fixtures/providers-doc.ts, byte for byte", () => {
    const doc = fs.readFileSync(path.join(root, "docs/providers.md"), "utf8")
    const blocks = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1])
    assert.include(blocks, fs.readFileSync(path.join(root, "test/fixtures/providers-doc.ts"), "utf8"))
  })

  it.effect("the example's layer resolves both providers", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* resolved, both)
      const unknown = yield* Effect.flip(Model.resolve("openai:gpt-4.1"))
      assert.strictEqual(unknown.message, `No provider for model "openai:gpt-4.1" (expected "provider:model"; registered providers: anthropic, ollama)`)
    }).pipe(Effect.provide(providers), Effect.provide(emptyEnvironment)))

  it.effect("provided inside Condukt.layer, both resolve with the example's key", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* resolved, both)
    }).pipe(Effect.provide(providers), Effect.provide(Condukt.layer), Effect.provide(emptyEnvironment)))

  it.effect("provided around Condukt.layer, both resolve with the example's key", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* resolved, both)
    }).pipe(Effect.provide(Condukt.layer), Effect.provide(providers), Effect.provide(emptyEnvironment)))

  it.effect("merged with Condukt.layer either side, both resolve with the example's key", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual([
        yield* resolved.pipe(Effect.provide(Layer.mergeAll(Condukt.layer, providers))),
        yield* resolved.pipe(Effect.provide(Layer.mergeAll(providers, Condukt.layer)))
      ], [both, both])
    }).pipe(Effect.provide(emptyEnvironment)))
})

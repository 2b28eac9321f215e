import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import * as History from "../src/History.ts"
import * as Message from "../src/Message.ts"
import * as Model from "../src/Model.ts"
import * as ModelError from "../src/ModelError.ts"

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

  it.effect("resolves provider:model strings through the registry every provider layer adds to", () =>
    Effect.gen(function*() {
      const model = yield* Model.resolve("acme:large-1")
      assert.strictEqual(model.name, "acme/large-1")
      assert.strictEqual((yield* Model.resolve("zeta:z")).name, "z")
      const unknown = yield* Effect.flip(Model.resolve("large-1"))
      assert.strictEqual(unknown.message, `No provider for model "large-1" (expected "provider:model"; registered providers: acme, zeta)`)
    }).pipe(Effect.provide(Layer.mergeAll(
      Model.layerProviders({ zeta: (name) => Effect.succeed(echo(name)) }),
      Model.layerProviders({ acme: (name) => Effect.succeed(echo(`acme/${name}`)) })
    ))))

  it.effect("a missing or empty model string is UnknownProvider for \"\", asking for a model, not a TypeError", () =>
    Effect.gen(function*() {
      // What a JavaScript caller, or an unset environment variable, hands over.
      const missing: string = JSON.parse("null")
      const asked = `No model given: name one as "provider:model" (registered providers: acme)`
      const acme = Model.layerProviders({ acme: (name) => Effect.succeed(echo(name)) })
      for (const model of [missing, ""]) {
        const error = yield* Effect.flip(Model.resolve(model).pipe(Effect.provide(acme)))
        assert.strictEqual(error.message, asked)
        assert.deepStrictEqual(error.reason, new ModelError.UnknownProvider({ model: "", known: ["acme"] }))
      }
      const none = yield* Effect.flip(Model.resolve(missing))
      assert.strictEqual(
        none.message,
        `No model given: name one as "provider:model" (no provider is registered either: provide Condukt.layer, or a provider's layer such as Anthropic.layer)`
      )
    }))

  it.effect("says when no provider is registered at all, and what the program lacks", () =>
    Effect.gen(function*() {
      const none = `No provider for model "openai:gpt-4.1": no provider is registered; the program lacks its provider layer (provide Condukt.layer, or a provider's layer such as Anthropic.layer)`
      const error = yield* Effect.flip(Model.resolve("openai:gpt-4.1"))
      assert.strictEqual(error.message, none)
      assert.deepStrictEqual(error.reason, new ModelError.UnknownProvider({ model: "openai:gpt-4.1", known: [] }))
      // Asking again names the same provider: the reason says so itself, and no retry policy retries it.
      assert.deepStrictEqual([error.reason.isRetryable, error.isRetryable], [false, false])
      // A registry with nothing in it says the same.
      const empty = yield* Effect.flip(Model.resolve("openai:gpt-4.1").pipe(Effect.provide(Model.layerProviders({}))))
      assert.strictEqual(empty.message, none)
    }))

  describe("registrations of one prefix", () => {
    const named = (name: string): Model.Provider => (model) => Effect.succeed(echo(`${name}/${model}`))
    const resolvedBy = Effect.map(Model.resolve("p:m"), (model) => model.name)

    it.effect("an explicit registration wins over a default, in either merge order", () =>
      Effect.gen(function*() {
        const defaults = Model.layerDefaults(Model.layerProviders({ p: named("default") }))
        const explicit = Model.layerProviders({ p: named("explicit") })
        assert.deepStrictEqual([
          yield* resolvedBy.pipe(Effect.provide(Layer.mergeAll(defaults, explicit))),
          yield* resolvedBy.pipe(Effect.provide(Layer.mergeAll(explicit, defaults)))
        ], ["explicit/m", "explicit/m"])
      }))

    it.effect("an explicit registration wins over a default, provided inside or around it", () =>
      Effect.gen(function*() {
        const defaults = Model.layerDefaults(Model.layerProviders({ p: named("default") }))
        const explicit = Model.layerProviders({ p: named("explicit") })
        assert.deepStrictEqual([
          yield* resolvedBy.pipe(Effect.provide(explicit), Effect.provide(defaults)),
          yield* resolvedBy.pipe(Effect.provide(defaults), Effect.provide(explicit))
        ], ["explicit/m", "explicit/m"])
      }))

    it.effect("of one rank, the inner provide wins while it lasts; then the outer one serves again", () =>
      Effect.gen(function*() {
        const inner = yield* resolvedBy.pipe(Effect.provide(Model.layerProviders({ p: named("inner") })))
        const after = yield* resolvedBy
        assert.deepStrictEqual([inner, after], ["inner/m", "outer/m"])
      }).pipe(Effect.provide(Model.layerProviders({ p: named("outer") }))))
  })

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

  it.effect("a resolved model sends provider-safe tool names and answers with the session's own", () =>
    Effect.gen(function*() {
      const sent: Array<Model.Request> = []
      const recording: Model.Provider = (name) =>
        Effect.succeed(Model.Model.of({
          name,
          stream: (request) => {
            sent.push(request)
            return Stream.make<Array<Model.Part>>({ _tag: "ToolCall", id: "c2", name: "github_create_issue", input: {} })
          }
        }))
      const model = yield* Model.resolve("rec:x").pipe(Effect.provide(Model.layerProviders({ rec: recording })))
      const spec = (name: string) => ({ name, description: name, parameters: { type: "object" } })
      const history = History.fromIterable([
        Message.user("file it"),
        Message.assistant([Message.toolCallPart({ id: "c1", name: "github.create_issue", input: {} })]),
        Message.toolResult({ callId: "c1", name: "github.create_issue", content: "done", isError: false })
      ])
      const parts = yield* Stream.runCollect(model.stream({
        system: undefined,
        messages: history,
        tools: [spec("github.create_issue"), spec("github_create_issue_x"), spec("Read"), spec("a".repeat(70) + ".b")]
      }))
      assert.deepStrictEqual(parts, [{ _tag: "ToolCall", id: "c2", name: "github.create_issue", input: {} }])
      const [request] = sent
      assert.deepStrictEqual(request!.tools.map((t) => t.name), [
        "github_create_issue",
        "github_create_issue_x",
        "Read",
        `${"a".repeat(55)}_${request!.tools[3]!.name.slice(-8)}`
      ])
      assert.match(request!.tools[3]!.name, /^a{55}_[0-9a-f]{8}$/)
      assert.deepStrictEqual(History.toArray(request!.messages).slice(1).map((m) =>
        m._tag === "AssistantMessage" ? m.parts.map((p) => (p._tag === "ToolCall" ? p.name : p._tag)).join() : m._tag === "ToolResultMessage" ? m.name : m._tag
      ), ["github_create_issue", "github_create_issue"])
      // Safe names pass through untouched: the very request object reaches the provider.
      const plain = { system: undefined, messages: history, tools: [spec("Read")] }
      yield* Stream.runDrain(model.stream(plain))
      assert.strictEqual(sent[1], plain)
      // A name whose `_` form is another tool's gets its hash (ToolName's rule), in any order.
      yield* Stream.runDrain(model.stream({ system: undefined, messages: History.fromIterable([]), tools: [spec("a.b"), spec("a_b")] }))
      assert.deepStrictEqual(sent[2]!.tools.map((t) => t.name), ["a_b_108bf50c", "a_b"])
    }))
})

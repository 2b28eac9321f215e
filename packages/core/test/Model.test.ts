import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import * as History from "../src/History.ts"
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

import { History, Message, Model } from "@condukt/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as TestModel from "../src/TestModel.ts"

const request = (prompt: string): Model.Request => ({
  system: undefined,
  messages: History.fromIterable([Message.user(prompt)]),
  tools: []
})

const recorded = (prompt: string): TestModel.RecordedRequest => ({ system: undefined, messages: [Message.user(prompt)], tools: [] })

const collect = (model: Model.Service, prompt: string) => Stream.runCollect(model.stream(request(prompt)))

describe("TestModel", () => {
  it.effect("answers the nth request with the nth reply and records every request", () =>
    Effect.gen(function*() {
      const { model, recorder } = yield* TestModel.make([TestModel.text("one"), TestModel.text("two")])
      assert.strictEqual(yield* recorder.remaining, 2)
      const first = yield* collect(model, "a")
      const second = yield* collect(model, "b")
      assert.deepStrictEqual(first, [
        { _tag: "TextDelta", text: "one" },
        { _tag: "Usage", inputTokens: 10, outputTokens: 5 },
        { _tag: "Finish", reason: "stop" }
      ])
      assert.deepStrictEqual(second[0], { _tag: "TextDelta", text: "two" })
      assert.deepStrictEqual(yield* recorder.requests, [recorded("a"), recorded("b")])
      assert.strictEqual(yield* recorder.remaining, 0)
    }))

  it.effect("fails a request past the end of the script, naming it", () =>
    Effect.gen(function*() {
      const { model, recorder } = yield* TestModel.make([TestModel.text("only")])
      yield* collect(model, "a")
      const error = yield* Effect.flip(collect(model, "b"))
      assert.strictEqual(error.message, "TestModel: no scripted reply for request 2 (the script has 1)")
      assert.strictEqual((yield* recorder.requests).length, 2)
    }))

  it.effect("streams text in chunks of code points", () =>
    Effect.gen(function*() {
      const { model } = yield* TestModel.make([TestModel.text("héllo wörld😀", { chunkSize: 4 })])
      const parts = yield* collect(model, "a")
      assert.deepStrictEqual(parts.filter((p) => p._tag === "TextDelta").map((p) => p.text), ["héll", "o wö", "rld😀"])
      assert.strictEqual(Model.toMessage(parts).parts.length, 1)
    }))

  it.effect("numbers tool calls across replies, keeps explicit ids and finishes with tool-calls", () =>
    Effect.gen(function*() {
      const { model } = yield* TestModel.make([
        TestModel.reply(TestModel.text("Reading"), TestModel.toolCall("Read", { path: "a" }), TestModel.toolCall("Read", { path: "b" })),
        TestModel.toolCall("Bash", { command: "ls" }, "mine"),
        TestModel.toolCall("Glob", { pattern: "*" })
      ])
      const first = yield* collect(model, "a")
      assert.deepStrictEqual(first.slice(1), [
        { _tag: "ToolCall", id: "call_1", name: "Read", input: { path: "a" } },
        { _tag: "ToolCall", id: "call_2", name: "Read", input: { path: "b" } },
        { _tag: "Usage", inputTokens: 10, outputTokens: 5 },
        { _tag: "Finish", reason: "tool-calls" }
      ])
      assert.deepStrictEqual((yield* collect(model, "b"))[0], { _tag: "ToolCall", id: "mine", name: "Bash", input: { command: "ls" } })
      assert.deepStrictEqual((yield* collect(model, "c"))[0], { _tag: "ToolCall", id: "call_3", name: "Glob", input: { pattern: "*" } })
    }))

  it.effect("fails after the parts streamed before the error", () =>
    Effect.gen(function*() {
      const { model } = yield* TestModel.make([
        TestModel.error("overloaded", { retryable: true, before: TestModel.thinking("hmm") })
      ])
      const seen: Array<Model.Part> = []
      const error = yield* Effect.flip(Stream.runForEach(model.stream(request("a")), (part) => Effect.sync(() => seen.push(part))))
      assert.deepStrictEqual(seen, [{ _tag: "ThinkingDelta", text: "hmm" }])
      assert.strictEqual(error.reason._tag, "ProviderFailed")
      assert.isTrue(error.reason._tag === "ProviderFailed" && error.reason.retryable)
    }))

  it.effect("waits for a delay on the Effect clock before streaming", () =>
    Effect.gen(function*() {
      const { model } = yield* TestModel.make([TestModel.delayed("10 seconds", TestModel.text("late"))])
      const fiber = yield* Effect.forkChild(collect(model, "a"))
      yield* TestClock.adjust("9 seconds")
      assert.strictEqual(fiber.pollUnsafe(), undefined)
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual((yield* Fiber.join(fiber))[0], { _tag: "TextDelta", text: "late" })
    }))

  it.effect("provides Model and its recorder as a layer", () =>
    Effect.gen(function*() {
      const model = yield* Model.Model
      yield* collect(model, "hi")
      const recorder = yield* TestModel.TestModel
      assert.deepStrictEqual(yield* recorder.requests, [recorded("hi")])
      assert.strictEqual(model.name, "test:scripted")
    }).pipe(Effect.provide(TestModel.layer([TestModel.text("hello")]))))

  it.effect("callThenAnswer: the same call after every user message, the same answer after anything else", () =>
    Effect.gen(function*() {
      const model = TestModel.callThenAnswer("echo", { text: "hi" }, "ok")
      for (const prompt of ["a", "b"]) {
        assert.deepStrictEqual(yield* collect(model, prompt), [
          { _tag: "ToolCall", id: "call_1", name: "echo", input: { text: "hi" } },
          { _tag: "Finish", reason: "tool-calls" }
        ])
      }
      const afterTool = yield* Stream.runCollect(model.stream({
        system: undefined,
        messages: History.fromIterable([
          Message.user("a"),
          Message.assistant([{ _tag: "ToolCall", id: "call_1", name: "echo", input: { text: "hi" } }]),
          Message.toolResult({ callId: "call_1", name: "echo", content: "hi", isError: false })
        ]),
        tools: []
      }))
      assert.deepStrictEqual(afterTool, [{ _tag: "TextDelta", text: "ok" }, { _tag: "Finish", reason: "stop" }])
    }))
})

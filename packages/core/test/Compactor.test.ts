import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer, Schema } from "effect"
import * as Compactor from "../src/Compactor.ts"
import * as Message from "../src/Message.ts"

const compactWith = (layer: Layer.Layer<Compactor.Compactor>, messages: ReadonlyArray<Message.Message>) =>
  Effect.flatMap(Compactor.Compactor, (compactor) => compactor.compact(messages)).pipe(Effect.provide(layer))

/** A history from a list of turns: each turn is a prompt, then `calls` tool calls and their results, then a reply. */
const historyOf = (turns: ReadonlyArray<number>): ReadonlyArray<Message.Message> =>
  turns.flatMap((calls, t) => {
    const ids = Array.from({ length: calls }, (_, c) => `t${t}c${c}`)
    return [
      Message.user(`prompt ${t}`),
      ...(calls === 0 ? [] : [
        Message.assistant(ids.map((id) => Message.toolCallPart({ id, name: "echo", input: {} }))),
        ...ids.map((id) => Message.toolResult({ callId: id, name: "echo", content: id, isError: false }))
      ]),
      Message.assistant([Message.textPart(`reply ${t}`)])
    ]
  })

const orphans = (messages: ReadonlyArray<Message.Message>) => {
  const seen = new Set<string>()
  const out: Array<string> = []
  for (const message of messages) {
    if (message._tag === "AssistantMessage") for (const call of Message.toolCalls(message)) seen.add(call.id)
    if (message._tag === "ToolResultMessage" && !seen.has(message.callId)) out.push(message.callId)
  }
  return out
}

describe("Compactor", () => {
  it.effect.prop(
    "sliding never leaves a tool result without its call, and keeps a suffix of at most `keep` messages",
    [Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4 }))), Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 30 }))],
    ([turns, keep]) =>
      Effect.gen(function*() {
        const messages = historyOf(turns)
        const kept = yield* compactWith(Compactor.layerSliding({ keep }), messages)
        assert.deepStrictEqual(orphans(kept), [])
        assert.isAtMost(kept.length, Math.max(keep, 0) === 0 ? 0 : Math.min(keep, messages.length))
        const tail = messages.slice(messages.length - Math.min(keep, messages.length))
        assert.deepStrictEqual(kept, tail.filter((m) => kept.includes(m)))
        assert.isTrue(kept.every((m) => tail.includes(m)))
      })
  )

  it.effect("sliding drops the results whose call fell out of the window", () =>
    Effect.gen(function*() {
      const messages = historyOf([2])
      // prompt, call message, result 0, result 1, reply: keeping 3 keeps result 1 (orphan) and the reply.
      assert.deepStrictEqual(yield* compactWith(Compactor.layerSliding({ keep: 3 }), messages), [messages[4]])
      assert.strictEqual(yield* compactWith(Compactor.layerSliding({ keep: 5 }), messages), messages)
    }))

  it.effect("pruneToolResults elides old results over maxBytes and keeps the recent ones whole", () =>
    Effect.gen(function*() {
      const big = "é".repeat(3000)
      const messages = [
        Message.toolResult({ callId: "a", name: "read", content: big, isError: false }),
        Message.toolResult({ callId: "b", name: "read", content: "small", isError: false }),
        Message.toolResult({ callId: "c", name: "read", content: big, isError: false })
      ]
      assert.deepStrictEqual(yield* compactWith(Compactor.layerPruneToolResults({ keepRecent: 1 }), messages), [
        Message.toolResult({ callId: "a", name: "read", content: "<elided: 6000 bytes>", isError: false }),
        messages[1],
        messages[2]
      ])
      assert.strictEqual(yield* compactWith(Compactor.layerPruneToolResults({ keepRecent: 3 }), messages), messages)
    }))

  it.effect("summarize folds the older turns into one summary message from the model and keeps the recent ones", () =>
    Effect.gen(function*() {
      const { model, recorder } = yield* TestModel.make([TestModel.text("The user asked for three things; two are done.")])
      const messages = historyOf([0, 1, 0, 2])
      const layer = Compactor.layerSummarize({ model, keepRecent: 3, threshold: 10 })
      const compacted = yield* compactWith(layer, messages)
      // The last 3 messages start with tool results: the window moves back to their call.
      const recent = messages.slice(messages.length - 4)
      assert.deepStrictEqual(compacted, [
        Message.user("Summary of the earlier conversation:\n\nThe user asked for three things; two are done."),
        ...recent
      ])
      const [request] = yield* recorder.requests
      assert.strictEqual(request!.system, Compactor.SUMMARY_SYSTEM)
      assert.deepStrictEqual(request!.messages, [...messages.slice(0, messages.length - 4), Message.user(Compactor.SUMMARY_PROMPT)])
      assert.deepStrictEqual(request!.tools, [])
    }))

  it.effect("summarize leaves a history under its threshold alone, and fails typed when the model does", () =>
    Effect.gen(function*() {
      const messages = historyOf([1, 1, 1])
      const quiet = yield* TestModel.make([])
      assert.strictEqual(yield* compactWith(Compactor.layerSummarize({ model: quiet.model, threshold: 1_000 }), messages), messages)
      assert.strictEqual((yield* quiet.recorder.requests).length, 0)
      const failing = yield* TestModel.make([TestModel.error("overloaded")])
      const error = yield* Effect.flip(compactWith(Compactor.layerSummarize({ model: failing.model, keepRecent: 2, threshold: 1 }), messages))
      assert.strictEqual(error.message, "Compaction failed: overloaded")
      assert.strictEqual(error.reason._tag, "ModelFailed")
    }))

  it.effect("summarize fails with the reason EmptySummary when the model's summary is blank", () =>
    Effect.gen(function*() {
      const blank = yield* TestModel.make([TestModel.text("  ")])
      const reason = yield* compactWith(Compactor.layerSummarize({ model: blank.model, keepRecent: 2, threshold: 1 }), historyOf([1, 1, 1])).pipe(
        Effect.flatMap(() => Effect.die("compacted")),
        Effect.catchReason("CompactorError", "EmptySummary", Effect.succeed)
      )
      assert.deepStrictEqual(reason, new Compactor.EmptySummary())
      assert.strictEqual(new Compactor.CompactorError({ reason }).message, "Compaction failed: the model returned an empty summary")
    }))
})

/** `n` one-line exchanges, a prompt then a reply, with nothing to pair. */
const chat = (n: number): ReadonlyArray<Message.Message> =>
  Array.from({ length: n }, (_, i) => i % 2 === 0 ? Message.user(`prompt ${i}`) : Message.assistant([Message.textPart(`reply ${i}`)]))

describe("Compactor defaults (issue 44)", () => {
  it.effect("sliding keeps the last 20 messages", () =>
    Effect.gen(function*() {
      const twenty = chat(20)
      assert.strictEqual(yield* compactWith(Compactor.layerSliding(), twenty), twenty)
      const more = chat(21)
      assert.deepStrictEqual(yield* compactWith(Compactor.layerSliding(), more), more.slice(1))
    }))

  it.effect("pruneToolResults keeps the last 5 results whole and elides older ones over 4,096 bytes", () =>
    Effect.gen(function*() {
      const result = (callId: string, bytes: number) => Message.toolResult({ callId, name: "read", content: "x".repeat(bytes), isError: false })
      // Oldest first: over the bound, at it, then six over it, of which the last five are recent.
      const messages = [result("a", 4097), result("b", 4096), ...["c", "d", "e", "f", "g", "h"].map((id) => result(id, 4097))]
      const elided = (callId: string) => Message.toolResult({ callId, name: "read", content: "<elided: 4097 bytes>", isError: false })
      assert.deepStrictEqual(yield* compactWith(Compactor.layerPruneToolResults(), messages), [elided("a"), messages[1], elided("c"), ...messages.slice(3)])
    }))

  it.effect("summarize folds once the estimate passes 100,000 tokens (characters / 4), keeping the last 10 messages", () =>
    Effect.gen(function*() {
      // The first message carries the bulk: 400,000 characters in all are 100,000 tokens, one more is past it.
      const recent = chat(11).slice(1)
      const recentChars = recent.reduce((total, m) => total + (m._tag === "AssistantMessage" ? Message.text(m) : m.content).length, 0)
      const withTotal = (chars: number) => [Message.user("x".repeat(chars - recentChars)), ...recent]
      const quiet = yield* TestModel.make([])
      const atBound = withTotal(400_000)
      assert.strictEqual(yield* compactWith(Compactor.layerSummarize({ model: quiet.model }), atBound), atBound)
      assert.strictEqual((yield* quiet.recorder.requests).length, 0)
      const { model, recorder } = yield* TestModel.make([TestModel.text("a long prompt")])
      const past = withTotal(400_001)
      assert.deepStrictEqual(yield* compactWith(Compactor.layerSummarize({ model }), past), [
        Message.user("Summary of the earlier conversation:\n\na long prompt"),
        ...past.slice(1)
      ])
      assert.deepStrictEqual((yield* recorder.requests).map((r) => r.messages), [[past[0], Message.user(Compactor.SUMMARY_PROMPT)]])
    }))
})

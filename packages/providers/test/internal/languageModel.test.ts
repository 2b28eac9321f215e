import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { AiError, LanguageModel, type Prompt, type Response, Tool } from "effect/ai"
import * as Condukt from "@condukt/node/Condukt"
import * as History from "@condukt/core/History"
import * as Message from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as Tools from "@condukt/core/Tools"
import * as EffectAi from "../../src/EffectAi.ts"
import * as languageModel from "../../src/internal/languageModel.ts"
import * as Runs from "../agentRuns.ts"

const usage = (input: number, output: number) => ({
  inputTokens: { uncached: input - 4, total: input, cacheRead: 4 },
  outputTokens: { total: output }
})

/** What the hand-written language model saw, request by request. */
interface Seen {
  readonly prompt: Prompt.Prompt
  readonly tools: ReadonlyArray<{ readonly name: string; readonly schema: unknown }>
  readonly toolChoice: unknown
}

/**
 * A hand-written `LanguageModel`: the first request asks for two reads (parameters streamed in
 * pieces, then the whole call), the next answers from the tool results it was given.
 */
const scripted = (seen: Array<Seen>) =>
  LanguageModel.make({
    generateText: () => Effect.succeed([]),
    streamText: (options) => {
      seen.push({
        prompt: options.prompt,
        tools: options.tools.map((tool) => ({ name: tool.name, schema: Tool.getJsonSchema(tool) })),
        toolChoice: options.toolChoice
      })
      const results = options.prompt.content.flatMap((message) =>
        message.role === "tool" ? message.content.flatMap((part) => (part.type === "tool-result" ? [String(part.result)] : [])) : []
      )
      const parts: Array<Response.StreamPartEncoded> = results.length === 0
        ? [
          { type: "reasoning-start", id: "r1" },
          { type: "reasoning-delta", id: "r1", delta: "Both files, in parallel." },
          { type: "reasoning-end", id: "r1" },
          { type: "tool-params-start", id: "call_a", name: "Read" },
          { type: "tool-params-delta", id: "call_a", delta: `{"pa` },
          { type: "tool-params-delta", id: "call_a", delta: `th":"a.txt"}` },
          { type: "tool-params-end", id: "call_a" },
          { type: "tool-call", id: "call_a", name: "Read", params: { path: "a.txt" } },
          { type: "tool-call", id: "call_b", name: "Read", params: { path: "b.txt" } },
          { type: "finish", reason: "tool-calls", usage: usage(40, 12) }
        ]
        : [
          { type: "text-start", id: "t1" },
          { type: "text-delta", id: "t1", delta: "a.txt says alpha; " },
          { type: "text-delta", id: "t1", delta: "b.txt says beta." },
          { type: "text-end", id: "t1" },
          { type: "finish", reason: "stop", usage: usage(90, 9) }
        ]
      return Stream.fromIterable(parts)
    }
  })

const modelFrom = (languageModel: Effect.Effect<LanguageModel.LanguageModel>, options?: EffectAi.Options) =>
  Layer.effect(Model.Model, Effect.map(languageModel, (lm) => EffectAi.fromLanguageModel("custom:scripted-1", lm, options)))

describe("EffectAi.fromLanguageModel", () => {
  it.live("a hand-written effect/ai LanguageModel drives a full agent run with real tools", () =>
    Effect.gen(function*() {
      const seen: Array<Seen> = []
      const events = yield* Runs.streamed(
        Runs.reader("custom:scripted-1", "You read files."),
        modelFrom(scripted(seen)),
        yield* Runs.files,
        "What do a.txt and b.txt say?",
        { modelOptions: { toolChoice: "auto" } }
      )

      assert.strictEqual(Runs.joined(events, "ThinkingDelta"), "Both files, in parallel.")
      assert.deepStrictEqual(Runs.toolCalls(events), [
        ["call_a", { path: "a.txt" }],
        ["call_b", { path: "b.txt" }]
      ])
      const results = events.filter((e) => e._tag === "ToolResult")
      assert.deepStrictEqual(results.map((e) => e.isError), [false, false])
      assert.include(results[0]!.content, "alpha")
      assert.include(results[1]!.content, "beta")
      assert.deepStrictEqual(
        Runs.turnTokens(events),
        [[36, 12, 4], [86, 9, 4]]
      )
      assert.strictEqual(Runs.joined(events, "TextDelta"), "a.txt says alpha; b.txt says beta.")

      // Our tools reached it as their JSON Schema, as they are; the second prompt carries the calls and results.
      assert.deepStrictEqual(seen[0]!.tools, [{ name: "Read", schema: Tools.Read.parameters }])
      assert.strictEqual(seen[0]!.toolChoice, "auto")
      const second = seen[1]!.prompt.content.map((message) => [
        message.role,
        typeof message.content === "string" ? message.content : message.content.map((part) =>
          part.type === "tool-call"
            ? `call ${part.id} ${JSON.stringify(part.params)}`
            : part.type === "tool-result"
            ? `result ${part.id} ${part.isFailure}`
            : part.type === "text" || part.type === "reasoning"
            ? `${part.type} ${part.text}`
            : part.type
        )
      ])
      assert.deepStrictEqual(second, [
        ["system", "You read files."],
        ["user", ["text What do a.txt and b.txt say?"]],
        ["assistant", ["reasoning Both files, in parallel.", `call call_a {"path":"a.txt"}`, `call call_b {"path":"b.txt"}`]],
        ["tool", ["result call_a false", "result call_b false"]]
      ])
    }).pipe(Effect.provide(Condukt.layer)))

  it.effect("its errors become ModelError reasons a retry can read", () =>
    Effect.gen(function*() {
      const failing = LanguageModel.make({
        generateText: () => Effect.succeed([]),
        streamText: () =>
          Stream.fail(AiError.make({
            module: "Custom",
            method: "streamText",
            reason: new AiError.RateLimitError({})
          }))
      })
      const error = yield* Effect.flip(Effect.gen(function*() {
        const model = yield* Model.Model
        return yield* Stream.runCollect(model.stream({ system: undefined, messages: History.fromIterable([Message.user("Hi")]), tools: [] }))
        // Tried once: the test clock would hold the policy's backoff (EffectAi.test.ts retries).
      }).pipe(Effect.provide(modelFrom(failing, { retry: false }))))
      assert.deepStrictEqual([error.reason._tag, error.isRetryable, error.model], ["RateLimited", true, "custom:scripted-1"])
    }))
})

describe("languageModel.toPromptMessages", () => {
  it("a tool result's images, which an effect/ai prompt has no part for, become a notice after its text", () => {
    const image = Message.imagePart("image/png", "iVBORw0KGgo=")
    const messages = languageModel.toPromptMessages(undefined, History.fromIterable([
      Message.toolResult({ callId: "c1", name: "Read", content: "Image a.png (image/png, 8 bytes)", isError: false, images: [image] }),
      Message.toolResult({ callId: "c2", name: "Shots", content: "", isError: false, images: [image, image] })
    ]))
    assert.deepStrictEqual(messages, [{
      role: "tool",
      content: [
        {
          type: "tool-result",
          id: "c1",
          name: "Read",
          isFailure: false,
          result: "Image a.png (image/png, 8 bytes)\n\n(1 image not shown: this model's provider cannot be sent images)"
        },
        { type: "tool-result", id: "c2", name: "Shots", isFailure: false, result: "(2 images not shown: this model's provider cannot be sent images)" }
      ]
    }])
  })
})

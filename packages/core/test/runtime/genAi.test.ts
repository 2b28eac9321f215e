/** genAi: the GenAI semantic conventions' names and attributes for a run's spans, as data. */
import { assert, describe, it } from "@effect/vitest"
import * as GenAi from "../../src/runtime/genAi.ts"

describe("genAi", () => {
  it("names a model request chat <model>, the provider as the conventions spell it", () => {
    assert.deepStrictEqual(GenAi.chat("google:gemini-2.5-pro", "s1"), [
      "chat gemini-2.5-pro",
      {
        kind: "client",
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": "gcp.gemini",
          "gen_ai.request.model": "gemini-2.5-pro",
          "gen_ai.conversation.id": "s1"
        }
      }
    ])
    assert.strictEqual(GenAi.chat("openai:gpt-5", "s1")[1].attributes?.["gen_ai.provider.name"], "openai")
    assert.strictEqual(GenAi.chat("local-model", "s1")[1].attributes?.["gen_ai.provider.name"], "unknown")
  })

  it("gives the request's settings that the conventions name, and none it was not given", () => {
    const attributes = GenAi.chat("openai:gpt-5", "s1", { maxTokens: 1024, temperature: 0.2, topP: 0.9, stopSequences: ["END"] })[1].attributes
    assert.deepStrictEqual(attributes, {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-5",
      "gen_ai.conversation.id": "s1",
      "gen_ai.request.max_tokens": 1024,
      "gen_ai.request.temperature": 0.2,
      "gen_ai.request.top_p": 0.9
    })
  })

  it("counts cached tokens inside input_tokens and apart, and gives no cache attribute without a cache", () => {
    assert.deepStrictEqual(GenAi.replied({ usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 40, cacheWriteTokens: 8 }, finishReason: "stop" }), {
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.usage.input_tokens": 58,
      "gen_ai.usage.output_tokens": 5,
      "gen_ai.usage.cache_read.input_tokens": 40,
      "gen_ai.usage.cache_creation.input_tokens": 8
    })
    assert.deepStrictEqual(GenAi.replied({ usage: { inputTokens: 10, outputTokens: 5 }, finishReason: "length" }), {
      "gen_ai.response.finish_reasons": ["length"],
      "gen_ai.usage.input_tokens": 10,
      "gen_ai.usage.output_tokens": 5
    })
  })

  it("marks a tool call whose result is an error for the model with error.type", () => {
    assert.deepStrictEqual([GenAi.executed({ isError: true }), GenAi.executed({ isError: false })], [{ "error.type": "tool_error" }, {}])
  })
})

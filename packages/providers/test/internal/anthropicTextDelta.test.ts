import { assert, describe, it } from "@effect/vitest"
import type * as Model from "@condukt/core/Model"
import * as Anthropic from "../../src/Anthropic.ts"
import * as anthropicTextDelta from "../../src/internal/anthropicTextDelta.ts"

const delta = (index: string, literal: string) =>
  `{"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":${literal}}}`

/** The parts the decoder makes of `data` as a `content_block_delta` event, and what it failed with. */
const decoded = (data: string) => {
  const out: Array<Model.Part> = []
  const failure = Anthropic.decoder().event({ _tag: "Event", event: "content_block_delta", id: undefined, data }, out)
  return { out, failure: failure?._tag }
}

describe("anthropicTextDelta", () => {
  it("reads the text of a text delta as the whole event's JSON.parse does, escapes and all", () => {
    const literals = [
      JSON.stringify("Hello"),
      JSON.stringify(""),
      JSON.stringify("a \"quoted\" word, a back\\slash, a\nnew line, é ✓ 😀"),
      "\"\\u0041\\u00e9\\ud83d\\ude00\"",
      JSON.stringify("}}\"}}")
    ]
    for (const index of ["0", "7", "12"]) {
      for (const literal of literals) {
        const data = delta(index, literal)
        assert.deepStrictEqual(anthropicTextDelta.textOf(data, Infinity), JSON.parse(data).delta.text)
      }
    }
  })

  it("leaves every other shape to the full parse: more keys, another order, spaces, bad JSON, a number with a leading zero", () => {
    const others = [
      delta("0", "\"a\",\"extra\":{\"x\":\"b\"}"),
      delta("0", "\"a\"}},{\"x\":\"b\""),
      delta("0", "\"a\" "),
      delta("0", "\"a\"\"b\""),
      delta("0", "\"a"),
      delta("0", "\"unescaped \" quote\""),
      delta("0", "1"),
      delta("0", "null"),
      delta("01", "\"a\""),
      delta("-1", "\"a\""),
      delta("1234567", "\"a\""),
      delta("", "\"a\""),
      "{\"index\":0,\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}",
      "{\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"a\"}}",
      "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"a\"}}"
    ]
    assert.deepStrictEqual(others.map((data) => anthropicTextDelta.textOf(data, Infinity)), others.map(() => undefined))
  })

  it("leaves an event longer than the bound to the full parse", () => {
    const data = delta("0", JSON.stringify("x".repeat(100)))
    assert.deepStrictEqual([anthropicTextDelta.textOf(data, data.length), anthropicTextDelta.textOf(data, data.length - 1)], ["x".repeat(100), undefined])
  })

  it("decodes what the fast path leaves as before: extra keys kept out, broken JSON refused", () => {
    assert.deepStrictEqual(
      [decoded(delta("0", "\"a\",\"extra\":1")), decoded(delta("0", "\"a\"")), decoded(delta("0", "\"a")), decoded(delta("01", "\"a\""))],
      [
        { out: [{ _tag: "TextDelta", text: "a" }], failure: undefined },
        { out: [{ _tag: "TextDelta", text: "a" }], failure: undefined },
        { out: [], failure: "ProviderFailed" },
        { out: [], failure: "ProviderFailed" }
      ]
    )
  })
})

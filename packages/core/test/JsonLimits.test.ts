import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as JsonLimits from "../src/JsonLimits.ts"

const nestedText = (depth: number) => "[".repeat(depth) + "]".repeat(depth)
const nested = (depth: number): unknown => JSON.parse(nestedText(depth))
const failure = <A>(result: Result.Result<A, JsonLimits.JsonLimitError>) =>
  Result.isFailure(result) ? [result.failure.reason, result.failure.message] : ["Success"]

const TOO_DEEP = ["TooDeep", "JsonLimits: the value holds more than 64 levels of nesting"]

describe("JsonLimits", () => {
  it("takes nesting up to MAX_DEPTH and refuses one level more, as text and as a value", () => {
    assert.deepStrictEqual(failure(JsonLimits.parse(nestedText(JsonLimits.MAX_DEPTH))), ["Success"])
    assert.deepStrictEqual(failure(JsonLimits.parse(nestedText(JsonLimits.MAX_DEPTH + 1))), TOO_DEEP)
    assert.strictEqual(JsonLimits.check(nested(JsonLimits.MAX_DEPTH)), undefined)
    assert.deepStrictEqual(JsonLimits.check(nested(JsonLimits.MAX_DEPTH + 1))?.message, TOO_DEEP[1])
  })

  it("refuses 1,000,000 levels without overflowing its stack, brackets inside strings not counted", () => {
    assert.deepStrictEqual(failure(JsonLimits.parse(nestedText(1_000_000))), TOO_DEEP)
    assert.strictEqual(JsonLimits.check(nested(1_000_000))?.reason, "TooDeep")
    assert.deepStrictEqual(JsonLimits.parse(JSON.stringify({ text: "[".repeat(1000) })), Result.succeed({ text: "[".repeat(1000) }))
  })

  it("refuses an object past its keys, a string past its characters, a whole past its size; a cycle as too deep", () => {
    const limits = { maxDepth: 64, maxKeys: 2, maxStringChars: 5, maxChars: 40 }
    assert.deepStrictEqual(failure(JsonLimits.parse(`{"a":1,"b":2,"c":3}`, limits)), ["TooManyKeys", "JsonLimits: the value holds an object of more than 2 keys"])
    assert.deepStrictEqual(failure(JsonLimits.parse(`["abcdef"]`, limits)), ["StringTooLong", "JsonLimits: the value holds a string of more than 5 characters"])
    assert.deepStrictEqual(failure(JsonLimits.parse(`[${"1,".repeat(30)}1]`, limits)), ["TooLarge", "JsonLimits: the value holds more than 40 characters of JSON"])
    assert.strictEqual(JsonLimits.check({ abcdef: 1 }, limits)?.reason, "StringTooLong")
    assert.strictEqual(JsonLimits.check(Array.from({ length: 30 }, () => "ab"), limits)?.reason, "TooLarge")
    const cycle: Record<string, unknown> = {}
    cycle["self"] = cycle
    assert.strictEqual(JsonLimits.check(cycle)?.reason, "TooDeep")
  })

  it("says what is not JSON with the parser's own words", () => {
    const result = JsonLimits.parse("{pa")
    assert.deepStrictEqual(Result.isFailure(result) && [result.failure.reason, result.failure.description.startsWith("text that is not JSON (")], ["NotJson", true])
  })

  it("keeps __proto__ as a plain key and lone surrogates as they are", () => {
    const value = JsonLimits.parse(`{"__proto__":{"polluted":true},"s":"\\ud800"}`)
    assert.isTrue(Result.isSuccess(value))
    const parsed = Result.getOrThrow(value) as Record<string, unknown>
    assert.deepStrictEqual([Object.keys(parsed), parsed["s"], Object.getPrototypeOf(parsed) === Object.prototype], [["__proto__", "s"], "\ud800", true])
    assert.strictEqual(({} as { polluted?: boolean }).polluted, undefined)
  })

  it("writes what it reads back: stringify refuses a cycle, a BigInt, a stack-overflowing nesting and one past the bound", () => {
    const cycle: Record<string, unknown> = {}
    cycle["self"] = cycle
    assert.strictEqual(failure(JsonLimits.stringify(cycle))[0], "NotJson")
    assert.strictEqual(failure(JsonLimits.stringify({ n: 1n }))[0], "NotJson")
    assert.deepStrictEqual(failure(JsonLimits.stringify(nested(100_000))), ["TooDeep", "JsonLimits: the value holds more than 128 levels of nesting"])
    assert.deepStrictEqual(failure(JsonLimits.stringify(nested(129))), ["TooDeep", "JsonLimits: the value holds more than 128 levels of nesting"])
    assert.deepStrictEqual(JsonLimits.stringify(nested(128)), Result.succeed(nestedText(128)))
    // An envelope of one (a file around the value): the same value, one level deeper, still fits.
    assert.deepStrictEqual(failure(JsonLimits.parse(`[${nestedText(128)}]`, JsonLimits.stored, 1)), ["Success"])
  })

  it("stands in for refused arguments with a text that says why, and reads it back", () => {
    const error = JsonLimits.check(nested(100))!
    const standIn = JsonLimits.standIn(error)
    assert.strictEqual(standIn, "[refused JSON: the value holds more than 64 levels of nesting]")
    assert.deepStrictEqual([JsonLimits.refusal(standIn), JsonLimits.refusal("[refused JSON"), JsonLimits.refusal({})], [
      "more than 64 levels of nesting",
      undefined,
      undefined
    ])
  })
})

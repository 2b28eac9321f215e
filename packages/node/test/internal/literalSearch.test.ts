/** literalSearch: the text every match must contain, and finding it in raw bytes from its rarest byte. */
import { assert, describe, it } from "@effect/vitest"
import * as LiteralSearch from "../../src/internal/literalSearch.ts"

describe("literalSearch", () => {
  it("literalOf takes the longest run every match contains, or gives up", () => {
    const cases: ReadonlyArray<readonly [string, string | undefined]> = [
      ["createContext", "createContext"],
      ["foo\\.bar", "foo.bar"],
      ["日本語", "日本語"],
      ["x", "x"],
      ["create\\w+Context", "Context"],
      ["function\\s+createContext", "createContext"],
      ["ab*cdef", "cdef"],
      ["abc+d", "abc"],
      ["ab{0,2}cdef", "cdef"],
      ["x{2}yzw", "yzw"],
      ["(a|b)cde", "cde"],
      ["[abc]defg", "defg"],
      ["[a\\]b]cde", "cde"],
      ["foo\\bbar", "foo"],
      ["abcd+?e", "abcd"],
      ["foo|bar", undefined],
      ["\\u0041bcd", undefined],
      ["(x)\\1abc", undefined],
      ["a.b", undefined],
      ["ab?", undefined],
      ["", undefined]
    ]
    for (const [pattern, expected] of cases) assert.strictEqual(LiteralSearch.literalOf(pattern), expected, pattern)
  })

  it("a class opening with ] or holding [:name:] ends where RE2 ends it, not at that inner ]", () => {
    assert.strictEqual(LiteralSearch.literalOf("[]a]bcd"), "bcd")
    assert.strictEqual(LiteralSearch.literalOf("[^]a]bcd"), "bcd")
    assert.strictEqual(LiteralSearch.literalOf("[[:digit:]]abc"), "abc")
    assert.strictEqual(LiteralSearch.literalOf("([[:alpha:])]x)yzw"), "yzw")
  })

  it("make splits at the rarest byte, leaving at least 4 bytes to search for", () => {
    const needle = LiteralSearch.make("createContext")
    assert.strictEqual(needle.head.toString(), "create")
    assert.strictEqual(needle.tail.toString(), "Context")
    assert.strictEqual(needle.length, 13)
    assert.strictEqual(LiteralSearch.make("abc").tail.toString(), "abc")
  })

  it("indexIn finds the whole literal, never its tail alone", () => {
    const needle = LiteralSearch.make("createContext")
    const bytes = Buffer.from("Context; xContext; createContext!")
    assert.strictEqual(LiteralSearch.indexIn(bytes, needle, 0), 19)
    assert.strictEqual(LiteralSearch.indexIn(bytes, needle, 20), -1)
    assert.strictEqual(LiteralSearch.indexIn(Buffer.from("Context"), needle, 0), -1)
  })

  it("gives up on RE2 flag groups, which change the case of the text around them", () => {
    assert.strictEqual(LiteralSearch.literalOf("(?i)hello"), undefined)
    assert.strictEqual(LiteralSearch.literalOf("(?i:x)hello"), undefined)
    assert.strictEqual(LiteralSearch.literalOf("(?:x)hello"), "hello")
    assert.strictEqual(LiteralSearch.literalOf("(?P<name>x)hello"), "hello")
  })

  it("requiredOf takes each word of a plain alternation, and nothing from other alternations", () => {
    assert.deepStrictEqual(LiteralSearch.requiredOf("createContext"), ["createContext"])
    assert.deepStrictEqual(LiteralSearch.requiredOf("useEffect|forwardRef"), ["useEffect", "forwardRef"])
    assert.strictEqual(LiteralSearch.requiredOf("use(Effect)|forwardRef"), undefined)
    assert.strictEqual(LiteralSearch.requiredOf("ab|forwardRef"), undefined)
  })

  it("indexInAny finds the earliest of several literals", () => {
    const needles = ["forwardRef", "useEffect"].map(LiteralSearch.make)
    const bytes = Buffer.from("x useEffect y forwardRef")
    assert.strictEqual(LiteralSearch.indexInAny(bytes, needles, 0), 2)
    assert.strictEqual(LiteralSearch.indexInAny(bytes, needles, 3), 14)
    assert.strictEqual(LiteralSearch.indexInAny(bytes, needles, 15), -1)
  })
})

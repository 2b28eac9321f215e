import { assert, describe, it } from "@effect/vitest"
import * as ToolName from "../src/ToolName.ts"

const safe = (names: ReadonlyArray<string>, charset: ToolName.Charset) => Object.fromEntries(ToolName.safeNames(names, charset))

describe("ToolName", () => {
  it("hashes the UTF-8 bytes with FNV-1a, 32 bits, as 8 hex digits", () => {
    // The published FNV-1a vectors, and a character of two UTF-8 bytes (not one UTF-16 unit).
    assert.deepStrictEqual(["", "a", "foobar", "é"].map(ToolName.hash), ["811c9dc5", "e40c292c", "bf9cf968", "1e9de8c1"])
  })

  it("keeps 1 to 64 characters of the charset: providers take no dot, tools do", () => {
    assert.isTrue(ToolName.isSafe("github_create-issue", "provider"))
    assert.isFalse(ToolName.isSafe("github.create_issue", "provider"))
    assert.isTrue(ToolName.isSafe("github.create_issue", "tool"))
    assert.isTrue(ToolName.isSafe("x".repeat(64), "provider"))
    assert.isFalse(ToolName.isSafe("x".repeat(65), "tool"))
    assert.isFalse(ToolName.isSafe("", "tool"))
  })

  it("replaces other characters by _ and keeps safe names out of the map", () => {
    assert.deepStrictEqual(safe(["github.create_issue", "Read", "github_create_issue_x", "github.create_issue"], "provider"), {
      "github.create_issue": "github_create_issue"
    })
    assert.deepStrictEqual(safe(["fx.a b", "fx.echo", "fx.é"], "tool"), { "fx.a b": "fx.a_b", "fx.é": "fx._" })
  })

  it("gives a provider name a leading _ when it starts with neither a letter nor _ (Gemini refuses 1x)", () => {
    assert.isFalse(ToolName.isSafe("1x", "provider"))
    assert.isFalse(ToolName.isSafe("-x", "provider"))
    assert.isTrue(ToolName.isSafe("_x", "provider"))
    assert.isTrue(ToolName.isSafe("1x", "tool"))
    assert.deepStrictEqual(safe(["1x", "-y", "z"], "provider"), { "1x": "_1x", "-y": "_-y" })
    assert.deepStrictEqual(safe(["1x", "_1x"], "provider"), { "1x": `_1x_${ToolName.hash("1x")}` })
    const long = safe(["9" + "x".repeat(63)], "provider")["9" + "x".repeat(63)]!
    assert.strictEqual(long.length, 64)
    assert.isTrue(ToolName.isSafe(long, "provider"))
  })

  it("adds the hash of the original when the _ form is taken, whatever the order", () => {
    assert.deepStrictEqual(safe(["fx.a b", "fx.a_b"], "tool"), { "fx.a b": "fx.a_b_b2eb8f5c" })
    const both = { "a.b": "a_b_108bf50c", "a b": "a_b_10a3f9f2" }
    assert.deepStrictEqual(safe(["a.b", "a b"], "provider"), both)
    assert.deepStrictEqual(safe(["a b", "a.b"], "provider"), both)
  })

  it("cuts a name over 64 characters to its first 55, _ and the hash", () => {
    assert.deepStrictEqual(safe(["x".repeat(70) + ".b", "srv." + "x".repeat(70)], "provider"), {
      ["x".repeat(70) + ".b"]: "x".repeat(55) + "_67955691",
      ["srv." + "x".repeat(70)]: "srv_" + "x".repeat(51) + "_dba4dd94"
    })
    assert.deepStrictEqual(safe(["srv." + "x".repeat(70)], "tool"), { ["srv." + "x".repeat(70)]: "srv." + "x".repeat(51) + "_dba4dd94" })
  })

  it("names an empty name tool, and counts _2, _3… only when a real name is the hashed one", () => {
    assert.deepStrictEqual(safe([""], "tool"), { "": "tool" })
    assert.deepStrictEqual(safe(["", "tool"], "tool"), { "": "tool_811c9dc5" })
    assert.deepStrictEqual(safe(["a.b", "a_b", "a_b_108bf50c"], "provider"), { "a.b": "a_b_108bf50c_2" })
  })
})

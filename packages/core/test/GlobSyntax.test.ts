/** GlobSyntax: a pattern read as alternatives of segments (literal, `**`, or a name test), and what it refuses. */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as GlobSyntax from "../src/GlobSyntax.ts"

/** Each alternative's segments as text: a literal as itself, `**`, or `?` for a name test. */
const shapes = (pattern: string): Array<Array<string>> =>
  Result.getOrThrow(GlobSyntax.parse(pattern, false)).map((segments) =>
    segments.map((segment) => segment === GlobSyntax.globstar ? "**" : segment.literal ?? "?")
  )

const refusal = (pattern: string): string => Result.getOrThrow(Result.flip(GlobSyntax.parse(pattern, false)))

describe("GlobSyntax", () => {
  it("cuts a pattern into segments: literals, ** (runs merged) and name tests; . and inner empty segments dropped", () => {
    assert.deepStrictEqual(shapes("src/**/**/*.ts"), [["src", "**", "?"]])
    assert.deepStrictEqual(shapes("./a//b/./c"), [["a", "b", "c"]])
    assert.deepStrictEqual(shapes("/etc/passwd"), [["", "etc", "passwd"]])
  })

  it("expands braces, nested and ranges, into one alternative each", () => {
    assert.deepStrictEqual(shapes("{a,b{1..2}}/x"), [["a", "x"], ["b1", "x"], ["b2", "x"]])
    assert.deepStrictEqual(shapes("{x}"), [["{x}"]])
  })

  it("a name test matches one name, a leading dot only when dot is set or the segment starts with one", () => {
    const test = (pattern: string, dot: boolean) => {
      const segment = Result.getOrThrow(GlobSyntax.parse(pattern, dot))[0]![0]!
      return (name: string) => segment !== GlobSyntax.globstar && segment.test(name)
    }
    assert.deepStrictEqual(["a.ts", ".a.ts", "a.tsx"].map(test("*.ts", false)), [true, false, false])
    assert.deepStrictEqual(["a.ts", ".a.ts"].map(test("*.ts", true)), [true, true])
    assert.deepStrictEqual([".env", "env"].map(test(".e*", false)), [true, false])
    assert.deepStrictEqual(["xby", "xay", "xy"].map(test("x!(a)y", false)), [true, false, true])
  })

  it("refuses, in a phrase, too many brace alternatives and a second or nested !(…)", () => {
    assert.strictEqual(refusal("{1..257}"), "more than 256 brace alternatives")
    assert.strictEqual(refusal("!(a)!(b)"), "a path segment may hold one !(…) group, not inside another group")
    assert.strictEqual(refusal("@(!(a))"), "a path segment may hold one !(…) group, not inside another group")
  })
})

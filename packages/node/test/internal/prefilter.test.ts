/** prefilter: which patterns get which byte search, and that no search misses a line RE2 matches. */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as Prefilter from "../../src/internal/prefilter.ts"
import { compilePattern } from "@condukt/core/Sandbox"

/** Where the first candidate in `text` starts, or undefined when the pattern has no prefilter. */
const firstCandidate = (pattern: string, caseSensitive: boolean, text: string): number | undefined =>
  Prefilter.make(pattern, caseSensitive)?.over(Buffer.from(text, "utf8"))(0)

/** The shape of `Prefilter.make`'s answer: no prefilter, or whether it is exact. */
const kind = (pattern: string, caseSensitive = true): string => {
  const prefilter = Prefilter.make(pattern, caseSensitive)
  return prefilter === undefined ? "none" : prefilter.exact ? "exact" : "candidates"
}

describe("prefilter", () => {
  it("reads runs of byte classes, keeping the copies a quantifier requires", () => {
    const lengths = (pattern: string) => {
      const runs = Prefilter.runsOf(pattern)
      return runs === undefined ? undefined : { lengths: runs.runs.map((run) => run.length), exact: runs.exact }
    }
    assert.deepStrictEqual(lengths("[0-9]{4}-[0-9]{2}-[0-9]{2}"), { lengths: [10], exact: true })
    assert.deepStrictEqual(lengths("\\d+\\.\\d+"), { lengths: [1, 3, 1], exact: false })
    assert.deepStrictEqual(lengths("ab?c*d{2,}e"), { lengths: [1, 2, 3], exact: false })
    assert.deepStrictEqual(lengths("x(ab)+y.z^$"), { lengths: [1, 1, 1], exact: false })
    assert.deepStrictEqual(lengths("[^0-9]x[[:digit:]]y[é]z\\sw[]a]"), { lengths: [1, 1, 1, 1], exact: false })
    assert.deepStrictEqual(lengths("né"), { lengths: [3], exact: true })
    assert.deepStrictEqual(lengths("ab\uFFFDcd\uD800ef"), { lengths: [2, 2, 2], exact: false })
    assert.strictEqual(lengths("a|b"), undefined)
    assert.strictEqual(lengths("(?i)abc"), undefined)
    assert.strictEqual(lengths("\\pLabc"), undefined)
    assert.strictEqual(lengths("\\Qa.b\\E"), undefined)
  })

  it("chooses a literal, a folded literal, a class run or nothing, and says when RE2 may be skipped", () => {
    assert.strictEqual(kind("createContext"), "exact")
    assert.strictEqual(kind("useEffect|forwardRef"), "exact")
    assert.strictEqual(kind("create\\w+Context"), "candidates")
    assert.strictEqual(kind("[0-9]{4}-[0-9]{2}-[0-9]{2}"), "exact")
    assert.strictEqual(kind("^[0-9]{4}-[0-9]{2}"), "candidates")
    assert.strictEqual(kind("[0-9]+"), "none")
    assert.strictEqual(kind("effect", false), "exact")
    assert.strictEqual(kind("(?i)effect"), "exact")
    assert.strictEqual(kind("use(Effect|State)", false), "none")
    assert.strictEqual(kind("a.*b"), "none")
  })

  it("finds a class run by its rarest byte and checks the classes around it", () => {
    const date = "[0-9]{4}-[0-9]{2}-[0-9]{2}"
    assert.strictEqual(firstCandidate(date, true, "a-b 12-34-56 on 2024-01-02"), 16)
    assert.strictEqual(firstCandidate(date, true, "2024-01-0"), -1)
    assert.strictEqual(firstCandidate(date, true, "024-01-02"), -1)
  })

  it("folds ASCII case, never misses RE2's non-ASCII folds of k and s, and gives up on other non-ASCII", () => {
    assert.strictEqual(firstCandidate("effect", false, "x EfFeCt"), 2)
    // RE2 folds k with U+212A KELVIN SIGN and s with U+017F LONG S: only the rest of the word is searched.
    assert.strictEqual(kind("kelvin", false), "candidates")
    assert.strictEqual(firstCandidate("kelvin", false, "\u212AELVIN"), 3)
    assert.strictEqual(kind("ask", false), "none")
    // ß folds with U+1E9E, ǅ with Ǆ and ǆ: no ASCII search can stand for them.
    assert.strictEqual(kind("straße", false), "candidates")
    assert.strictEqual(firstCandidate("straße", false, "STRA\u1E9EE"), 1)
    assert.strictEqual(kind("ǅ", false), "none")
  })

  it("never misses a line RE2 matches, and with an exact prefilter finds only those", () => {
    const lines = [
      "createContext(null)",
      "CREATECONTEXT",
      "const d = '2024-01-02'",
      "2024-1-02 12-34-5678",
      "\u212Aelvin and \u017Ftra\u00DFe",
      "STRA\u1E9EE \u01C4 \u01C6",
      "useEffect(() => {}) // forwardRef",
      "x\ty 10.5 \u00E9t\u00E9",
      "aaaa-bb"
    ]
    const patterns: ReadonlyArray<readonly [string, boolean]> = [
      ["createContext", true],
      ["createcontext", false],
      ["[0-9]{4}-[0-9]{2}-[0-9]{2}", true],
      ["[0-9]+-[0-9]{2}", true],
      ["\\d+\\.\\d", true],
      ["kelvin", false],
      ["ſtraße", false],
      ["straße", false],
      ["ǅ", false],
      ["useEffect|forwardRef", true],
      ["USEEFFECT|FORWARDREF", false],
      ["été", true],
      ["x\\ty", true],
      ["[a-c]{4}-b", true]
    ]
    for (const [pattern, caseSensitive] of patterns) {
      const line = Result.getOrThrow(compilePattern(pattern, caseSensitive))
      const prefilter = Prefilter.make(pattern, caseSensitive)
      for (const text of lines) {
        const candidate = prefilter === undefined || prefilter.over(Buffer.from(text, "utf8"))(0) !== -1
        const matches = line.test(text)
        const label = `${pattern} (${caseSensitive ? "case-sensitive" : "case-insensitive"}) on ${text}`
        if (matches) assert.isTrue(candidate, label)
        if (prefilter?.exact === true) assert.strictEqual(candidate, matches, label)
      }
    }
  })
})

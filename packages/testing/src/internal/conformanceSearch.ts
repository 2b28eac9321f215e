/**
 * conformanceSearch — the glob and grep parts of the sandbox conformance suite.
 */
import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import { dialectHint, globTree, grepTree, matchesOf, outcome, seed, type Suite, unsafePatterns } from "./conformance.ts"

export const register = ({ capabilities, notSupported, test }: Suite): void => {
  describe("glob", () => {
    if (!capabilities.glob) return notSupported("glob", (sandbox) => sandbox.glob("**/*"))

    test("returns files only, sorted, dotfiles included, relative to its cwd", (sandbox) =>
      Effect.gen(function*() {
        yield* seed(sandbox, globTree)
        assert.deepStrictEqual(yield* sandbox.glob("**/*.ts"), [
          ".hidden/d.ts",
          "src/.dot.ts",
          "src/a.ts",
          "src/b.ts",
          "src/nested/c.ts"
        ])
        assert.deepStrictEqual(yield* sandbox.glob("src/*"), ["src/.dot.ts", "src/a.ts", "src/b.ts"])
        assert.deepStrictEqual(yield* sandbox.glob("**/*.ts", { cwd: "src" }), [
          ".dot.ts",
          "a.ts",
          "b.ts",
          "nested/c.ts"
        ])
        assert.deepStrictEqual(yield* sandbox.glob("**/*.rs"), [])
      }))

    test("stops at limit, keeping the first paths in sorted order", (sandbox) =>
      Effect.gen(function*() {
        yield* seed(sandbox, globTree)
        assert.deepStrictEqual(yield* sandbox.glob("**/*.ts", { limit: 2 }), [".hidden/d.ts", "src/.dot.ts"])
      }))

    test("treats shell syntax in a pattern as text: nothing matches, nothing runs", (sandbox) =>
      Effect.gen(function*() {
        yield* seed(sandbox, globTree)
        const tree = Object.keys(globTree).sort()
        assert.deepStrictEqual(yield* sandbox.glob("**/*"), tree)
        for (const pattern of unsafePatterns) {
          assert.deepStrictEqual(yield* outcome(sandbox.glob(pattern)), { success: [] }, pattern)
        }
        assert.deepStrictEqual(yield* sandbox.glob("**/*"), tree)
        assert.deepStrictEqual(yield* sandbox.glob("**/pwned"), [])
      }))

    test("matches a hostile pattern in linear time and refuses brace explosions", (sandbox) =>
      Effect.gen(function*() {
        const name = "a".repeat(60)
        yield* sandbox.writeFile(`hostile/${name}`, "x")
        assert.deepStrictEqual(yield* sandbox.glob("*a*a*a*a*a*a*a*ab", { cwd: "hostile" }), [])
        assert.deepStrictEqual(yield* sandbox.glob("*a*a*a*a*a*a*a*a", { cwd: "hostile" }), [name])
        for (const pattern of ["{a,b}".repeat(22), "{1..10000000}", "x/{1..10000000}/*"]) {
          assert.deepStrictEqual(yield* outcome(sandbox.glob(pattern)), {
            reason: "InvalidPattern",
            message: `Invalid pattern ${pattern}: more than 256 brace alternatives`
          })
        }
      }))
  })

  describe("grep", () => {
    if (!capabilities.grep) return notSupported("grep", (sandbox) => sandbox.grep("alpha"))

    test("reports each matching line with its path and line number, hidden files skipped", (sandbox) =>
      Effect.gen(function*() {
        yield* seed(sandbox, grepTree)
        assert.deepStrictEqual(yield* matchesOf(sandbox, "alpha"), [
          { path: "src/a.ts", lineNumber: 3, line: "alpha()" },
          { path: "src/b.md", lineNumber: 1, line: "alpha in markdown" }
        ])
        assert.deepStrictEqual(yield* matchesOf(sandbox, "^const \\w+ = \\d$"), [
          { path: "src/a.ts", lineNumber: 1, line: "const Alpha = 1" },
          { path: "src/a.ts", lineNumber: 2, line: "const beta = 2" }
        ])
        assert.deepStrictEqual(yield* matchesOf(sandbox, "absent"), [])
      }))

    test("searches only the files the glob filter admits", (sandbox) =>
      Effect.gen(function*() {
        yield* seed(sandbox, grepTree)
        assert.deepStrictEqual(yield* matchesOf(sandbox, "alpha", { glob: "**/*.md" }), [
          { path: "src/b.md", lineNumber: 1, line: "alpha in markdown" }
        ])
      }))

    test("ignores case when caseSensitive is false", (sandbox) =>
      Effect.gen(function*() {
        yield* seed(sandbox, grepTree)
        assert.deepStrictEqual(yield* matchesOf(sandbox, "ALPHA", { caseSensitive: false }), [
          { path: "src/a.ts", lineNumber: 1, line: "const Alpha = 1" },
          { path: "src/a.ts", lineNumber: 3, line: "alpha()" },
          { path: "src/b.md", lineNumber: 1, line: "alpha in markdown" }
        ])
        assert.deepStrictEqual(yield* matchesOf(sandbox, "ALPHA"), [])
      }))

    test("stops at limit", (sandbox) =>
      Effect.gen(function*() {
        yield* seed(sandbox, grepTree)
        assert.deepStrictEqual(yield* matchesOf(sandbox, "alpha", { caseSensitive: false, limit: 2 }), [
          { path: "src/a.ts", lineNumber: 1, line: "const Alpha = 1" },
          { path: "src/a.ts", lineNumber: 3, line: "alpha()" }
        ])
      }))

    test("searches under path, a directory or a file, reporting paths relative to the sandbox cwd", (sandbox) =>
      Effect.gen(function*() {
        yield* seed(sandbox, grepTree)
        assert.deepStrictEqual(yield* matchesOf(sandbox, "beta", { path: "src" }), [
          { path: "src/a.ts", lineNumber: 2, line: "const beta = 2" }
        ])
        assert.deepStrictEqual(yield* matchesOf(sandbox, "alpha", { path: "src/b.md" }), [
          { path: "src/b.md", lineNumber: 1, line: "alpha in markdown" }
        ])
      }))

    test("fails with InvalidPattern for a pattern RE2 refuses, saying what RE2 accepts", (sandbox) =>
      Effect.gen(function*() {
        const refused = (pattern: string, why: string) => ({
          reason: "InvalidPattern",
          message: `Invalid pattern ${pattern}: ${why}. ${dialectHint}.`
        })
        assert.deepStrictEqual(yield* outcome(sandbox.grep("(unclosed")), refused("(unclosed", "missing closing ): `(unclosed`"))
        assert.deepStrictEqual(
          yield* outcome(sandbox.grep("foo(?=bar)")),
          refused("foo(?=bar)", "invalid or unsupported Perl syntax: `(?=`")
        )
        assert.deepStrictEqual(yield* outcome(sandbox.grep("(a)\\1")), refused("(a)\\1", "invalid escape sequence: `\\1`"))
        assert.deepStrictEqual(
          yield* outcome(sandbox.grep("x".repeat(4097))),
          refused("x".repeat(4097), "the pattern is longer than 4096 characters")
        )
      }))

    test("matches a catastrophic-backtracking pattern in linear time", (sandbox) =>
      Effect.gen(function*() {
        // On a backtracking engine the first line alone takes minutes (2^35 ways to fail).
        yield* sandbox.writeFile("redos.txt", `${"a".repeat(35)}!\n${"a".repeat(35)}\n`)
        assert.deepStrictEqual(yield* matchesOf(sandbox, "^(a+)+$", { path: "redos.txt" }), [
          { path: "redos.txt", lineNumber: 2, line: "a".repeat(35) }
        ])
      }))

    test("filters with a hostile glob in linear time and refuses brace explosions", (sandbox) =>
      Effect.gen(function*() {
        yield* sandbox.writeFile(`hostile/${"a".repeat(60)}`, "x\n")
        assert.deepStrictEqual(yield* matchesOf(sandbox, "x", { path: "hostile", glob: "*a*a*a*a*a*a*a*ab" }), [])
        for (const glob of ["{a,b}".repeat(22), "{1..10000000}"]) {
          assert.deepStrictEqual(yield* outcome(sandbox.grep("x", { glob })), {
            reason: "InvalidPattern",
            message: `Invalid pattern ${glob}: more than 256 brace alternatives`
          })
        }
      }))

    test("matches a line longer than 1 MiB on its first 1 MiB, and goes on after it", (sandbox) =>
      Effect.gen(function*() {
        const head = "needle " + "x".repeat(1024 * 1024)
        yield* sandbox.writeFile("long.txt", `${head}needle at the end\nneedle\n`)
        const matches = yield* matchesOf(sandbox, "needle", { path: "long.txt" })
        assert.deepStrictEqual(matches.map((m) => [m.lineNumber, m.line.length]), [[1, 1024 * 1024], [2, 6]])
        assert.deepStrictEqual(yield* matchesOf(sandbox, "at the end", { path: "long.txt" }), [])
      }))
  })
}

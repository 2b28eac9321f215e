/** globPattern: what a compiled pattern matches, where the walk starts, and where it goes. */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as GlobPattern from "../../src/internal/globPattern.ts"

const compile = (pattern: string, dot = true) => Result.getOrThrow(GlobPattern.compile(pattern, { dot }))

const matching = (pattern: string, paths: ReadonlyArray<string>, dot = true) =>
  paths.filter(compile(pattern, dot).test)

const paths = ["a.ts", ".env", "src/b.ts", "src/.c.ts", "src/d/e.tsx", ".git/config", "x;y", "$(rm -rf )"]

describe("globPattern", () => {
  it("* and ? stay inside one segment; ** spans any depth, none included", () => {
    assert.deepStrictEqual(matching("*.ts", paths), ["a.ts"])
    assert.deepStrictEqual(matching("src/?.ts", paths), ["src/b.ts"])
    assert.deepStrictEqual(matching("**/*.ts", paths), ["a.ts", "src/b.ts", "src/.c.ts"])
    assert.deepStrictEqual(matching("src/**", paths), ["src/b.ts", "src/.c.ts", "src/d/e.tsx"])
    assert.deepStrictEqual(matching("**", paths), paths)
  })

  it("with dot false, wildcards skip names starting with a dot unless the pattern names one", () => {
    assert.deepStrictEqual(matching("**/*", paths, false), ["a.ts", "src/b.ts", "src/d/e.tsx", "x;y", "$(rm -rf )"])
    assert.deepStrictEqual(matching(".git/*", paths, false), [".git/config"])
    assert.deepStrictEqual(matching("src/.*", paths, false), ["src/.c.ts"])
  })

  it("braces, classes and escapes", () => {
    assert.deepStrictEqual(matching("**/*.{ts,tsx}", paths), ["a.ts", "src/b.ts", "src/.c.ts", "src/d/e.tsx"])
    assert.deepStrictEqual(matching("src/[a-c].ts", paths), ["src/b.ts"])
    assert.deepStrictEqual(matching("src/[!b].ts", paths), [])
    assert.deepStrictEqual(matching("\\*.ts", ["*.ts", "a.ts"]), ["*.ts"])
    assert.deepStrictEqual(matching("{x}", ["x", "{x}"]), ["{x}"])
  })

  it("shell syntax is literal text", () => {
    assert.deepStrictEqual(matching("x;y", paths), ["x;y"])
    assert.deepStrictEqual(matching("$(rm -rf )", paths), ["$(rm -rf )"])
    assert.deepStrictEqual(matching("`touch pwned`", paths), [])
  })

  it("starts the walk at the literal directories every alternative shares", () => {
    assert.strictEqual(compile("src/lib/**/*.ts").base, "src/lib")
    assert.strictEqual(compile("./src/*.ts").base, "src")
    assert.strictEqual(compile("{src,test}/*.ts").base, "")
    assert.strictEqual(compile("src/{a,b}/*.ts").base, "src")
    assert.strictEqual(compile("*.ts").base, "")
  })

  it("enters only directories that can hold a match", () => {
    const shallow = compile("src/*.ts", false)
    assert.deepStrictEqual(["src", "src/d", ".git"].map(shallow.enters), [true, false, false])
    const deep = compile("**/*.ts", false)
    assert.deepStrictEqual(["src", "src/d/e/f", ".git", "src/.cache"].map(deep.enters), [true, true, false, false])
    assert.deepStrictEqual([".git", "src/.cache"].map(compile("**/*.ts", true).enters), [true, true])
  })

  it("refuses more than 256 brace alternatives", () => {
    const pattern = "{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}"
    assert.deepStrictEqual(GlobPattern.compile(pattern, { dot: true }), Result.fail("more than 256 brace alternatives"))
  })
})

/** GlobPattern: what a pattern matches, where a walk starts, which directories it enters, what it refuses. */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as GlobPattern from "../src/GlobPattern.ts"

const compile = (pattern: string, dot = false) => Result.getOrThrow(GlobPattern.make(pattern, { dot }))

/** The state a walk reaches in directory `path`, entering its names one by one from the root. */
const stateAt = (glob: GlobPattern.GlobPattern, path: string): GlobPattern.State | undefined =>
  path === ""
    ? glob.root
    : path.split("/").reduce<GlobPattern.State | undefined>(
      (state, name) => state === undefined ? undefined : glob.enter(state, name),
      glob.root
    )

/** Whether a walk would reach `path` and admit it. */
const admits = (pattern: string, path: string, dot = false): boolean => {
  const glob = compile(pattern, dot)
  const slash = path.lastIndexOf("/")
  const state = stateAt(glob, path.slice(0, Math.max(slash, 0)))
  return state !== undefined && glob.matches(state, path.slice(slash + 1))
}

const enters = (pattern: string, dot: boolean) => (path: string): boolean =>
  stateAt(compile(pattern, dot), path) !== undefined

const matching = (pattern: string, paths: ReadonlyArray<string>, dot = true) =>
  paths.filter((path) => admits(pattern, path, dot))

const paths = ["a.ts", ".env", "src/b.ts", "src/.c.ts", "src/d/e.tsx", ".git/config", "x;y", "$(rm -rf )"]

describe("GlobPattern", () => {
  it("* and ? stay inside one segment; ** spans any depth, none included", () => {
    assert.deepStrictEqual(matching("*.ts", paths), ["a.ts"])
    assert.deepStrictEqual(matching("src/?.ts", paths), ["src/b.ts"])
    assert.deepStrictEqual(matching("**/*.ts", paths), ["a.ts", "src/b.ts", "src/.c.ts"])
    assert.deepStrictEqual(matching("src/**", paths), ["src/b.ts", "src/.c.ts", "src/d/e.tsx"])
    assert.deepStrictEqual(matching("**", paths), paths)
    assert.isTrue(admits("a/**/b", "a/b"))
    assert.isTrue(admits("a/**/**/b", "a/x/y/b"))
  })

  it("**/* admits every file at any depth except dot entries, by default", () => {
    const tree = ["a.ts", "src/deep/er/x.md", ".env", ".git/config", "src/.cache/x"]
    assert.deepStrictEqual(matching("**/*", tree, false), ["a.ts", "src/deep/er/x.md"])
    assert.isTrue(admits("**", "src/x"))
  })

  it("a pattern without a slash matches at the top only, as fast-glob does", () => {
    assert.deepStrictEqual(matching("*.ts", ["a.ts", "src/a.ts"], false), ["a.ts"])
    assert.isFalse(enters("*.ts", false)("src"))
  })

  it("with dot false, wildcards skip names starting with a dot unless the pattern names one", () => {
    assert.deepStrictEqual(matching("**/*", paths, false), ["a.ts", "src/b.ts", "src/d/e.tsx", "x;y", "$(rm -rf )"])
    assert.deepStrictEqual(matching(".git/*", paths, false), [".git/config"])
    assert.deepStrictEqual(matching("src/.*", paths, false), ["src/.c.ts"])
    assert.isTrue(admits(".github/**/*.yml", ".github/workflows/ci.yml"))
    assert.deepStrictEqual(matching(".*", [".env", "env"], false), [".env"])
    assert.isFalse(admits("a/**/b", "a/.x/b"))
  })

  it("braces, nested ones too, classes, ? and escapes", () => {
    assert.deepStrictEqual(matching("**/*.{ts,tsx}", paths), ["a.ts", "src/b.ts", "src/.c.ts", "src/d/e.tsx"])
    assert.deepStrictEqual(matching("src/[a-c].ts", paths), ["src/b.ts"])
    assert.deepStrictEqual(matching("src/[!b].ts", paths), [])
    assert.deepStrictEqual(matching("\\*.ts", ["*.ts", "a.ts"]), ["*.ts"])
    assert.deepStrictEqual(matching("{x}", ["x", "{x}"]), ["{x}"])
    assert.isTrue(admits("{src,test}/*.ts", "test/a.ts"))
    assert.deepStrictEqual(matching("**/*.{md,ts}", ["docs/x.md", "docs/x.js"], false), ["docs/x.md"])
    assert.isTrue(admits("**/*.{m{d,dx},ts}", "docs/x.mdx"))
    assert.isTrue(admits("[ab].ts", "b.ts"))
    assert.deepStrictEqual(matching("[!ab].ts", ["b.ts", "c.ts"], false), ["c.ts"])
    assert.deepStrictEqual(matching("[^ab].ts", ["a.ts", "c.ts"], false), ["c.ts"])
    assert.deepStrictEqual(matching("[]a-]", ["]", "-", "b"], false), ["]", "-"])
    assert.deepStrictEqual(matching("?.ts", ["c.ts", "cc.ts"], false), ["c.ts"])
    assert.deepStrictEqual(matching("\\*.ts", ["*.ts", "a.ts"], false), ["*.ts"])
    assert.deepStrictEqual(matching("{x}.ts", ["{x}.ts", "x.ts"], false), ["{x}.ts"])
    assert.isTrue(admits("[", "["))
  })

  it("reads extglobs, ranges and POSIX classes as Node's path.matchesGlob does", () => {
    assert.deepStrictEqual(matching("*.+(ts|js)", ["a.js", "a.md", "a.tsjs"], false), ["a.js", "a.tsjs"])
    assert.isFalse(admits("**/*.+(ts|js)", ".hidden/a.ts"))
    assert.deepStrictEqual(matching("*.?(ts)", ["a.", "a.ts", "a.tsts"]), ["a.", "a.ts"])
    assert.deepStrictEqual(matching("*.*(ts)", ["a.", "a.tsts", "a.js"]), ["a.", "a.tsts"])
    assert.deepStrictEqual(matching("*.@(ts|md)", ["a.ts", "a.md", "a.tsmd"]), ["a.ts", "a.md"])
    assert.deepStrictEqual(matching("+(a|@(b|c))x", ["abcx", "x", "adx"]), ["abcx"])
    assert.deepStrictEqual(matching("!(b).ts", ["a.ts", "b.ts", "bb.ts", ".a.ts"], false), ["a.ts", "bb.ts"])
    assert.deepStrictEqual(matching("*.!(ts)", ["a.js", "a.ts", "a.tsx"]), ["a.js", "a.tsx"])
    assert.deepStrictEqual(matching("a!(b)c", ["abc", "axc", "ac"]), ["axc", "ac"])
    assert.isTrue(admits("f{1..3}.txt", "f2.txt"))
    assert.deepStrictEqual(matching("f{1..10..3}", ["f1", "f4", "f5", "f10"]), ["f1", "f4", "f10"])
    assert.deepStrictEqual(matching("f{01..03}", ["f02", "f2"]), ["f02"])
    assert.deepStrictEqual(matching("f{c..a}", ["fa", "fb", "fd"]), ["fa", "fb"])
    assert.deepStrictEqual(matching("[[:alpha:]][[:digit:]]", ["a1", "é2", "1a", "[1"]), ["a1", "é2"])
  })

  it("treats shell syntax, a leading ! and unclosed groups as literal text", () => {
    assert.deepStrictEqual(matching("x;y", paths), ["x;y"])
    assert.deepStrictEqual(matching("$(rm -rf )", paths), ["$(rm -rf )"])
    assert.deepStrictEqual(matching("`touch pwned`", paths), [])
    assert.deepStrictEqual(matching("!*.ts", ["a.ts", "!a.ts"]), ["!a.ts"])
    assert.deepStrictEqual(matching("@(a", ["a", "@(a"]), ["@(a"])
  })

  it("ignores ./ and . segments; a leading / matches no relative path", () => {
    assert.isTrue(admits("./src/*.ts", "src/a.ts"))
    assert.isTrue(admits("src/./*.ts", "src/a.ts"))
    assert.isFalse(admits("/src/*.ts", "src/a.ts"))
    assert.deepStrictEqual(matching("", paths), [])
  })

  it("starts the walk at the literal directories every alternative shares", () => {
    assert.strictEqual(compile("src/lib/**/*.ts").base, "src/lib")
    assert.strictEqual(compile("./src/*.ts").base, "src")
    assert.strictEqual(compile("{src,test}/*.ts").base, "")
    assert.strictEqual(compile("src/{a,b}/*.ts").base, "src")
    assert.strictEqual(compile("*.ts").base, "")
    assert.strictEqual(compile("../../opt/*.ts").base, "../../opt")
    assert.strictEqual(compile("a\\*b/*.ts").base, "a*b")
    assert.strictEqual(compile("@(src)/*.ts").base, "")
  })

  it("prunes directories that cannot hold a match", () => {
    const glob = compile("src/**/*.ts")
    assert.isUndefined(glob.enter(glob.root, "lib"))
    const src = glob.enter(glob.root, "src")
    assert.isDefined(src)
    assert.isDefined(glob.enter(src!, "deep"))
    assert.deepStrictEqual(
      matching("src/**/*.ts", ["src/a.ts", "src/a/b/c.ts", "src/a.md", "lib/a.ts"], false),
      ["src/a.ts", "src/a/b/c.ts"]
    )
    assert.deepStrictEqual(["src", "lib"].map(enters("@(src|test)/**/*.+(ts|js)", false)), [true, false])
  })

  it("enters only directories that can hold a match", () => {
    assert.deepStrictEqual(["src", "src/d", ".git"].map(enters("src/*.ts", false)), [true, false, false])
    assert.deepStrictEqual(
      ["src", "src/d/e/f", ".git", "src/.cache"].map(enters("**/*.ts", false)),
      [true, true, false, false]
    )
    assert.deepStrictEqual([".git", "src/.cache"].map(enters("**/*.ts", true)), [true, true])
  })

  it("refuses more than 256 brace alternatives, a class range out of order, two !(…) and a pattern too large", () => {
    assert.deepStrictEqual(
      GlobPattern.make("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", { dot: true }),
      Result.fail("more than 256 brace alternatives")
    )
    assert.deepStrictEqual(GlobPattern.make("f{1..1000}"), Result.fail("more than 256 brace alternatives"))
    assert.deepStrictEqual(GlobPattern.make("{a,b}".repeat(22)), Result.fail("more than 256 brace alternatives"))
    assert.deepStrictEqual(GlobPattern.make("x/{1..10000000}/*"), Result.fail("more than 256 brace alternatives"))
    assert.deepStrictEqual(GlobPattern.make("src/[c-a].ts"), Result.fail("invalid character class range"))
    const oneNegation = "a path segment may hold one !(…) group, not inside another group"
    assert.deepStrictEqual(GlobPattern.make("!(a)".repeat(2)), Result.fail(oneNegation))
    assert.deepStrictEqual(GlobPattern.make("@(x|!(a))"), Result.fail(oneNegation))
    assert.isTrue(Result.isSuccess(GlobPattern.make("!(a)/!(b)")))
    assert.deepStrictEqual(GlobPattern.make("?".repeat(20_000)), Result.fail("the pattern is too large"))
  })
})

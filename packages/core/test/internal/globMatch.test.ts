/** globMatch: fast-glob's common syntax as a walk-time automaton, and pruning of directories. */
import { assert, describe, it } from "@effect/vitest"
import * as GlobMatch from "../../src/internal/globMatch.ts"

/** Whether the walk would reach `path` and admit it, entering its directories one by one. */
const admits = (pattern: string, path: string): boolean => {
  const glob = GlobMatch.make(pattern)
  const segments = path.split("/")
  let state: GlobMatch.State | undefined = glob.root
  for (const directory of segments.slice(0, -1)) {
    state = glob.enter(state, directory)
    if (state === undefined) return false
  }
  return glob.matches(state, segments.at(-1)!, path)
}

describe("globMatch", () => {
  it("**/* admits every file at any depth except dot entries", () => {
    assert.isTrue(admits("**/*", "a.ts"))
    assert.isTrue(admits("**/*", "src/deep/er/x.md"))
    assert.isFalse(admits("**/*", ".env"))
    assert.isFalse(admits("**/*", ".git/config"))
    assert.isFalse(admits("**/*", "src/.cache/x"))
    assert.isTrue(admits("**", "src/x"))
  })

  it("a pattern without a slash matches at the top only, as fast-glob does", () => {
    assert.isTrue(admits("*.ts", "a.ts"))
    assert.isFalse(admits("*.ts", "src/a.ts"))
    assert.isUndefined(GlobMatch.make("*.ts").enter(GlobMatch.make("*.ts").root, "src"))
  })

  it("prunes directories that cannot hold a match", () => {
    const glob = GlobMatch.make("src/**/*.ts")
    assert.isUndefined(glob.enter(glob.root, "lib"))
    const src = glob.enter(glob.root, "src")
    assert.isDefined(src)
    assert.isDefined(glob.enter(src!, "deep"))
    assert.isTrue(admits("src/**/*.ts", "src/a.ts"))
    assert.isTrue(admits("src/**/*.ts", "src/a/b/c.ts"))
    assert.isFalse(admits("src/**/*.ts", "src/a.md"))
    assert.isFalse(admits("src/**/*.ts", "lib/a.ts"))
  })

  it("expands braces, nested ones too, and reads classes, ? and escapes", () => {
    assert.isTrue(admits("{src,test}/*.ts", "test/a.ts"))
    assert.isTrue(admits("**/*.{md,ts}", "docs/x.md"))
    assert.isTrue(admits("**/*.{m{d,dx},ts}", "docs/x.mdx"))
    assert.isFalse(admits("**/*.{md,ts}", "docs/x.js"))
    assert.isTrue(admits("[ab].ts", "b.ts"))
    assert.isFalse(admits("[!ab].ts", "b.ts"))
    assert.isTrue(admits("[!ab].ts", "c.ts"))
    assert.isTrue(admits("?.ts", "c.ts"))
    assert.isFalse(admits("?.ts", "cc.ts"))
    assert.isTrue(admits("\\*.ts", "*.ts"))
    assert.isFalse(admits("\\*.ts", "a.ts"))
    assert.isTrue(admits("{x}.ts", "{x}.ts"))
  })

  it("names dot entries explicitly", () => {
    assert.isTrue(admits(".github/**/*.yml", ".github/workflows/ci.yml"))
    assert.isTrue(admits(".*", ".env"))
    assert.isFalse(admits(".*", "env"))
    assert.isTrue(admits("./src/*.ts", "src/a.ts"))
  })

  it("falls back to path.matchesGlob for extglobs, ranges and negation", () => {
    assert.isTrue(admits("*.+(ts|js)", "a.js"))
    assert.isFalse(admits("*.+(ts|js)", "a.md"))
    assert.isTrue(admits("f{1..3}.txt", "f2.txt"))
    assert.isFalse(admits("**/*.+(ts|js)", ".hidden/a.ts"))
  })
})

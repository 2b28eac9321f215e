/** grepFiles on real files: per-line semantics of the whole-text scan, the byte path, chunk edges. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as GrepFiles from "../../src/internal/grepFiles.ts"

/** Searches one file holding `content` for `pattern`; returns `[lineNumber, line]` pairs. */
const grepContent = (content: string | Uint8Array, pattern: string, caseSensitive = true, limit = 100) =>
  Effect.acquireUseRelease(
    Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "condukt-grepfiles-")))),
    (dir) =>
      Effect.gen(function*() {
        writeFileSync(join(dir, "f.txt"), content)
        const compiled = GrepFiles.compile(pattern, caseSensitive)
        assert.isTrue(Result.isSuccess(compiled))
        const matches = yield* GrepFiles.search({
          root: join(dir, "f.txt"),
          rootIsFile: true,
          display: "f.txt",
          glob: "**/*",
          pattern: Result.getOrThrow(compiled),
          limit,
          report: () => "f.txt"
        })
        assert.deepStrictEqual(matches.skipped, [])
        return matches.matches.map((m) => [m.lineNumber, m.line] as const)
      }),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

describe("grepFiles", () => {
  it.effect("a match running across a line break neither counts nor hides the next line's match", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* grepContent("a\nb ab\n", "a[^z]*b"), [[2, "b ab"]])
      assert.deepStrictEqual(yield* grepContent("foo\nbar\n", "foo\\sbar"), [])
    }))

  it.effect("anchors and \\z see only their own line", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* grepContent("x foo\nbar\n", "foo\\z"), [[1, "x foo"]])
      assert.deepStrictEqual(yield* grepContent("a\nbar\n", "^bar$"), [[2, "bar"]])
    }))

  it.effect("an empty match counts each line once, and no line follows the final newline", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* grepContent("a\nb\n", "x*"), [[1, "a"], [2, "b"]])
      assert.deepStrictEqual(yield* grepContent("a\nb", "$"), [[1, "a"], [2, "b"]])
      assert.deepStrictEqual(yield* grepContent("", "x*"), [])
    }))

  it.effect("strips a UTF-8 byte order mark and the \\r of CRLF lines", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* grepContent("\uFEFFhello\r\nhello\r\n", "^hello$"), [[1, "hello"], [2, "hello"]])
      assert.deepStrictEqual(yield* grepContent("\uFEFFhello\r\nx hello\r\n", "hello"), [[1, "hello"], [2, "x hello"]])
    }))

  it.effect("decodes undecodable bytes as U+FFFD on both paths", () =>
    Effect.gen(function*() {
      const bytes = new Uint8Array([0xff, 0x68, 0x69, 0x0a])
      assert.deepStrictEqual(yield* grepContent(bytes, "hi"), [[1, "\uFFFDhi"]])
      assert.deepStrictEqual(yield* grepContent(bytes, "h."), [[1, "\uFFFDhi"]])
    }))

  it.effect("finds text across a 64 KiB read boundary and counts lines on large files", () =>
    Effect.gen(function*() {
      const straddling = "a".repeat(65536 - 5) + "needle\nafter\n"
      assert.deepStrictEqual(yield* grepContent(straddling, "needle"), [[1, "a".repeat(65531) + "needle"]])
      const lines = Array.from({ length: 100_000 }, (_, i) => `line ${i + 1}`)
      lines[69_999] = "the needle line"
      const found = yield* grepContent(lines.join("\n") + "\n", "needle")
      assert.deepStrictEqual(found, [[70_000, "the needle line"]])
      assert.deepStrictEqual(yield* grepContent(lines.join("\n"), "^line 100000$"), [[100_000, "line 100000"]])
    }))

  it.effect("a pattern with required text still applies the whole regex to each candidate line", () =>
    Effect.gen(function*() {
      const content = "createContext\ncreateFooContext\nContext\n"
      assert.deepStrictEqual(yield* grepContent(content, "create\\w+Context"), [[2, "createFooContext"]])
      assert.deepStrictEqual(yield* grepContent(content, "^Context"), [[3, "Context"]])
    }))

  it.effect("stops at limit, and case-insensitive matching finds every case", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* grepContent("x\nx\nx\n", "x", true, 2), [[1, "x"], [2, "x"]])
      assert.deepStrictEqual(yield* grepContent("Needle\nNEEDLE\nneedle\n", "needle", false), [
        [1, "Needle"],
        [2, "NEEDLE"],
        [3, "needle"]
      ])
    }))

  it.effect("prefiltered paths find a match straddling a 64 KiB read and skip RE2 only where it would agree", () =>
    Effect.gen(function*() {
      const pad = "a".repeat(65536 - 5)
      assert.deepStrictEqual(yield* grepContent(`${pad}2024-01-02\nx\n`, "[0-9]{4}-[0-9]{2}-[0-9]{2}"), [[1, `${pad}2024-01-02`]])
      assert.deepStrictEqual(yield* grepContent(`x\n${pad}EfFeCt\r\n`, "effect", false), [[2, `${pad}EfFeCt`]])
      assert.deepStrictEqual(yield* grepContent("\uFEFFeffect\r\n", "^effect$", false), [[1, "effect"]])
      assert.deepStrictEqual(yield* grepContent("\u212AELVIN\nkelvin\nelvin\n", "kelvin", false), [[1, "\u212AELVIN"], [2, "kelvin"]])
      assert.deepStrictEqual(yield* grepContent("STRA\u1E9EE\nstrasse\n", "straße", false), [[1, "STRA\u1E9EE"]])
      assert.deepStrictEqual(yield* grepContent("\u01C4\n\u01C6\nDZ\n", "\u01C5", false), [[1, "\u01C4"], [2, "\u01C6"]])
    }))

  it.effect("a line over 1 MiB is matched on its first 1 MiB on the exact, folded and class paths alike", () =>
    Effect.gen(function*() {
      const mib = 1024 * 1024
      const early = `x needle 2024-01-02 ${"b".repeat(2 * mib)}\nlast\n`
      const late = `${"b".repeat(mib + 10)} needle 2024-01-02\nlast needle\n`
      for (const [pattern, caseSensitive] of [["needle", true], ["NEEDLE", false], ["[0-9]{4}-[0-9]{2}-[0-9]{2}", true]] as const) {
        const found = yield* grepContent(early, pattern, caseSensitive)
        assert.deepStrictEqual(found.map(([n, line]) => [n, line.length]), [[1, mib]], pattern)
        const missed = yield* grepContent(late, pattern, caseSensitive)
        assert.deepStrictEqual(missed, pattern.includes("[") ? [] : [[2, "last needle"]], pattern)
      }
    }))

  it("compile reports RE2's reason and the dialect", () => {
    assert.deepStrictEqual(GrepFiles.compile("(x", true), Result.fail("missing closing ): `(x`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences."))
    assert.deepStrictEqual(GrepFiles.compile("[z-a]", false), Result.fail("invalid character class range: `z-a`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences."))
  })
})

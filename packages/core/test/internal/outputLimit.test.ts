/** outputLimit: the head kept within 2,000 lines / 50 KiB, and the exec result text built on it. */
import { assert, describe, it } from "@effect/vitest"
import { formatExecResult, limitOutput, MAX_BYTES, MAX_LINES, splitLines, utf8Length } from "../../src/internal/outputLimit.ts"

const numbered = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => String(from + i))

describe("outputLimit", () => {
  it("names Condukt's limits", () => {
    assert.strictEqual(MAX_LINES, 2000)
    assert.strictEqual(MAX_BYTES, 51200)
  })

  it("counts UTF-8 bytes like TextEncoder, lone surrogates included", () => {
    for (const text of ["", "abc", "é", "€", "😀", "a😀é€\n", "\ud800", "x\udc00y", "\ud83d"]) {
      assert.strictEqual(utf8Length(text), new TextEncoder().encode(text).length, JSON.stringify(text))
    }
  })

  it("splits lines without an extra empty line after a final newline", () => {
    assert.deepStrictEqual(splitLines(""), [])
    assert.deepStrictEqual(splitLines("a"), ["a"])
    assert.deepStrictEqual(splitLines("a\nb\n"), ["a", "b"])
    assert.deepStrictEqual(splitLines("a\n\n"), ["a", ""])
    assert.deepStrictEqual(splitLines("\n"), [""])
  })

  it("returns text that fits unchanged, final newline included", () => {
    const text = numbered(1, 2000).join("\n") + "\n"
    assert.deepStrictEqual(limitOutput(text), { text, truncated: false, lines: 2000 })
    assert.deepStrictEqual(limitOutput(""), { text: "", truncated: false, lines: 0 })
  })

  it("keeps the first 2,000 lines of a longer text", () => {
    const limited = limitOutput(numbered(1, 3000).join("\n") + "\n")
    assert.deepStrictEqual(limited, { text: numbered(1, 2000).join("\n"), truncated: true, lines: 2000 })
  })

  it("keeps whole lines within 50 KiB, each counted with its newline", () => {
    const line = "a".repeat(99)
    const limited = limitOutput(Array(1000).fill(line).join("\n"))
    assert.deepStrictEqual(limited, { text: Array(512).fill(line).join("\n"), truncated: true, lines: 512 })
  })

  it("accepts exactly 50 KiB and cuts one byte more", () => {
    const exact = "a".repeat(MAX_BYTES)
    assert.deepStrictEqual(limitOutput(exact), { text: exact, truncated: false, lines: 1 })
    assert.deepStrictEqual(limitOutput(exact + "a"), { text: exact, truncated: true, lines: 1 })
  })

  it("cuts a huge first line on a character boundary, never inside a multi-byte character", () => {
    const limited = limitOutput("a" + "😀".repeat(13000) + "\nnext")
    assert.deepStrictEqual(limited, { text: "a" + "😀".repeat(12799), truncated: true, lines: 1 })
    assert.strictEqual(utf8Length(limited.text), 51197)
    const accents = limitOutput("é".repeat(30000))
    assert.deepStrictEqual(accents, { text: "é".repeat(25600), truncated: true, lines: 1 })
  })
})

describe("formatExecResult", () => {
  it("is the output alone when the exit code is 0", () => {
    assert.strictEqual(formatExecResult("hello\n", 0, false), "hello\n")
    assert.strictEqual(formatExecResult("", 0, false), "")
  })

  it("adds the exit code after one blank line when it is not 0", () => {
    assert.strictEqual(formatExecResult("oops", 2, false), "oops\n\n(exit code: 2)")
    assert.strictEqual(formatExecResult("oops\n", 2, false), "oops\n\n(exit code: 2)")
    assert.strictEqual(formatExecResult("gap\n\n", 2, false), "gap\n\n\n(exit code: 2)")
    assert.strictEqual(formatExecResult("", 1, false), "(exit code: 1)")
  })

  it("says the output was truncated when the sandbox cut it", () => {
    assert.strictEqual(formatExecResult("partial", 0, true), "partial\n\n(output truncated)")
    assert.strictEqual(formatExecResult("partial\n", 0, true), "partial\n\n(output truncated)")
    assert.strictEqual(formatExecResult("partial", 137, true), "partial\n\n(output truncated)\n\n(exit code: 137)")
  })

  it("limits the output and says so", () => {
    const output = numbered(1, 5000).join("\n") + "\n"
    assert.strictEqual(formatExecResult(output, 0, false), numbered(1, 2000).join("\n") + "\n\n(output truncated)")
  })

  it("puts a notice after whatever the limit kept and before the exit code", () => {
    const output = numbered(1, 5000).join("\n") + "\n"
    assert.strictEqual(
      formatExecResult(output, 126, false, "The command was stopped: it ran more than 10000 commands."),
      numbered(1, 2000).join("\n") + "\n\n(output truncated)\n\nThe command was stopped: it ran more than 10000 commands.\n\n(exit code: 126)"
    )
    assert.strictEqual(formatExecResult("", undefined, false, "Command timed out after 1 seconds"), "Command timed out after 1 seconds")
    assert.strictEqual(formatExecResult("so far\n", undefined, false, "Command timed out after 1 seconds"), "so far\n\nCommand timed out after 1 seconds")
  })
})

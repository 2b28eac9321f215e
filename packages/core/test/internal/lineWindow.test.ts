/** lineWindow: the same window and count whatever the chunking, cut on a character boundary. */
import { assert, describe, it } from "@effect/vitest"
import * as LineWindow from "../../src/internal/lineWindow.ts"

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** Scans `text` fed in chunks of `size` bytes. */
const scan = (text: string | Uint8Array, from: number, maxLines: number, size: number) => {
  const bytes = typeof text === "string" ? encoder.encode(text) : text
  const scanner = LineWindow.make(from, maxLines)
  for (let at = 0; at < bytes.length; at += size) scanner.feed(bytes.subarray(at, at + size))
  const window = scanner.done()
  return { lines: window.lines, bytes: window.bytes, kept: decoder.decode(window.kept), cut: window.cut }
}

describe("lineWindow", () => {
  it("counts lines as splitLines does and keeps the window's lines with their newlines", () => {
    for (const size of [1, 2, 3, 1000]) {
      assert.deepStrictEqual(scan("", 1, 5, size), { lines: 0, bytes: 0, kept: "", cut: false })
      assert.deepStrictEqual(scan("\n", 1, 5, size), { lines: 1, bytes: 1, kept: "\n", cut: false })
      assert.deepStrictEqual(scan("a\nb\nc", 2, 1, size), { lines: 3, bytes: 5, kept: "b\n", cut: false })
      assert.deepStrictEqual(scan("a\nb\nc\n", 2, 5, size), { lines: 3, bytes: 6, kept: "b\nc\n", cut: false })
      assert.deepStrictEqual(scan("a\nb\n", 3, 5, size), { lines: 2, bytes: 4, kept: "", cut: false })
    }
  })

  it("keeps at most KEEP_BYTES, ending on a character boundary, and counts on past them", () => {
    // "a" then 3-byte characters: KEEP_BYTES (51,204) falls inside one, so the cut steps back to 51,202 bytes.
    const line = "a" + "€".repeat(20_000)
    for (const size of [7, 65_536]) {
      const window = scan(`${line}\n${line}\nend\n`, 1, 2001, size)
      assert.deepStrictEqual({ ...window, kept: window.kept.length }, { lines: 3, bytes: 120_008, kept: 17_068, cut: true })
    }
  })
})

/** Read through a real LocalSandbox: raw text, windows, the truncation header, images and every error. */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_IMAGE_BYTES, Read } from "@condukt/core/tools/Read"
import * as Message from "@condukt/core/Message"
import * as Tool from "@condukt/core/Tool"
import { localContext } from "./context.ts"

const numbered = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`)

const fiveLines = numbered(1, 5).join("\n") + "\n"
const bigFile = numbered(1, 3000).join("\n") + "\n"
// 1x1 transparent PNG.
const png = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="),
  (c) => c.charCodeAt(0)
)
const bytes = (...parts: ReadonlyArray<string | ReadonlyArray<number>>) =>
  Uint8Array.from(parts.flatMap((part) => (typeof part === "string" ? Array.from(part, (c) => c.charCodeAt(0)) : [...part])))
// The first bytes of each other format Read returns as an image (what it checks), then some of the rest.
const jpeg = bytes([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10], "JFIF", [0x00, 0x01])
const gif = bytes("GIF89a", [0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00])
const webp = bytes("RIFF", [0x1a, 0x00, 0x00, 0x00], "WEBPVP8L", [0x0d, 0x00, 0x00, 0x00])
const base64 = (data: Uint8Array) => btoa(String.fromCharCode(...data))
// A PNG's signature followed by zeros, `size` bytes in all.
const pngOfSize = (size: number) => {
  const data = new Uint8Array(size)
  data.set(png.subarray(0, 8))
  return data
}

describe("Read", () => {
  it.effect("returns the whole file raw, without line numbers", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "f.txt": fiveLines, "empty.txt": "" })
      assert.strictEqual(yield* ToolCall.run(Read, { path: "f.txt" }, context), fiveLines)
      assert.strictEqual(yield* ToolCall.run(Read, { path: "empty.txt" }, context), "")
    }))

  it.effect("prefixes a requested window with the lines shown", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "f.txt": fiveLines })
      assert.strictEqual(yield* ToolCall.run(Read, { path: "f.txt", offset: 2, limit: 2 }, context), "(lines 2-3 of 5)\n\nline 2\nline 3")
      assert.strictEqual(yield* ToolCall.run(Read, { path: "f.txt", offset: 4 }, context), "(lines 4-5 of 5)\n\nline 4\nline 5")
      assert.strictEqual(yield* ToolCall.run(Read, { path: "f.txt", limit: 1 }, context), "(lines 1-1 of 5)\n\nline 1")
      assert.strictEqual(yield* ToolCall.run(Read, { path: "f.txt", offset: 5, limit: 100 }, context), "(lines 5-5 of 5)\n\nline 5")
    }))

  it.effect("returns the raw file when the window covers all of it", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "f.txt": fiveLines })
      assert.strictEqual(yield* ToolCall.run(Read, { path: "f.txt", offset: 1, limit: 5 }, context), fiveLines)
    }))

  it.effect("shows the first 2,000 lines of a 3,000-line file and says so", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "big.txt": bigFile })
      assert.strictEqual(
        yield* ToolCall.run(Read, { path: "big.txt" }, context),
        `(showing lines 1-2000 of 3000, output truncated)\n\n${numbered(1, 2000).join("\n")}`
      )
      assert.strictEqual(
        yield* ToolCall.run(Read, { path: "big.txt", offset: 500 }, context),
        `(showing lines 500-2499 of 3000, output truncated)\n\n${numbered(500, 2499).join("\n")}`
      )
      assert.strictEqual(
        yield* ToolCall.run(Read, { path: "big.txt", offset: 2500 }, context),
        `(lines 2500-3000 of 3000)\n\n${numbered(2500, 3000).join("\n")}`
      )
    }))

  it.effect("cuts at 50 KiB on a line boundary", () =>
    Effect.gen(function*() {
      const line = "x".repeat(99)
      const { context } = yield* localContext({ "wide.txt": Array(1000).fill(line).join("\n") + "\n" })
      assert.strictEqual(
        yield* ToolCall.run(Read, { path: "wide.txt" }, context),
        `(showing lines 1-512 of 1000, output truncated)\n\n${Array(512).fill(line).join("\n")}`
      )
    }))

  it.effect("refuses an offset past the end of the file, naming its length", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "f.txt": fiveLines, "one.txt": "only\n" })
      assert.strictEqual(
        yield* ToolCall.failure(Read, { path: "f.txt", offset: 6 }, context),
        "Cannot read f.txt: offset 6 is past the end of the file (5 lines)"
      )
      assert.strictEqual(
        yield* ToolCall.failure(Read, { path: "one.txt", offset: 500 }, context),
        "Cannot read one.txt: offset 500 is past the end of the file (1 line)"
      )
    }))

  it.effect("refuses absurd offsets and limits in the schema", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "f.txt": fiveLines })
      assert.strictEqual(
        yield* ToolCall.failure(Read, { path: "f.txt", offset: 0 }, context),
        "Invalid arguments for tool Read: offset: Expected a value greater than or equal to 1"
      )
      for (const limit of [0, -5, 1e9]) {
        assert.strictEqual(
          yield* ToolCall.failure(Read, { path: "f.txt", limit }, context),
          "Invalid arguments for tool Read: limit: Expected a value between 1 and 2000"
        )
      }
      assert.strictEqual(
        yield* ToolCall.failure(Read, { path: "f.txt", limit: 2.5 }, context),
        "Invalid arguments for tool Read: limit: Expected an integer"
      )
      assert.strictEqual(yield* ToolCall.failure(Read, {}, context), "Invalid arguments for tool Read: path: Missing key")
    }))

  it.effect("returns a picture as an image the model sees, with a line naming it, whatever the extension's case", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "dot.png": png, "photo.JPG": jpeg, "photo.jpeg": jpeg, "a.GIF": gif, "a.webp": webp })
      const seen = (path: string) =>
        Effect.map(ToolCall.run(Read, { path }, context), (output) => output instanceof Tool.Images ? [output.text, output.images] : output)
      const image = (path: string, media: string, data: Uint8Array) => [`Image ${path} (${media}, ${data.length} bytes)`, [Message.imagePart(media, base64(data))]]
      assert.deepStrictEqual(yield* seen("dot.png"), image("dot.png", "image/png", png))
      assert.deepStrictEqual(yield* seen("photo.JPG"), image("photo.JPG", "image/jpeg", jpeg))
      assert.deepStrictEqual(yield* seen("photo.jpeg"), image("photo.jpeg", "image/jpeg", jpeg))
      assert.deepStrictEqual(yield* seen("a.GIF"), image("a.GIF", "image/gif", gif))
      assert.deepStrictEqual(yield* seen("a.webp"), image("a.webp", "image/webp", webp))
    }))

  it.effect("trusts a picture's bytes over its name: text named .png is read as text, a PNG named .jpg goes as image/png", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({
        "notes.png": "not a picture\n",
        "short.gif": "GIF",
        "empty.webp": "",
        "riff.webp": bytes("RIFF", [0, 0, 0, 0], "WAVEfmt "),
        "dot.jpg": png
      })
      assert.strictEqual(yield* ToolCall.run(Read, { path: "notes.png" }, context), "not a picture\n")
      assert.strictEqual(yield* ToolCall.run(Read, { path: "short.gif" }, context), "GIF")
      assert.strictEqual(yield* ToolCall.run(Read, { path: "empty.webp" }, context), "")
      assert.strictEqual(yield* ToolCall.run(Read, { path: "riff.webp" }, context), "RIFF\u0000\u0000\u0000\u0000WAVEfmt ")
      const dot = yield* ToolCall.run(Read, { path: "dot.jpg" }, context)
      assert.deepStrictEqual(
        dot instanceof Tool.Images ? [dot.text, dot.images] : dot,
        [`Image dot.jpg (image/png, ${png.length} bytes)`, [Message.imagePart("image/png", base64(png))]]
      )
    }))

  it.effect("refuses an image over MAX_IMAGE_BYTES, saying the limit", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "big.png": pngOfSize(MAX_IMAGE_BYTES + 1), "fits.png": pngOfSize(MAX_IMAGE_BYTES) })
      assert.strictEqual(
        yield* ToolCall.failure(Read, { path: "big.png" }, context),
        "Cannot read big.png: the image is larger than 3584 KiB (3670016 bytes), the most Read returns."
      )
      const fits = yield* ToolCall.run(Read, { path: "fits.png" }, context)
      assert.deepStrictEqual(fits instanceof Tool.Images ? fits.images.map((image) => image.data.length) : fits, [4893356])
    }))

  it.effect("refuses a named pipe or a device without waiting on it", () =>
    Effect.gen(function*() {
      const { context, dir } = yield* localContext()
      execFileSync("mkfifo", [join(dir, "pipe")])
      assert.strictEqual(
        yield* ToolCall.failure(Read, { path: "pipe" }, context),
        "Cannot read pipe: it is a named pipe, not a regular file"
      )
      assert.strictEqual(
        yield* ToolCall.failure(Read, { path: "/dev/zero" }, context),
        "Cannot read /dev/zero: it is a character device, not a regular file"
      )
      assert.strictEqual(
        yield* ToolCall.failure(Read, { path: "/dev/urandom" }, context),
        "Cannot read /dev/urandom: it is a character device, not a regular file"
      )
    }))

  it.effect("cuts a window's single huge line on a character boundary, counting lines it did not keep", () =>
    Effect.gen(function*() {
      // "é" is 2 bytes: 50 KiB + 1 is not a boundary, so the cut must step back.
      const wide = "a" + "é".repeat(40_000)
      const { context } = yield* localContext({ "wide.txt": `first\n${wide}\nlast\n` })
      assert.strictEqual(
        yield* ToolCall.run(Read, { path: "wide.txt", offset: 2 }, context),
        `(showing lines 2-2 of 3, output truncated)\n\n${"a" + "é".repeat(25_599)}`
      )
    }))

  it.effect("counts lines past the window and validates only what it shows", () =>
    Effect.gen(function*() {
      const tail = Uint8Array.of(0xff, 0x0a)
      const text = new TextEncoder().encode(numbered(1, 3000).join("\n") + "\n")
      const { context } = yield* localContext({ "mixed.txt": new Uint8Array([...text, ...tail]) })
      assert.strictEqual(
        yield* ToolCall.run(Read, { path: "mixed.txt", offset: 2999, limit: 2 }, context),
        "(lines 2999-3000 of 3001)\n\nline 2999\nline 3000"
      )
    }))

  it.effect("says when a file is missing, a directory, or not UTF-8 text", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "sub/keep.txt": "", "bad.txt": Uint8Array.of(0x41, 0xff, 0xfe, 0x42) })
      assert.strictEqual(yield* ToolCall.failure(Read, { path: "missing.txt" }, context), "File not found: missing.txt")
      assert.strictEqual(yield* ToolCall.failure(Read, { path: "sub" }, context), "sub is a directory, not a file")
      assert.strictEqual(
        yield* ToolCall.failure(Read, { path: "bad.txt" }, context),
        "Cannot read bad.txt: the file is not valid UTF-8 text (4 bytes)"
      )
    }))

  it.effect("passes the sandbox's sentence on for a path outside the allowed directories", () =>
    Effect.gen(function*() {
      const other = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "condukt-outside-"))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      mkdirSync(join(other, "d"))
      writeFileSync(join(other, "d", "secret.txt"), "no")
      const { dir, context } = yield* localContext({ "f.txt": "ok" }, { confined: true })
      assert.strictEqual(yield* ToolCall.run(Read, { path: `${dir}/f.txt` }, context), "ok")
      assert.strictEqual(
        yield* ToolCall.failure(Read, { path: `${other}/d/secret.txt` }, context),
        `Path ${other}/d/secret.txt is outside allowed directories`
      )
    }))
})

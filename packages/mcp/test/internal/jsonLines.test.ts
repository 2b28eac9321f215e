import { assert, describe, it } from "@effect/vitest"
import { Batch, LineReader, MAX_LINE_BYTES, parse } from "../../src/internal/jsonLines.ts"

/** The lines a reader gives for `chunks` in order, and what each `read` answered. */
const readAll = (reader: LineReader, chunks: ReadonlyArray<string | Buffer>) => {
  const lines: Array<string> = []
  const answers = chunks.map((chunk) => reader.read(typeof chunk === "string" ? Buffer.from(chunk) : chunk, (line) => lines.push(line)))
  return { lines, answers }
}

describe("jsonLines", () => {
  describe("LineReader", () => {
    it("gives each line of a chunk without its newline or carriage return", () => {
      assert.deepStrictEqual(readAll(new LineReader(), ["a\nb\r\nc\n"]), { lines: ["a", "b", "c"], answers: [true] })
    })

    it("joins a line that spans chunks, a multi-byte character cut in two included", () => {
      const bytes = Buffer.from("{\"text\":\"é\"}\nnext\n")
      const cut = bytes.indexOf(0xa9) // the second byte of é
      assert.deepStrictEqual(readAll(new LineReader(), [bytes.subarray(0, cut), bytes.subarray(cut, cut + 2), bytes.subarray(cut + 2)]), {
        lines: ["{\"text\":\"é\"}", "next"],
        answers: [true, true, true]
      })
    })

    it("answers false once an unfinished line passes the limit, and drops it", () => {
      const reader = new LineReader()
      const half = Buffer.alloc(MAX_LINE_BYTES / 2 + 1, "x")
      assert.deepStrictEqual(readAll(reader, [half, half, "tail\nnext\n"]), { lines: ["tail", "next"], answers: [true, false, true] })
    })
  })

  describe("parse", () => {
    it("gives a JSON-RPC message as sent", () => {
      assert.deepStrictEqual(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}"), {
        jsonrpc: "2.0",
        id: 1,
        result: { content: [] }
      })
    })

    it("says why a line that is not JSON is not a message", () => {
      assert.strictEqual(parse("Starting server"), "Unexpected token 'S', \"Starting server\" is not valid JSON")
    })

    it("refuses JSON without the JSON-RPC envelope, quoting the line's start", () => {
      assert.strictEqual(parse("{\"hello\":\"world\"}"), "not a JSON-RPC message: {\"hello\":\"world\"}")
      assert.strictEqual(parse("{\"jsonrpc\":\"2.0\"}"), "not a JSON-RPC message: {\"jsonrpc\":\"2.0\"}")
    })
  })

  describe("Batch", () => {
    it("joins the messages of a turn into one text, one per line, and starts empty again", () => {
      const batch = new Batch()
      assert.isTrue(batch.add({ jsonrpc: "2.0", method: "notifications/initialized" }))
      assert.isFalse(batch.add({ jsonrpc: "2.0", id: 2, method: "tools/list" }))
      assert.strictEqual(
        batch.take(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n"
      )
      assert.isUndefined(batch.take())
    })
  })
})

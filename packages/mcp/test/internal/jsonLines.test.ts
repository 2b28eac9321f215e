import { assert, describe, it } from "@effect/vitest"
import { Batch, FIRST_WRITE_CHARS, WRITE_CHARS, LineReader, parse } from "../../src/internal/jsonLines.ts"

/** What a reader reports for `chunks` in order: lines, `skipping` as "(skipping)", a skipped line as its id. */
const readAll = (reader: LineReader, chunks: ReadonlyArray<string | Buffer>) => {
  const lines: Array<string> = []
  for (const chunk of chunks) {
    reader.read(typeof chunk === "string" ? Buffer.from(chunk) : chunk, {
      line: (line) => lines.push(line),
      skipping: () => lines.push("(skipping)"),
      skipped: (line) => lines.push(`(skipped ${line.bytes} bytes, id ${String(line.id())})`)
    })
  }
  return lines
}

describe("jsonLines", () => {
  describe("LineReader", () => {
    it("gives each line of a chunk without its newline or carriage return", () => {
      assert.deepStrictEqual(readAll(new LineReader(), ["a\nb\r\nc\n"]), ["a", "b", "c"])
    })

    it("joins a line that spans chunks, a multi-byte character cut in two included", () => {
      const bytes = Buffer.from("{\"text\":\"é\"}\nnext\n")
      const cut = bytes.indexOf(0xa9) // the second byte of é
      assert.deepStrictEqual(readAll(new LineReader(), [bytes.subarray(0, cut), bytes.subarray(cut, cut + 2), bytes.subarray(cut + 2)]), [
        "{\"text\":\"é\"}",
        "next"
      ])
    })

    it("skips a line past the limit to its end, reports the response id its edges show, and reads on", () => {
      const reader = new LineReader(64)
      const body = "x".repeat(100)
      assert.deepStrictEqual(
        readAll(reader, [`{"result":{"text":"${body.slice(0, 50)}`, `${body.slice(50)}"},"jsonrpc":"2.0","id":7}\nnext\n`]),
        ["(skipping)", "(skipped 145 bytes, id 7)", "next"]
      )
      assert.deepStrictEqual(readAll(reader, [`{"jsonrpc":"2.0","id":"a-1","result":{"text":"${body}"}}\n`, "{}\n"]), [
        "(skipping)",
        "(skipped 149 bytes, id a-1)",
        "{}"
      ])
      // A nested id does not pass for the message's own.
      assert.deepStrictEqual(readAll(reader, [`{"jsonrpc":"2.0","method":"x","params":{"text":"${body}","id":3}}\n`]), [
        "(skipping)",
        "(skipped 158 bytes, id undefined)"
      ])
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
      assert.isFalse(batch.full)
      assert.strictEqual(
        batch.takeAtEnd(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n"
      )
      assert.isUndefined(batch.takeAtEnd())
    })

    it("is full once a kilobyte is held for a turn's first write, then 16 KiB for each write after it; a new turn starts small again", () => {
      const batch = new Batch()
      const call = (id: number) => ({ jsonrpc: "2.0" as const, id, method: "tools/call", params: { name: "echo", arguments: { message: "x".repeat(40) } } })
      const size = JSON.stringify(call(1000)).length + 1
      /** Messages added until the batch is full; how many. */
      const untilFull = (from: number) => {
        let n = 0
        while (!batch.full) batch.add(call(from + n++))
        return n
      }
      assert.strictEqual(FIRST_WRITE_CHARS, 1024)
      assert.strictEqual(WRITE_CHARS, 16 * 1024)
      const first = untilFull(1000)
      assert.strictEqual(first, Math.ceil(FIRST_WRITE_CHARS / size))
      assert.strictEqual(batch.takeEarly()!.split("\n").length - 1, first)
      assert.strictEqual(untilFull(2000), Math.ceil(WRITE_CHARS / size))
      batch.takeEarly()
      batch.add(call(3000))
      assert.strictEqual(batch.takeAtEnd(), `${JSON.stringify(call(3000))}\n`)
      assert.strictEqual(untilFull(4000), first)
    })
  })
})

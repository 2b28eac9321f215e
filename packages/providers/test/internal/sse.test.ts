import { assert, describe, it } from "@effect/vitest"
import { Sse } from "effect/encoding"
import * as sse from "../../src/internal/sse.ts"

const parse = (chunks: ReadonlyArray<string>, maxEventSize?: number) => {
  const events: Array<Sse.Event> = []
  const parser = sse.makeParser((event) => events.push(event), maxEventSize)
  const fed = chunks.map((chunk) => parser.feed(chunk))
  return { events, fed }
}

/** Effect's parser on the same chunks: the behaviour ours must keep. */
const reference = (chunks: ReadonlyArray<string>) => {
  const events: Array<Sse.Event> = []
  const parser = Sse.makeParser((event) => {
    if (event._tag === "Event") events.push(event)
  })
  for (const chunk of chunks) parser.feed(chunk)
  return events
}

const event = (name: string, data: string, id?: string): Sse.Event => ({ _tag: "Event", event: name, id, data })

// Every line ending, a BOM, comments, unknown fields, fields without a colon or a space, multi-line
// data, empty data, ids (one with NUL, ignored), an event with no data (not dispatched).
const tricky = "\uFEFFevent: a\ndata: one\n\n" +
  ": a comment\r\nevent:b\r\ndata:two\r\ndata:  three\r\n\r\n" +
  "id: 7\rdata\r\r" +
  "event: c\nid: x\u0000y\nretry: 10\nfoo: bar\ndata :no\ndatax: no\ndata: four\n\n" +
  "event: empty\n\n" +
  "data: {\"type\":\"é ✓\"}\n\n" +
  "data: unfinished"

describe("sse", () => {
  it("parses events, their names, ids and data lines", () => {
    const { events } = parse([tricky])
    assert.deepStrictEqual(events, [
      event("a", "one"),
      event("b", "two\n three"),
      event("message", "", "7"),
      event("c", "four", "7"),
      event("message", "{\"type\":\"é ✓\"}", "7")
    ])
  })

  it("gives the same events as Effect's parser however the text is split", () => {
    const expected = reference([tricky])
    assert.deepStrictEqual(parse([tricky]).events, expected)
    for (let size = 1; size <= 9; size++) {
      const chunks: Array<string> = []
      for (let i = 0; i < tricky.length; i += size) chunks.push(tricky.slice(i, i + size))
      assert.deepStrictEqual(parse(chunks).events, expected, `chunks of ${size}`)
      assert.deepStrictEqual(reference(chunks), expected, `Effect's parser, chunks of ${size}`)
    }
  })

  it("joins a CRLF split between chunks into one line end", () => {
    assert.deepStrictEqual(parse(["data: a\r", "\n\r", "\ndata: b\r\n\r\n"]).events, [event("message", "a"), event("message", "b")])
  })

  it("refuses an event growing past the bound, then parses what follows", () => {
    const { events, fed } = parse(["data: ", "x".repeat(20), "\n\ndata: ok\n\n"], 16)
    assert.deepStrictEqual(fed, [true, false, true])
    assert.deepStrictEqual(events, [event("message", "ok")])
  })
})

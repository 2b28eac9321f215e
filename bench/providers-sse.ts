/**
 * bench/providers-sse — SSE decoding of a long streamed answer through our Anthropic provider
 * against a raw baseline, in the same run.
 *
 * A loopback server streams an Anthropic Messages transcript of ≥ 5 MB: one text block of many
 * `text_delta` events (a realistic 20–60 characters each), in 16 KiB writes. Ours: `Model.resolve`
 * + `model.stream(request)` drained, counting text (HTTP on Effect's `FetchHttpClient` — Node's fetch, ADR 0091 —, `TextDecoder`, our SSE parser,
 * the vendor decoder, which reads a text delta by its frame and parses only its string, ADR 0096;
 * Effect's stream). Baseline: undici's `request` and a hand-written loop that
 * splits lines, keeps `data:` lines and `JSON.parse`s them, summing the text. Runs interleave; the
 * figures are medians. Goal: ours ≤ 1.5× the baseline's time.
 *
 * Run: node_modules/.bin/node bench/providers-sse.ts
 */
import { History, Message, Model } from "@condukt/core"
import { Anthropic } from "@condukt/providers"
import { Effect, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { request } from "undici"
import { report } from "./report.ts"

const RUNS = Number(process.env["BENCH_RUNS"] ?? 15)
const GOAL = 1.5

const words = ["the ", "model ", "streams ", "a long ", "answer, ", "token ", "by token; ", "each event ", "is small. "]
const events: Array<string> = [
  `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-6","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}\n\n`,
  `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n`
]
let size = 0
let expected = 0
for (let i = 0; size < 5.5 * 1024 * 1024; i++) {
  const text = words[i % words.length]! + words[(i * 7) % words.length]! + words[(i * 3) % words.length]!
  const event = `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${JSON.stringify(text)}}}\n\n`
  events.push(event)
  size += event.length
  expected += text.length
}
events.push(
  `event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n`,
  `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":100000}}\n\n`,
  `event: message_stop\ndata: {"type":"message_stop"}\n\n`
)
const body = Buffer.from(events.join(""))
const chunks: Array<Buffer> = []
for (let i = 0; i < body.length; i += 16 * 1024) chunks.push(body.subarray(i, i + 16 * 1024))

const server = http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/event-stream" })
    for (const chunk of chunks) res.write(chunk)
    res.end()
  })
})
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

const baseline = async (): Promise<number> => {
  const response = await request(`${url}/v1/messages`, { method: "POST", body: "{}", headers: { "x-api-key": "k" } })
  const decoder = new TextDecoder()
  let pending = ""
  let text = 0
  for await (const chunk of response.body) {
    pending += decoder.decode(chunk as Uint8Array, { stream: true })
    let start = 0
    let newline: number
    while ((newline = pending.indexOf("\n", start)) !== -1) {
      const line = pending.slice(start, newline)
      start = newline + 1
      if (line.startsWith("data: ")) {
        const event = JSON.parse(line.slice(6))
        if (event.type === "content_block_delta") text += event.delta.text.length
      }
    }
    pending = pending.slice(start)
  }
  return text
}

const request_: Model.Request = { system: undefined, messages: History.fromIterable([Message.user("go")]), tools: [] }
const ours = Effect.gen(function*() {
  const model = yield* Model.resolve("anthropic:claude-sonnet-4-6")
  let text = 0
  yield* Stream.runForEachArray(model.stream(request_), (parts) =>
    Effect.sync(() => {
      for (const part of parts) if (part._tag === "TextDelta") text += part.text.length
    }))
  return text
})

const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

await Effect.runPromise(Effect.gen(function*() {
  const oursTimes: Array<number> = []
  const baseTimes: Array<number> = []
  for (let run = 0; run < RUNS + 2; run++) {
    let start = performance.now()
    const a = yield* ours
    const oursMs = performance.now() - start
    start = performance.now()
    const b = yield* Effect.promise(baseline)
    const baseMs = performance.now() - start
    if (a !== expected || b !== expected) throw new Error(`decoded ${a} and ${b} characters, expected ${expected}`)
    // The first two runs warm the JIT and the connection pool.
    if (run >= 2) {
      oursTimes.push(oursMs)
      baseTimes.push(baseMs)
    }
  }
  const mb = body.length / 1024 / 1024
  const o = median(oursTimes)
  const b = median(baseTimes)
  const ratio = o / b
  console.log(`SSE decode of ${mb.toFixed(1)} MB (${events.length} events), median of ${RUNS} runs`)
  console.log(`  ours (Anthropic provider):  ${o.toFixed(1)} ms  ${(mb / (o / 1000)).toFixed(0)} MB/s`)
  console.log(`  raw undici + line split:    ${b.toFixed(1)} ms  ${(mb / (b / 1000)).toFixed(0)} MB/s`)
  console.log(`  ratio ${ratio.toFixed(2)}× (goal ≤ ${GOAL}×)`)
  report({
    benchmark: "SSE decode, Anthropic stream ≥ 5 MB",
    ours: `${(mb / (o / 1000)).toFixed(0)} MB/s`,
    baseline: `${(mb / (b / 1000)).toFixed(0)} MB/s`,
    ratio: Number(ratio.toFixed(2)),
    goal: `≤ ${GOAL}×`,
    met: ratio <= GOAL
  })
}).pipe(
  Effect.provide(
    Anthropic.layer({ apiKey: Redacted.make("k"), baseUrl: url }).pipe(Layer.provide(FetchHttpClient.layer))
  )
))
server.close()

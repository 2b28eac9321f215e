/**
 * bench/providers-sdk — one full agent turn through our Anthropic provider against the same turn
 * through the official `@anthropic-ai/sdk` streaming client, both against one loopback server.
 *
 * The server answers every `POST /v1/messages` with the same Anthropic transcript, written event by
 * event: `message_start`, a `ping`, a thinking block (40 `thinking_delta`s and its signature), a
 * text block (200 `text_delta`s, ~7 KB of text), `message_delta` with usage, `message_stop`.
 * Ours: a session of an agent on `anthropic:claude-sonnet-4-6` (no tools) answering `session.run`:
 * the request built from the session's history, the stream decoded into parts, events published,
 * history appended, the final text returned; timed with the session started before the clock, and
 * (a second line, not the ratio) with `Session.start` and its stop inside it. Peer: the SDK's
 * `client.messages.stream({...}).finalMessage()` with the same system prompt and message, its text
 * checked the same way. Both go over HTTP/1.1 keep-alive on undici (the SDK through Node's `fetch`).
 * Runs interleave, in a rotating order; figures are medians. Goal: ours ≤ 1.5× the SDK, the bound the SSE decode
 * benchmark holds: both clients do the same wire work, and ours adds only the session around it.
 *
 * Run: node_modules/.bin/node bench/providers-sdk.ts
 */
import AnthropicSdk from "@anthropic-ai/sdk"
import { Agent, type Sandbox, Session } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { Anthropic } from "@condukt/providers"
import { type Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { FetchHttpClient } from "effect/http"
import { mkdtempSync, rmSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { report } from "./report.ts"

const WARMUP = 100
const RUNS = Number(process.env["BENCH_RUNS"] ?? 300)
const GOAL = 1.5
const SYSTEM = "You answer questions about the repository."
const PROMPT = "Summarise what the providers do."

// ---------------------------------------------------------------------------------------------
// The transcript
// ---------------------------------------------------------------------------------------------

const sse = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
const words = ["Each ", "provider ", "streams ", "its vendor's ", "events, ", "decodes them ", "into parts; ", "retries ", "what may be retried. "]
const thinking = Array.from({ length: 40 }, (_, i) => `step ${i}: ${words[i % words.length]}`)
const text = Array.from({ length: 200 }, (_, i) => words[i % words.length]! + words[(i * 5) % words.length]!)
const expected = text.join("")
const events = [
  sse("message_start", {
    message: {
      id: "msg_bench",
      type: "message",
      role: "assistant",
      content: [],
      model: "claude-sonnet-4-6",
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 1200, output_tokens: 1 }
    }
  }),
  sse("ping", {}),
  sse("content_block_start", { index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
  ...thinking.map((t) => sse("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: t } })),
  sse("content_block_delta", { index: 0, delta: { type: "signature_delta", signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" } }),
  sse("content_block_stop", { index: 0 }),
  sse("content_block_start", { index: 1, content_block: { type: "text", text: "" } }),
  ...text.map((t) => sse("content_block_delta", { index: 1, delta: { type: "text_delta", text: t } })),
  sse("content_block_stop", { index: 1 }),
  sse("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 640 } }),
  sse("message_stop", {})
].map((event) => Buffer.from(event))
const transcriptBytes = events.reduce((n, event) => n + event.length, 0)

const server = http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    for (const event of events) res.write(event)
    res.end()
  })
})
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

const check = (got: string) => {
  if (got !== expected) throw new Error(`unexpected final text (${got.length} characters, expected ${expected.length})`)
}

// ---------------------------------------------------------------------------------------------
// Ours
// ---------------------------------------------------------------------------------------------

const agent = Agent.make({ name: "bench", model: "anthropic:claude-sonnet-4-6", system: SYSTEM })

/** The session is started before the clock starts and stopped after it stops. */
const oursRunOnly = (services: Context.Context<Sandbox.Sandbox>): Promise<number> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const session = yield* Session.start(agent).pipe(Scope.provide(scope))
      const start = performance.now()
      check((yield* session.run(PROMPT)).text)
      const elapsed = performance.now() - start
      yield* Scope.close(scope, Exit.void)
      return elapsed
    }).pipe(Effect.provide(services))
  )

/** Session start, the run and the session's stop, all timed. */
const oursWithStart = (services: Context.Context<Sandbox.Sandbox>): Promise<number> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const start = performance.now()
      yield* Effect.scoped(Effect.flatMap(Session.start(agent), (session) => session.run(PROMPT)).pipe(
        Effect.map((result) => check(result.text))
      ))
      return performance.now() - start
    }).pipe(Effect.provide(services))
  )

// ---------------------------------------------------------------------------------------------
// Peer: the official SDK
// ---------------------------------------------------------------------------------------------

const client = new AnthropicSdk({ apiKey: "k", baseURL: url, maxRetries: 0 })

const sdk = async (): Promise<number> => {
  const start = performance.now()
  const message = await client.messages.stream({
    model: "claude-sonnet-4-6",
    max_tokens: 8192,
    system: SYSTEM,
    messages: [{ role: "user", content: PROMPT }]
  }).finalMessage()
  const elapsed = performance.now() - start
  check(message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join(""))
  return elapsed
}

// ---------------------------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------------------------

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

interface Variant {
  readonly name: string
  readonly once: () => Promise<number>
  readonly times: Array<number>
}

const main = async () => {
  const cwd = mkdtempSync(join(tmpdir(), "condukt-bench-sdk-"))
  const scope = Scope.makeUnsafe()
  const services = await Effect.runPromise(Layer.buildWithScope(
    Layer.mergeAll(
      LocalSandbox.layer({ cwd }),
      Anthropic.layer({ apiKey: Redacted.make("k"), baseUrl: url }).pipe(Layer.provide(FetchHttpClient.layer))
    ).pipe(Layer.provide(Condukt.layer)),
    scope
  ))
  const variants: Array<Variant> = [
    { name: "@anthropic-ai/sdk stream (peer)", once: sdk, times: [] },
    { name: "Condukt session.run", once: () => oursRunOnly(services), times: [] },
    { name: "Condukt start + run + stop", once: () => oursWithStart(services), times: [] }
  ]
  // A rotating order: the garbage one variant leaves is collected during each of the others alike
  // (in a fixed order, session.run, right after the SDK's turn, measured 6.4 ms and start + run +
  // stop 4.4 ms: the run alone slower than the run with its start).
  const order = (i: number) => variants.map((_, k) => variants[(i + k) % variants.length]!)
  for (let i = 0; i < WARMUP; i++) for (const variant of order(i)) await variant.once()
  for (let i = 0; i < RUNS; i++) for (const variant of order(i)) variant.times.push(await variant.once())
  await Effect.runPromise(Scope.close(scope, Exit.void))
  rmSync(cwd, { recursive: true, force: true })
  server.close()

  const peer = median(variants[0]!.times)
  console.log(
    `One Anthropic turn (${events.length} events, ${(transcriptBytes / 1024).toFixed(1)} KiB) over loopback, ` +
      `median of ${RUNS} runs after ${WARMUP} warm-up runs`
  )
  for (const variant of variants) {
    const ms = median(variant.times)
    console.log(`  ${variant.name.padEnd(32)} ${ms.toFixed(2).padStart(7)} ms  ratio ${(ms / peer).toFixed(2)}×`)
  }
  console.log(`  ratio ${(median(variants[1]!.times) / peer).toFixed(2)}× (goal ≤ ${GOAL}×)`)
  const ours = median(variants[1]!.times)
  const ratio = ours / peer
  report({
    benchmark: "Anthropic turn: session.run / @anthropic-ai/sdk stream",
    ours: `${ours.toFixed(2)} ms`,
    baseline: `${peer.toFixed(2)} ms`,
    ratio: Number(ratio.toFixed(2)),
    goal: `≤ ${GOAL}×`,
    met: ratio <= GOAL
  })
}

await main()

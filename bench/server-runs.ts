/**
 * bench/server-runs — what a run costs over HTTP beside what it cannot avoid: any HTTP answer and
 * the reading of the run's events (docs/decisions/0097: goal ≤ 3× their sum; issue 40's ≤ 1.5×
 * the run in process is reported beside it, with no goal).
 *
 * One process: sessions of a tool-less agent whose model answers at once with a reply of `CHUNKS`
 * text deltas (bench/support/server.ts), so the model costs nothing and the difference is the
 * server's. Ours: `POST /sessions/:id/runs {prompt}` on loopback (node:http, keep-alive: fetch
 * would add its own parsing, in this process, to every answer), timed from the request to its
 * parsed answer — the request read, authenticated and decoded, the run read by the server's fiber
 * and every event written to its store, the outcome encoded, sent and parsed. Baselines, in the
 * same rounds: the floor of any HTTP answer here (a bare node:http server answering a JSON body of
 * the outcome's size, asked by the same client); the same run's events read in process
 * (`ById.stream` drained: what the server reads of a run, none of its own work); and
 * `Sessions.ById.run` on the same registry. Each timed run is on a session of its own (started
 * untimed), the paths taking turns in a rotating order after warm-up runs; the figures are medians.
 *
 * A diagnostic in the same rounds: the same POST through `Server.handler` with no socket (the
 * routes' cost without the Node adapter).
 *
 * Run: node bench/server-runs.ts (BENCH_RUNS=N to change the runs)
 */
import { Effect, Exit, Scope, Stream } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { report } from "./report.ts"
import { ms, percentile, post, serve, startSession, textModel } from "./support/server.ts"

const CHUNKS = 64
const TEXT = "The deploy finished: 3 services rolled out, no errors, all health checks green. ".repeat(7)
const WARMUP = 100
const RUNS = Number(process.env["BENCH_RUNS"] ?? 500)
/** Over HTTP / (the HTTP floor + the run's events read in process), docs/decisions/0097. */
const GOAL = 3

const scope = Scope.makeUnsafe()
const { byId, url, web } = await Effect.runPromise(Scope.provide(serve(textModel(TEXT, CHUNKS), { principals: 1, limits: { requestsPerSecond: 1e6, burst: 1e6 } }), scope))

// The floor: node:http reading the body and answering a JSON of the outcome's size, nothing else.
const answer = JSON.stringify({ runId: "0".repeat(36), outcome: "completed", text: TEXT, turns: 1, lastEventId: CHUNKS + 5 })
const bare = createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) })
    res.end(answer)
  })
})
await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve))
const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`

const floor = async (_id: string): Promise<number> => {
  const start = performance.now()
  const body = await post(bareUrl, "/sessions/x/runs", "t0", { prompt: "deploy" })
  const elapsed = performance.now() - start
  check(body.text)
  return elapsed
}

const check = (text: string) => {
  if (text !== TEXT) throw new Error(`a run answered ${JSON.stringify(text.slice(0, 80))}`)
}

const overHttp = async (id: string): Promise<number> => {
  await startSession(url, "t0", id)
  const start = performance.now()
  const body = await post(url, `/sessions/${id}/runs`, "t0", { prompt: "deploy" })
  const elapsed = performance.now() - start
  check(body.text)
  return elapsed
}

/** The same POST through `Server.handler` in process: the routes' and the run's cost without the socket. */
const webRequest = (path: string, body: unknown) =>
  new Request(`http://bench${path}`, { method: "POST", headers: { authorization: "Bearer t0", "content-type": "application/json" }, body: JSON.stringify(body) })

const throughHandler = async (id: string): Promise<number> => {
  const started = await web(webRequest("/sessions", { id, agent: "bench" }))
  if (started.status !== 201) throw new Error(`a start through the handler answered ${started.status}`)
  const start = performance.now()
  const answer = await web(webRequest(`/sessions/${id}/runs`, { prompt: "deploy" }))
  const body = await answer.json() as { readonly text: string }
  const elapsed = performance.now() - start
  check(body.text)
  return elapsed
}

const inProcess = async (id: string): Promise<number> => {
  await startSession(url, "t0", id)
  const start = performance.now()
  const reply = await Effect.runPromise(byId.run(id, "deploy"))
  const elapsed = performance.now() - start
  check(reply.text)
  return elapsed
}

/** The same run's events read in process (`ById.stream` drained): what the server reads of a run, with none of its own work. */
const streamed = async (id: string): Promise<number> => {
  await startSession(url, "t0", id)
  const start = performance.now()
  const events = await Effect.runPromise(Stream.runCollect(byId.stream(id, "deploy")))
  const elapsed = performance.now() - start
  check(events.flatMap((event) => (event._tag === "TextDelta" ? [event.text] : [])).join(""))
  return elapsed
}

const http: Array<number> = []
const local: Array<number> = []
const bareHttp: Array<number> = []
const handler: Array<number> = []
const read: Array<number> = []
const orders = [
  ["http", "local", "floor", "web", "stream"],
  ["local", "stream", "web", "http", "floor"],
  ["floor", "http", "stream", "web", "local"],
  ["web", "floor", "local", "stream", "http"],
  ["stream", "web", "http", "local", "floor"]
] as const
const paths = {
  http: { once: overHttp, times: http },
  local: { once: inProcess, times: local },
  floor: { once: floor, times: bareHttp },
  web: { once: throughHandler, times: handler },
  stream: { once: streamed, times: read }
}
for (let i = 0; i < WARMUP + RUNS; i++) {
  const keep = i >= WARMUP
  // A rotating order: the garbage one path leaves is collected during each of the others alike.
  for (const path of orders[i % orders.length]!) {
    const elapsed = await paths[path].once(`${path}${i}`)
    if (keep) paths[path].times.push(elapsed)
  }
}
bare.close()
await Effect.runPromise(Scope.close(scope, Exit.void))

const [http50, local50, floor50, web50, read50] = [percentile(http, 50), percentile(local, 50), percentile(bareHttp, 50), percentile(handler, 50), percentile(read, 50)]
const ratio = http50 / (floor50 + read50)
console.log(`${RUNS} runs a path (${WARMUP} warm-up), one reply of ${CHUNKS} text deltas (${TEXT.length} characters), a session each`)
console.log(`over HTTP (POST /sessions/:id/runs)      median ${ms(http50)}  p90 ${ms(percentile(http, 90))}  p99 ${ms(percentile(http, 99))}`)
console.log(`in process (ById.run)                    median ${ms(local50)}  p90 ${ms(percentile(local, 90))}  p99 ${ms(percentile(local, 99))}`)
console.log(`its events read in process (ById.stream) median ${ms(read50)}  p90 ${ms(percentile(read, 90))}  p99 ${ms(percentile(read, 99))}`)
console.log(`bare node:http (the floor)               median ${ms(floor50)}  p90 ${ms(percentile(bareHttp, 90))}  p99 ${ms(percentile(bareHttp, 99))}`)
console.log(`through Server.handler, no socket        median ${ms(web50)}  p90 ${ms(percentile(handler, 90))}  p99 ${ms(percentile(handler, 99))}`)
console.log(`the routes beyond the read: ${ms(web50 - read50)}; the Node adapter and HTTP beyond the handler: ${ms(http50 - web50)} (the floor ${ms(floor50)})`)
console.log(`the server's own: ${ms(http50 - floor50 - read50)} beyond the floor and the read (median)`)
console.log(`ratio ${ratio.toFixed(2)}x the floor and the read (goal <= ${GOAL}x): ${ratio <= GOAL ? "met" : "missed"}; ${(http50 / local50).toFixed(2)}x ById.run`)
report({
  benchmark: "server-runs: a run over HTTP / the HTTP floor (bare node:http) + its events read in process (ById.stream, median)",
  ours: ms(http50),
  baseline: `${ms(floor50)} + ${ms(read50)}`,
  ratio,
  goal: `≤ ${GOAL}×`,
  met: ratio <= GOAL
})
report({
  benchmark: "server-runs: a run over HTTP / the same run in process (ById.run, median)",
  ours: ms(http50),
  baseline: ms(local50),
  ratio: http50 / local50,
  goal: "none set (report; issue 40's 1.5×, ADR 0097)",
  met: null
})
report({
  benchmark: "server-runs: the HTTP floor (bare node:http, same client and body) / the run in process (median)",
  ours: ms(floor50),
  baseline: ms(local50),
  ratio: floor50 / local50,
  goal: "none set (report)",
  met: null
})
report({
  benchmark: "server-runs: the same POST through Server.handler, no socket / the run in process (median)",
  ours: ms(web50),
  baseline: ms(local50),
  ratio: web50 / local50,
  goal: "none set (report)",
  met: null
})

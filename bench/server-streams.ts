/**
 * bench/server-streams — 1,000 event streams open at once on one server (issue 40): the memory
 * each holds on the server (goal ≤ 64 KB a stream) and the events a second it delivers across them.
 *
 * Two processes, so the server's figures hold only the server: this one serves `SESSIONS` sessions
 * (one per principal, each principal within the default limits: `WATCHERS` streams of 32, a dozen
 * requests) of a tool-less agent whose model answers at once with `EVENTS` text deltas; a child
 * (this file with `--clients`) opens `WATCHERS` SSE streams on each session (`GET
 * /sessions/:id/events`, node:http). Memory: the server's RSS and its heap + external bytes after
 * full collections, before the streams and with all of them open and idle, the difference over
 * their count, the larger of the two judged. Events: the child then starts one run in every session (`POST /sessions/:id/runs`)
 * and counts the frames every stream receives until each has its run's `AgentEnd`; the events a
 * second is their total over the time from the first request to the last `AgentEnd`.
 *
 * Run: node bench/server-streams.ts
 */
import { Effect, Exit, Scope } from "effect"
import { fork } from "node:child_process"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { report } from "./report.ts"
import { call, kb, openSse, pacedModel, type Sse, serve, startSession } from "./support/server.ts"

const SESSIONS = 100
const WATCHERS = 10
const STREAMS = SESSIONS * WATCHERS
const EVENTS = 500
const GOAL_BYTES = 64 * 1024

/** What the child tells the server's process. */
type FromClients =
  | { readonly _tag: "Opened" }
  | { readonly _tag: "Delivered"; readonly frames: number; readonly elapsedMs: number; readonly perStream: number }

/** The child: opens the streams, says so, then on `run` starts every session's run and counts what arrives. */
const clients = async (url: string) => {
  const send = (message: FromClients) => process.send!(message)
  let frames = 0
  let ends = 0
  let allEnded = () => {}
  const ended = new Promise<void>((resolve) => allEnded = resolve)
  const streams: Array<Sse> = []
  for (let s = 0; s < SESSIONS; s++) {
    for (let w = 0; w < WATCHERS; w++) {
      streams.push(openSse(url, `/sessions/s${s}/events`, `t${s}`, (event) => {
        frames++
        if (event === "AgentEnd" && ++ends === STREAMS) allEnded()
      }))
    }
  }
  await Promise.all(streams.map((stream) => stream.opened))
  send({ _tag: "Opened" })
  await new Promise<void>((resolve) => process.once("message", () => resolve()))
  const start = performance.now()
  await Promise.all(Array.from({ length: SESSIONS }, (_, s) => call(url, `/sessions/s${s}/runs`, `t${s}`, { prompt: "go" })))
  await ended
  send({ _tag: "Delivered", frames, elapsedMs: performance.now() - start, perStream: frames / STREAMS })
  for (const stream of streams) stream.close()
  process.disconnect()
}

const server = async () => {
  setFlagsFromString("--expose-gc")
  const gc = runInNewContext("gc") as () => void
  const memory = () => {
    for (let i = 0; i < 4; i++) gc()
    const usage = process.memoryUsage()
    return { rss: usage.rss, heap: usage.heapUsed + usage.external }
  }
  const scope = Scope.makeUnsafe()
  const { url } = await Effect.runPromise(Scope.provide(serve(pacedModel(EVENTS, 0), { principals: SESSIONS }), scope))
  for (let s = 0; s < SESSIONS; s++) await startSession(url, `t${s}`, `s${s}`)
  // Warm-up: a stream opened, read and dropped on every session, so the first of each costs nothing to the census.
  const warm = Array.from({ length: SESSIONS }, (_, s) => openSse(url, `/sessions/s${s}/events`, `t${s}`, () => {}))
  await Promise.all(warm.map((stream) => stream.opened))
  for (const stream of warm) stream.close()
  await new Promise((resolve) => setTimeout(resolve, 200))

  const child = fork(import.meta.filename, ["--clients", url], { stdio: ["ignore", "inherit", "inherit", "ipc"] })
  let exited = false
  child.once("exit", () => exited = true)
  // A child that fails (a stream refused, a run not started) ends the benchmark rather than hanging it.
  const next = () =>
    new Promise<FromClients>((resolve, reject) => {
      if (exited) return reject(new Error("the clients' process exited"))
      const onExit = (code: number | null) => reject(new Error(`the clients' process exited (code ${code}) before saying what it saw`))
      child.once("exit", onExit)
      child.once("message", (message) => {
        child.off("exit", onExit)
        resolve(message as FromClients)
      })
    })
  const before = memory()
  const opened = next()
  if ((await opened)._tag !== "Opened") throw new Error("the clients did not open their streams")
  await new Promise((resolve) => setTimeout(resolve, 500))
  const open = memory()
  const delivered = next()
  child.send("run")
  const result = await delivered
  if (result._tag !== "Delivered") throw new Error("the clients did not count their events")
  if (!exited) await new Promise<void>((resolve) => child.once("exit", () => resolve()))
  await Effect.runPromise(Scope.close(scope, Exit.void))

  const rss = (open.rss - before.rss) / STREAMS
  const heap = (open.heap - before.heap) / STREAMS
  // RSS may not grow with a heap whose pages are committed already: the larger of the two is judged.
  const judged = Math.max(rss, heap)
  const perSecond = result.frames / (result.elapsedMs / 1000)
  console.log(`${STREAMS} streams open (${SESSIONS} sessions × ${WATCHERS}), the clients in another process`)
  console.log(`per stream: RSS ${kb(rss)}, heap + external ${kb(heap)} (goal ≤ ${kb(GOAL_BYTES)}, judged on the larger): ${judged <= GOAL_BYTES ? "met" : "missed"}`)
  console.log(
    `one run in every session (${EVENTS} text deltas each): ${result.frames} frames delivered (${result.perStream} a stream) in ${result.elapsedMs.toFixed(0)} ms: ` +
      `${Math.round(perSecond)} events/s`
  )
  report({
    benchmark: `server-streams: server memory per open SSE stream (the larger of RSS and heap + external; ${STREAMS} open, idle)`,
    ours: kb(judged),
    baseline: `RSS ${kb(rss)}, heap + external ${kb(heap)}`,
    ratio: null,
    goal: `≤ ${kb(GOAL_BYTES)}`,
    met: judged <= GOAL_BYTES
  })
  report({
    benchmark: `server-streams: events delivered a second across ${STREAMS} streams (${SESSIONS} runs at once)`,
    ours: `${Math.round(perSecond)} events/s`,
    baseline: `${result.frames} in ${(result.elapsedMs / 1000).toFixed(2)} s`,
    ratio: null,
    goal: "none set (report)",
    met: null
  })
}

const at = process.argv.indexOf("--clients")
if (at >= 0) await clients(process.argv[at + 1]!)
else await server()

/**
 * bench/sessions — what an idle session costs: heap per session, and the time to start and to
 * stop many (issue 14: 100,000 in one process).
 *
 * Ours: 100,000 sessions of one agent (the coding tools), each with its own LocalSandbox layer (built
 * by a session's first tool call, so an idle one holds none), a `TestModel` with an empty script
 * provided (idle sessions never ask the model), all in one Scope; and the same sessions started
 * through the `Sessions` registry. Baseline: the bare skeleton of an actor, per session a Scope forked
 * from the parent, a `Queue` and one fiber forked in that scope. Heap and RSS are read after a
 * forced full gc before the starts and after them, with every handle still held; "stop all" closes
 * the parent scope. Each variant runs in a fresh child process (so RSS deltas are not hidden by
 * pages an earlier variant freed), REPS times, interleaved; numbers are medians. Goals: ≤ 1.6 KB of
 * heap per session (issue 22 set 1.5 KB, what it was before the project instructions cache; the
 * registry's sessions measure 1.50–1.51 KB, under the skeleton's 1.67 KB, docs/decisions/0097);
 * start-all and stop-all each ≤ 3× the skeleton's. Linearity: the sessions are
 * also started and stopped at a tenth of the count, and the time per session at the full count
 * is compared with the time per session there (goal ≤ 1.5×; the skeleton's own growth is printed
 * beside it, as a large heap costs every allocation some gc).
 *
 * The host services a LocalSandbox needs (filesystem, paths, the process budget) come from
 * `Condukt.layer`, provided once around all the sessions, as a program provides them.
 *
 * Run: node_modules/.bin/node bench/sessions.ts [--count=N]   (it re-spawns itself with --expose-gc)
 * One variant alone: node --expose-gc bench/sessions.ts --variant=sessions [--count=N]
 */
import { Agent, Session, Sessions, Tools } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Queue, Scope } from "effect"
import { report } from "./report.ts"

const COUNT = Number(process.argv.find((a) => a.startsWith("--count="))?.slice(8) ?? 100_000)
const REPS = 3
const GOAL_BYTES = 1.6 * 1024
const GOAL_RATIO = 3

interface Measurement {
  readonly heapBytes: number
  readonly rssBytes: number
  readonly startMs: number
  readonly stopMs: number
}

// ---------------------------------------------------------------------------------------------
// One variant, in a child process started with --expose-gc
// ---------------------------------------------------------------------------------------------

const collect = () => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error("run with --expose-gc")
  for (let i = 0; i < 3; i++) gc()
}

const memory = () => {
  collect()
  const { heapUsed, rss } = process.memoryUsage()
  return { heapUsed, rss }
}

type StartAll = (scope: Scope.Scope, handles: Array<unknown>, count: number) => Effect.Effect<void>

/** Starts `COUNT` actors in one scope (`startAll` pushes their handles), measures, closes the scope. */
const measure = async (startAll: StartAll): Promise<Measurement> => {
  // A few hundred first: module-level caches and the JIT are not what we measure.
  const warm = Scope.makeUnsafe()
  await Effect.runPromise(startAll(warm, [], 300))
  await Effect.runPromise(Scope.close(warm, Exit.void))
  const scope = Scope.makeUnsafe()
  const handles: Array<unknown> = []
  const before = memory()
  const started = performance.now()
  await Effect.runPromise(startAll(scope, handles, COUNT))
  const startMs = performance.now() - started
  const after = memory()
  const stopping = performance.now()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  const stopMs = performance.now() - stopping
  if (handles.length !== COUNT) throw new Error(`started ${handles.length}, not ${COUNT}`)
  return { heapBytes: (after.heapUsed - before.heapUsed) / COUNT, rssBytes: (after.rss - before.rss) / COUNT, startMs, stopMs }
}

const skeleton: StartAll = (scope, handles, count) =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) {
      const own = yield* Scope.fork(scope)
      const mailbox = yield* Queue.unbounded<string>()
      const fiber = yield* Effect.forkIn(Effect.never, own)
      handles.push({ own, mailbox, fiber })
    }
  })

const agent = Agent.make({ name: "idle", model: "test:scripted", tools: Tools.coding })
const cwd = mkdtempSync(join(tmpdir(), "condukt-bench-sessions-"))
const sandbox = LocalSandbox.layer({ cwd })

const sessions: StartAll = (scope, handles, count) =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) handles.push(yield* Session.start(agent, { sandbox }))
  }).pipe(Scope.provide(scope), Effect.provide(TestModel.layer([])), Effect.provide(Condukt.layer), Effect.orDie)

/** The registry takes no per-start sandbox layer that needs services: the agent names it. */
const withSandbox = Agent.make({ name: "idle", model: "test:scripted", tools: Tools.coding, sandbox })

const registry: StartAll = (scope, handles, count) =>
  Effect.gen(function*() {
    const registry = yield* Sessions.make().pipe(Scope.provide(scope))
    for (let i = 0; i < count; i++) handles.push(yield* registry.start(withSandbox))
  }).pipe(Effect.provide(TestModel.layer([])), Effect.provide(Condukt.layer), Effect.orDie)

const variants: Record<string, { readonly label: string; readonly run: StartAll }> = {
  skeleton: { label: "Scope + Queue + fiber (skeleton)", run: skeleton },
  sessions: { label: "Session.start, own LocalSandbox", run: sessions },
  registry: { label: "Sessions.start (the registry)", run: registry }
}

// ---------------------------------------------------------------------------------------------
// The parent: spawns the children, prints medians
// ---------------------------------------------------------------------------------------------

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const child = (variant: string, count = COUNT): Measurement => {
  const out = spawnSync(process.execPath, ["--expose-gc", import.meta.filename, `--variant=${variant}`, `--count=${count}`], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"]
  })
  if (out.status !== 0) throw new Error(`variant ${variant} exited with ${out.status}`)
  return JSON.parse(out.stdout.trim().split("\n").at(-1)!) as Measurement
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(2)} KB`

const main = async () => {
  const only = process.argv.find((a) => a.startsWith("--variant="))?.slice(10)
  if (only !== undefined) {
    const variant = variants[only]
    if (variant === undefined) throw new Error(`unknown variant ${only}`)
    console.log(JSON.stringify(await measure(variant.run)))
    return
  }
  const results: Record<string, Array<Measurement>> = Object.fromEntries(Object.keys(variants).map((name) => [name, []]))
  const small = COUNT / 10
  const smaller: Record<string, Array<Measurement>> = { skeleton: [], sessions: [] }
  for (let rep = 0; rep < REPS; rep++) {
    for (const name of Object.keys(variants)) results[name]!.push(child(name))
    for (const name of Object.keys(smaller)) smaller[name]!.push(child(name, small))
  }
  console.log(`${COUNT} idle actors per run, ${REPS} runs per variant, each in a fresh process (--expose-gc), medians`)
  const summary: Record<string, Measurement> = {}
  for (const [name, { label }] of Object.entries(variants)) {
    const runs = results[name]!
    const m: Measurement = {
      heapBytes: median(runs.map((r) => r.heapBytes)),
      rssBytes: median(runs.map((r) => r.rssBytes)),
      startMs: median(runs.map((r) => r.startMs)),
      stopMs: median(runs.map((r) => r.stopMs))
    }
    summary[name] = m
    console.log(
      `${label.padEnd(36)} heap ${kb(m.heapBytes).padStart(9)}/actor  rss ${kb(m.rssBytes).padStart(9)}/actor  ` +
        `start all ${m.startMs.toFixed(0).padStart(6)} ms  stop all ${m.stopMs.toFixed(0).padStart(6)} ms`
    )
  }
  const perSession = (runs: ReadonlyArray<Measurement>, count: number) => median(runs.map((r) => (r.startMs + r.stopMs) / count))
  const growth = (name: string) => perSession(results[name]!, COUNT) / perSession(smaller[name]!, small)
  console.log(
    `time per session (start + stop), ${COUNT} vs ${small}: sessions ${growth("sessions").toFixed(2)}×, skeleton ${growth("skeleton").toFixed(2)}×`
  )
  report({
    benchmark: `Session.start + stop: time per session at ${COUNT} / at ${small}`,
    ours: `${(perSession(results["sessions"]!, COUNT) * 1000).toFixed(1)} µs`,
    baseline: `${(perSession(smaller["sessions"]!, small) * 1000).toFixed(1)} µs`,
    ratio: growth("sessions"),
    goal: "≤ 1.5× (linear)",
    met: growth("sessions") <= 1.5
  })
  const base = summary["skeleton"]!
  for (const name of ["sessions", "registry"]) {
    const ours = summary[name]!
    const label = variants[name]!.label
    report({
      benchmark: `${label}: heap per idle session / skeleton`,
      ours: kb(ours.heapBytes),
      baseline: kb(base.heapBytes),
      ratio: ours.heapBytes / base.heapBytes,
      goal: "≤ 1.6 KB",
      met: ours.heapBytes <= GOAL_BYTES
    })
    for (const phase of ["start", "stop"] as const) {
      const key = phase === "start" ? "startMs" : "stopMs"
      const ratio = ours[key] / base[key]
      report({
        benchmark: `${label}: ${phase} ${COUNT} / skeleton`,
        ours: `${ours[key].toFixed(0)} ms`,
        baseline: `${base[key].toFixed(0)} ms`,
        ratio,
        goal: `≤ ${GOAL_RATIO}×`,
        met: ratio <= GOAL_RATIO
      })
    }
  }
}

try {
  await main()
} finally {
  rmSync(cwd, { recursive: true, force: true })
}

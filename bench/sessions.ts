/**
 * bench/sessions — what an idle session costs: memory per session, and the time to start and to
 * stop many.
 *
 * Ours: 10,000 sessions of one agent (the coding tools), each with its own LocalSandbox built from
 * one shared layer value, all in one Scope, a `TestModel` with an empty script provided (idle
 * sessions never ask the model). Baseline: the minimum an actor needs, 10,000
 * `Effect.forkIn(Effect.never, scope)` fibers with a `Queue` and a `PubSub` each. Heap and RSS are
 * read after a forced full gc before the starts and after them, with every handle still held. Each
 * variant runs in a fresh child process (so RSS deltas are not hidden by pages an earlier variant
 * freed), REPS times, interleaved; numbers are medians. A third variant, every session on one
 * LocalSandbox built beforehand, separates the session's own cost from its sandbox's. Goal: ≤ 20 KB
 * per session, and starting plus stopping all < 2 s.
 *
 * The host services a LocalSandbox needs (filesystem, paths, the process budget) come from
 * `Condukt.layer`, provided once around all the sessions, as a program provides them.
 *
 * Run: node_modules/.bin/node bench/sessions.ts   (it re-spawns itself with --expose-gc)
 * One variant alone: node --expose-gc bench/sessions.ts --variant=sessions [--count=N]
 */
import { Agent, Condukt, LocalSandbox, type Sandbox, Session, Tools } from "@condukt/core"
import { TestModel } from "@condukt/testing"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Exit, Layer, PubSub, Queue, Scope } from "effect"
import { report } from "./report.ts"

const COUNT = Number(process.argv.find((a) => a.startsWith("--count="))?.slice(8) ?? 10_000)
const REPS = 3
const GOAL_BYTES = 20 * 1024
const GOAL_MS = 2000

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

/** Starts `COUNT` actors in one scope (`startAll` pushes their handles), measures, closes the scope. */
const measure = async (
  startAll: (scope: Scope.Scope, handles: Array<unknown>) => Effect.Effect<void>
): Promise<Measurement> => {
  const scope = Scope.makeUnsafe()
  const handles: Array<unknown> = []
  const before = memory()
  const started = performance.now()
  await Effect.runPromise(startAll(scope, handles))
  const startMs = performance.now() - started
  const after = memory()
  const stopping = performance.now()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  const stopMs = performance.now() - stopping
  if (handles.length !== COUNT) throw new Error(`started ${handles.length}, not ${COUNT}`)
  return { heapBytes: (after.heapUsed - before.heapUsed) / COUNT, rssBytes: (after.rss - before.rss) / COUNT, startMs, stopMs }
}

const bareActors = (count = COUNT) => (scope: Scope.Scope, handles: Array<unknown>): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) {
      const mailbox = yield* Queue.unbounded<string>()
      const events = yield* PubSub.unbounded<string>()
      const fiber = yield* Effect.forkIn(Effect.never, scope)
      handles.push({ mailbox, events, fiber })
    }
  })

const baseline = async (): Promise<Measurement> => {
  const scope = Scope.makeUnsafe()
  await Effect.runPromise(bareActors(300)(scope, []))
  await Effect.runPromise(Scope.close(scope, Exit.void))
  return measure(bareActors())
}

const agent = Agent.make({ name: "idle", model: "test:scripted", tools: Tools.coding })

/** `COUNT` sessions in `scope`; the model (and `shared`, when given, as the Sandbox) provided once around them all. */
const startSessions = (
  options: Session.StartOptions<Layer.Success<typeof Condukt.layer>>,
  shared: Context.Context<Sandbox.Sandbox> = Context.empty() as Context.Context<Sandbox.Sandbox>,
  count = COUNT
) =>
(scope: Scope.Scope, handles: Array<unknown>): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) handles.push(yield* Session.start(agent, options).pipe(Scope.provide(scope)))
  }).pipe(Effect.provide(TestModel.layer([])), Effect.provide(shared), Effect.provide(Condukt.layer), Effect.orDie)

/** Starts and stops a few hundred sessions first: module-level caches and the JIT are not what we measure. */
const warmUp = async (
  options: Session.StartOptions<Layer.Success<typeof Condukt.layer>>,
  shared?: Context.Context<Sandbox.Sandbox>
) => {
  const scope = Scope.makeUnsafe()
  await Effect.runPromise(startSessions(options, shared, 300)(scope, []))
  await Effect.runPromise(Scope.close(scope, Exit.void))
}

/** Each session builds its own LocalSandbox from one layer value: the case the goal is about. */
const sessions = async (): Promise<Measurement> => {
  const cwd = mkdtempSync(join(tmpdir(), "condukt-bench-sessions-"))
  const sandbox = LocalSandbox.layer({ cwd })
  await warmUp({ sandbox })
  const result = await measure(startSessions({ sandbox }))
  rmSync(cwd, { recursive: true, force: true })
  return result
}

/** A diagnostic: one LocalSandbox built beforehand and provided around every session, to separate the session's own cost. */
const sessionsShared = async (): Promise<Measurement> => {
  const cwd = mkdtempSync(join(tmpdir(), "condukt-bench-sessions-"))
  const sandboxScope = Scope.makeUnsafe()
  const shared = await Effect.runPromise(Layer.buildWithScope(LocalSandbox.layer({ cwd }).pipe(Layer.provide(Condukt.layer)), sandboxScope))
  await warmUp({}, shared)
  const result = await measure(startSessions({}, shared))
  await Effect.runPromise(Scope.close(sandboxScope, Exit.void))
  rmSync(cwd, { recursive: true, force: true })
  return result
}

const variants: Record<string, { readonly label: string; readonly run: () => Promise<Measurement> }> = {
  baseline: { label: "fiber + Queue + PubSub (baseline)", run: baseline },
  shared: { label: "Session.start, one shared sandbox", run: sessionsShared },
  sessions: { label: "Session.start + own LocalSandbox", run: sessions }
}

// ---------------------------------------------------------------------------------------------
// The parent: spawns the children, prints medians
// ---------------------------------------------------------------------------------------------

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const child = (variant: string): Measurement => {
  // Every session's LocalSandbox builds NodeServices, whose Terminal adds a stdin listener: Node
  // warns past 10. Known (see the module comment); silenced to keep one line per measurement.
  const flags = ["--expose-gc", "--disable-warning=MaxListenersExceededWarning"]
  const out = spawnSync(process.execPath, [...flags, import.meta.filename, `--variant=${variant}`, `--count=${COUNT}`], {
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
    console.log(JSON.stringify(await variant.run()))
    return
  }
  const results: Record<string, Array<Measurement>> = Object.fromEntries(Object.keys(variants).map((name) => [name, []]))
  for (let rep = 0; rep < REPS; rep++) for (const name of Object.keys(variants)) results[name]!.push(child(name))
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
        `start all ${m.startMs.toFixed(0).padStart(5)} ms  stop all ${m.stopMs.toFixed(0).padStart(5)} ms`
    )
  }
  const ours = summary["sessions"]!
  const base = summary["baseline"]!
  const total = ours.startMs + ours.stopMs
  console.log(
    `session vs baseline: heap ${(ours.heapBytes / base.heapBytes).toFixed(1)}x, start+stop ${(total / (base.startMs + base.stopMs)).toFixed(1)}x`
  )
  const memoryMet = ours.heapBytes <= GOAL_BYTES
  const timeMet = total < GOAL_MS
  console.log(
    `heap ${kb(ours.heapBytes)}/session (goal <= 20 KB): ${memoryMet ? "met" : "missed"}; ` +
      `start+stop ${total.toFixed(0)} ms (goal < ${GOAL_MS} ms): ${timeMet ? "met" : "missed"}`
  )
  report({
    benchmark: "sessions: heap per idle session / per bare actor",
    ours: kb(ours.heapBytes),
    baseline: kb(base.heapBytes),
    ratio: ours.heapBytes / base.heapBytes,
    goal: "≤ 20 KB",
    met: memoryMet
  })
  report({
    benchmark: `sessions: start + stop ${COUNT} / bare actors`,
    ours: `${total.toFixed(0)} ms`,
    baseline: `${(base.startMs + base.stopMs).toFixed(0)} ms`,
    ratio: total / (base.startMs + base.stopMs),
    goal: `< ${GOAL_MS} ms`,
    met: timeMet
  })
}

await main()

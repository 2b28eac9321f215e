/**
 * bench/virtual-fair — fair virtual sandboxes (issue 43 item 2, docs/decisions/0093): how fast
 * another session's `echo` answers, and how long the program's event loop stalls, while ten
 * sessions run CPU-bound scripts — eight `while true; do :; done`, two `sed` over a 10 MB file in
 * a loop (limits raised so only a timeout ends them).
 *
 * Each design runs with ten loops, then with eight loops and two `sed`s, each run a window of
 * `WINDOW_MS`: an `echo` due 10 ms after the last answer, timed from when it was due (a starved
 * loop asks late, and that counts); a 5 ms timer whose late ticks are the event loop's gaps.
 *   - idle: no busy session, the interpreter on this thread (the baseline), and on a pool (the
 *     pool's baseline: its calls cross threads, so on a loaded machine its floor is higher — the
 *     pool's ratios are to it, what ten busy sessions add);
 *   - this thread (VirtualSandbox without a pool, as before issue 43): the busy calls have a
 *     250 ms timeout, so the window ends at all; loops only (a `sed` blocks this thread as it
 *     does under cooperative yielding, seconds at a time);
 *   - cooperative yielding, a prototype on raw just-bash configured as the sandbox configures it:
 *     a transform plugin puts a command at the top of every loop body that yields a macrotask
 *     (`setImmediate`) once the thread has run 4 ms since the last yield;
 *   - a WorkerPool (VirtualSandbox option `workers`, the design chosen): 11 workers, each warmed
 *     by 40 calls first (a pool's workers live as long as the program; a fresh worker's first
 *     calls compile its code), as the idle thread is by 440.
 * The goals (echo p99 ≤ 50 ms, event-loop gap ≤ 50 ms) are judged on the pool with `sed`, run
 * three times: the median window's p99 (one window's p99 is its few slowest calls, and on a shared
 * machine a burst of other work lands in one window or another). The other runs are printed and
 * reported without a goal. The gap's max is printed beside its p99: the idle run's max already
 * shows what other processes cost. The load average is printed with every line.
 *
 * Every window runs in a process of its own (the script runs itself with `--window <name>`).
 *
 * Run: node_modules/.bin/node bench/virtual-fair.ts
 */
import { type Duration, Effect, Fiber } from "effect"
import { spawnSync } from "node:child_process"
import { loadavg } from "node:os"
import * as VirtualSandbox from "../packages/sandbox-virtual/src/VirtualSandbox.ts"
import * as WorkerPool from "../packages/sandbox-virtual/src/WorkerPool.ts"
import { report } from "./report.ts"

/** The part of just-bash used by the prototype; the module is the one VirtualSandbox loads. */
interface RawBash {
  readonly exec: (script: string, options?: { readonly signal?: AbortSignal; readonly rawScript?: boolean }) => Promise<unknown>
  readonly registerTransformPlugin: (plugin: { readonly name: string; readonly transform: (context: { readonly ast: unknown }) => { readonly ast: unknown } }) => void
}
interface RawModule {
  readonly Bash: new(options: Record<string, unknown>) => RawBash
  readonly InMemoryFs: new() => { readonly writeFileSync: (path: string, content: string) => void; readonly mkdirSync: (path: string, options: { readonly recursive: boolean }) => void }
  readonly MountableFs: new(options: { readonly base: unknown }) => unknown
  readonly parse: (script: string) => { readonly statements: ReadonlyArray<unknown> }
  readonly defineCommand: (name: string, run: () => Promise<{ stdout: string; stderr: string; exitCode: number }>) => unknown
}
const justBash = new URL("../packages/sandbox-virtual/node_modules/just-bash/dist/bundle/index.js", import.meta.url)

const BUSY = 10
const EDITING = 2
const WINDOW_MS = Number(process.env["VIRTUAL_FAIR_WINDOW_MS"] ?? 4000)
const GOAL_MS = 50
const SLICE_MS = 4
/** Calls before a window, so it measures code already compiled (a pool's workers are long-lived). */
const WARM_CALLS = 440
const unlimited = { maxCommands: 1_000_000_000, maxLoopIterations: 1_000_000_000 }
const bigFile = ("abcdefghij".repeat(99) + "\n").repeat(10 * 1024)
const spin = "while true; do :; done"
const edit = "while true; do sed 's/a/b/g' big.txt | wc -c; done"

interface Window {
  readonly echo: ReadonlyArray<number>
  readonly gaps: ReadonlyArray<number>
}

const quantile = (values: ReadonlyArray<number>, q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0
}
const ms = (value: number) => `${value.toFixed(1)} ms`

/** Times `echo` every 10 ms for the window, watching the event loop's gaps meanwhile. */
const measure = (echo: () => Promise<unknown>): Promise<Window> =>
  new Promise((resolve, reject) => {
    const gaps: Array<number> = []
    let last = performance.now()
    const timer = setInterval(() => {
      const now = performance.now()
      gaps.push(now - last)
      last = now
    }, 5)
    const times: Array<number> = []
    const started = performance.now()
    // A call is due 10 ms after the last answer; its time runs from then, so a starved loop that
    // only gets to ask late counts against the echo too.
    const next = (due: number): void => {
      if (performance.now() - started >= WINDOW_MS) {
        clearInterval(timer)
        gaps.push(performance.now() - last)
        // The call due now could not even be asked until the loop came back: that wait counts.
        times.push(performance.now() - due)
        return resolve({ echo: times, gaps })
      }
      echo().then(() => {
        const answered = performance.now()
        times.push(answered - due)
        setTimeout(() => next(answered + 10), 10)
      }, reject)
    }
    next(performance.now())
  })

const load = () => `load ${loadavg()[0]!.toFixed(1)}`

const line = (design: string, window: Window) =>
  console.log(
    `${design.padEnd(40)} ${load()}  echo p50 ${ms(quantile(window.echo, 0.5)).padStart(10)}  p99 ${ms(quantile(window.echo, 0.99)).padStart(10)}  (${window.echo.length} calls)   ` +
      `gap p99 ${ms(quantile(window.gaps, 0.99)).padStart(10)}  max ${ms(Math.max(...window.gaps)).padStart(10)}`
  )

const run = <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(effect)

const idle = async (): Promise<Window> => {
  const sandbox = await run(VirtualSandbox.make())
  for (let i = 0; i < WARM_CALLS; i++) await run(sandbox.exec("echo warm"))
  return measure(() => run(sandbox.exec("echo hi")))
}

/** Ten busy sessions as `exec`s of `make`'s sandboxes, repeated until interrupted, and an echo session. */
const busyWindow = (options: VirtualSandbox.Options, timeout: Duration.Input, editing: number, count = BUSY) =>
  Effect.gen(function*() {
    const busy: Array<Fiber.Fiber<unknown, unknown>> = []
    for (let i = 0; i < count; i++) {
      const edits = i < editing
      const sandbox = yield* VirtualSandbox.make({ ...options, limits: unlimited, files: edits ? { "big.txt": bigFile } : {} })
      busy.push(yield* Effect.forkChild(Effect.forever(Effect.ignore(sandbox.exec(edits ? edit : spin, { timeout })))))
    }
    const echo = yield* VirtualSandbox.make(options)
    yield* Effect.sleep("200 millis")
    const window = yield* Effect.promise(() => measure(() => run(echo.exec("echo hi"))))
    yield* Effect.forEach(busy, Fiber.interrupt)
    return window
  })

const thisThread = (editing: number): Promise<Window> => run(busyWindow({}, "250 millis", editing))

const onPool = (editing: number, busy = BUSY): Promise<Window> =>
  run(Effect.scoped(Effect.gen(function*() {
    const pool = yield* WorkerPool.make({ maxWorkers: BUSY + 1, warmWorkers: BUSY + 1 })
    const warm = yield* VirtualSandbox.make({ workers: pool })
    // Every worker started and its code compiled, as in a program whose pool has served a while.
    for (let i = 0; i < WARM_CALLS / (BUSY + 1); i++) {
      yield* Effect.forEach(Array.from({ length: BUSY + 1 }), () => warm.exec("echo warm"), { concurrency: "unbounded" })
    }
    return yield* busyWindow({ workers: pool }, "60 seconds", editing, busy)
  })))

/** The prototype: just-bash as the sandbox configures it, loops yielding every `SLICE_MS`. */
const cooperative = async (editing: number): Promise<Window> => {
  const raw = (await import(justBash.href)) as RawModule
  let sliceStart = performance.now()
  const yielder = raw.defineCommand("__yield", async () => {
    if (performance.now() - sliceStart >= SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve))
      sliceStart = performance.now()
    }
    return { stdout: "", stderr: "", exitCode: 0 }
  })
  const yieldStatement = raw.parse("__yield").statements[0]
  const loops = new Set(["While", "Until", "For", "CStyleFor"])
  const inject = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(inject)
    if (node === null || typeof node !== "object") return
    const record = node as Record<string, unknown>
    for (const value of Object.values(record)) inject(value)
    if (loops.has(record["type"] as string) && Array.isArray(record["body"])) record["body"].unshift(yieldStatement)
  }
  const make = (files: Record<string, string>) => {
    const memory = new raw.InMemoryFs()
    memory.mkdirSync("/home/user", { recursive: true })
    for (const [path, content] of Object.entries(files)) memory.writeFileSync(`/home/user/${path}`, content)
    const bash = new raw.Bash({
      fs: new raw.MountableFs({ base: memory }),
      cwd: "/home/user",
      executionLimitProfile: "hardened",
      executionLimits: { maxCommandCount: 1e9, maxLoopIterations: 1e9, maxExecutionTimeMs: 60_000, maxOutputSize: 1e9 },
      customCommands: [yielder]
    })
    bash.registerTransformPlugin({ name: "yield", transform: ({ ast }) => (inject(ast), { ast }) })
    return bash
  }
  const stop = new AbortController()
  const loops10 = Array.from({ length: BUSY }, async (_, i) => {
    const bash = make(i < editing ? { "big.txt": bigFile } : {})
    while (!stop.signal.aborted) await bash.exec(i < editing ? edit : spin, { signal: stop.signal, rawScript: true })
  })
  const echo = make({})
  await new Promise((resolve) => setTimeout(resolve, 200))
  const window = await measure(() => echo.exec("echo hi", { signal: new AbortController().signal, rawScript: true }))
  stop.abort()
  await Promise.all(loops10)
  return window
}

/** One window, by name, as the child process measures it. */
const windowOf = (name: string, editing: number): Promise<Window> => {
  switch (name) {
    case "idle":
      return idle()
    case "pool-idle":
      return onPool(0, 0)
    case "thread":
      return thisThread(editing)
    case "cooperative":
      return cooperative(editing)
    default:
      return onPool(editing)
  }
}

const windowPrefix = "WINDOW "

/**
 * Measures one window in a process of its own, so no run inherits another's heap, compiled code
 * or workers (the in-thread runs leave ten sandboxes' 10 MB files behind them).
 */
const inChild = (name: string, editing: number): Window => {
  const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!, "--window", name, String(editing)], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    timeout: 300_000
  })
  const found = child.stdout.split("\n").find((text) => text.startsWith(windowPrefix))
  if (found === undefined) throw new Error(`the ${name} window failed (exit ${child.status}): ${child.stderr.slice(-2000)}`)
  return JSON.parse(found.slice(windowPrefix.length)) as Window
}

const main = async () => {
  if (process.argv[2] === "--window") {
    const window = await windowOf(process.argv[3]!, Number(process.argv[4]))
    console.log(`${windowPrefix}${JSON.stringify(window)}`)
    return
  }
  const base = inChild("idle", 0)
  line("idle (baseline)", base)
  // The pool's own floor: its calls cross threads, and on a loaded machine each crossing waits for a core.
  const poolBase = inChild("pool-idle", 0)
  line("idle, WorkerPool (the pool's baseline)", poolBase)
  const runs: Array<readonly [design: string, editing: number, window: Window]> = []
  for (const editing of [0, EDITING]) {
    const what = editing === 0 ? "10 loops" : `${BUSY - editing} loops + ${editing} sed`
    for (const [design, name] of [["this thread", "thread"], ["cooperative yielding", "cooperative"], ["WorkerPool", "pool"]] as const) {
      // A `sed` on this thread blocks it as it does under cooperative yielding: measured once.
      if (design === "this thread" && editing > 0) continue
      const window = inChild(name, editing)
      line(`${what}, ${design}`, window)
      runs.push([design, editing, window])
    }
  }
  for (const [design, editing, window] of runs) {
    if (design === "WorkerPool" && editing === EDITING) continue
    report({
      benchmark: `virtual-fair: echo p99 / gap p99, ${BUSY - editing} loops + ${editing} sed, ${design}`,
      ours: `${ms(quantile(window.echo, 0.99))} / ${ms(quantile(window.gaps, 0.99))}`,
      baseline: `${ms(quantile(base.echo, 0.99))} / ${ms(quantile(base.gaps, 0.99))} idle`,
      ratio: quantile(window.echo, 0.99) / quantile(base.echo, 0.99),
      goal: design === "WorkerPool" ? "none (the goal is judged with sed)" : "none (design not chosen)",
      met: null
    })
  }
  // The goal's run, twice more: on a shared machine one window's p99 is a few calls, and a burst of
  // other work lands in one window or another. The median window of the three is judged.
  const windows = [runs.find(([design, editing]) => design === "WorkerPool" && editing === EDITING)![2]]
  for (let i = 0; i < 2; i++) {
    const window = inChild("pool", EDITING)
    line(`${BUSY - EDITING} loops + ${EDITING} sed, WorkerPool again`, window)
    windows.push(window)
  }
  const medianOf = (values: ReadonlyArray<number>) => quantile(values, 0.5)
  const echoes = windows.map((window) => quantile(window.echo, 0.99))
  const gapsP99 = windows.map((window) => quantile(window.gaps, 0.99))
  const echoP99 = medianOf(echoes)
  const gapP99 = medianOf(gapsP99)
  const pool = { gaps: windows.flatMap((window) => window.gaps) }
  console.log(`WorkerPool with sed, three windows: echo p99 ${echoes.map(ms).join(", ")}; gap p99 ${gapsP99.map(ms).join(", ")}`)
  report({
    benchmark: `virtual-fair: echo p99 (median of 3 windows), ${BUSY - EDITING} loops + ${EDITING} sed on a WorkerPool`,
    ours: `${ms(echoP99)} (${load()})`,
    baseline: `${ms(quantile(poolBase.echo, 0.99))} idle pool, ${ms(quantile(base.echo, 0.99))} idle thread`,
    ratio: echoP99 / quantile(poolBase.echo, 0.99),
    goal: `≤ ${GOAL_MS} ms`,
    met: echoP99 <= GOAL_MS
  })
  report({
    benchmark: `virtual-fair: event-loop gap p99 (median of 3 windows), ${BUSY - EDITING} loops + ${EDITING} sed on a WorkerPool`,
    ours: `${ms(gapP99)} (max ${ms(Math.max(...pool.gaps))}, ${load()})`,
    baseline: `${ms(quantile(poolBase.gaps, 0.99))} idle pool (max ${ms(Math.max(...poolBase.gaps))})`,
    ratio: gapP99 / quantile(poolBase.gaps, 0.99),
    goal: `≤ ${GOAL_MS} ms`,
    met: gapP99 <= GOAL_MS
  })
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})

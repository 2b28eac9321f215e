/**
 * bench/sessions-exec — many sessions each running one Bash `true` at once, under the default
 * process budget (issue 14): does it complete, does RSS stay bounded, is any process left, and what
 * does a session cost beyond its process?
 *
 * Ours: COUNT sessions (10,000) of one agent whose only tool is Bash, each on its own LocalSandbox
 * built from one shared layer value, all started at once in one Scope with `Condukt.layer`'s host
 * services (so one ProcessBudget, 4 per core). Each session's model is its own `TestModel`, scripted
 * to call Bash `true` once and then answer; each session does one run, and the Scope closes once
 * every run has answered. Only the public API is used (Session.start, session.run, Scope).
 * Baseline: COUNT raw `spawn("bash", ["-c", "true"])` under the same bound, by a bare counter and
 * FIFO (bench/support/spawns.ts). Each variant runs in a fresh child process, so its peak RSS
 * (`maxRSS`) is its own, and the processes left are the children of that process once it is done.
 * The wait for a permit is not the command's time (docs/decisions/0037): at 20–50 ms a spawn on a
 * 2-core host, 10,000 at once are minutes of spawning, and every call must still run. A call the
 * budget refuses (after its `maxWait`, 10 minutes) or that fails otherwise is counted by its text.
 *
 * Run: node_modules/.bin/node bench/sessions-exec.ts [--count=N]
 * One variant alone: node bench/sessions-exec.ts --variant=sessions|raw [--count=N]
 */
import { Agent, ProcessBudget, type Sandbox, Session, Tools } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { report } from "./report.ts"
import { bounded, children, rawSpawn } from "./support/spawns.ts"

const COUNT = Number(process.argv.find((a) => a.startsWith("--count="))?.slice(8) ?? 10_000)
const WARMUP = 50

interface Measurement {
  /** Wall time from the first start to the last answer (ours) or exit (raw). */
  readonly runMs: number
  /** Closing the Scope that holds every session (0 for raw). */
  readonly stopMs: number
  readonly peakRssBytes: number
  /** RSS before the first start. */
  readonly startRssBytes: number
  readonly left: number
  readonly permits: number
  /** Bash calls that failed, by the text the model read (the budget's refusal, say); none for raw. */
  readonly failures: Readonly<Record<string, number>>
}

// ---------------------------------------------------------------------------------------------
// Ours: sessions
// ---------------------------------------------------------------------------------------------

const agent = Agent.make({ name: "bash-true", model: "test:scripted", tools: [Tools.Bash] })
const script = [TestModel.toolCall("Bash", { command: "true" }), TestModel.text("done")]

type SandboxLayer = Layer.Layer<Sandbox.Sandbox, unknown, Layer.Success<typeof Condukt.layer>>

/**
 * One session, started in the Scope around it, doing its one run: "ran" when Bash ran and the
 * session answered, else the text of Bash's failure (the budget refusing, say).
 */
const oneSession = (sandbox: SandboxLayer) =>
  Effect.gen(function*() {
    const session = yield* Session.start(agent, { sandbox })
    const result = yield* session.run("Run true, then say done.")
    const tool = result.messages.find((m) => m._tag === "ToolResultMessage")
    if (result.text !== "done" || tool === undefined) return yield* Effect.die(new Error("a session did not call Bash and answer"))
    return tool.isError ? tool.content : "ran"
  }).pipe(Effect.provide(TestModel.layer(script)))

/** `count` sessions at once in one Scope; the Scope closes (every session stops) after the last answer. */
const sessionsAtOnce = (sandbox: SandboxLayer, count: number, timings: { runMs: number; stopMs: number; failures: Record<string, number> }) =>
  Effect.gen(function*() {
    const started = performance.now()
    const outcomes = yield* Effect.scoped(Effect.gen(function*() {
      const outcomes = yield* Effect.forEach(Array.from({ length: count }), () => oneSession(sandbox), { concurrency: "unbounded" })
      timings.runMs = performance.now() - started
      return outcomes
    }))
    timings.stopMs = performance.now() - started - timings.runMs
    for (const outcome of outcomes) if (outcome !== "ran") timings.failures[outcome] = (timings.failures[outcome] ?? 0) + 1
  })

const sessions = async (): Promise<Measurement> => {
  const cwd = mkdtempSync(join(tmpdir(), "condukt-bench-sessions-exec-"))
  const sandbox = LocalSandbox.layer({ cwd })
  const timings = { runMs: 0, stopMs: 0, failures: {} }
  const program = Effect.gen(function*() {
    const permits = (yield* ProcessBudget.ProcessBudget).max
    yield* sessionsAtOnce(sandbox, WARMUP, { runMs: 0, stopMs: 0, failures: {} })
    const startRssBytes = process.memoryUsage().rss
    yield* sessionsAtOnce(sandbox, COUNT, timings)
    return { permits, startRssBytes }
  })
  const { permits, startRssBytes } = await Effect.runPromise(program.pipe(Effect.provide(Condukt.layer), Effect.orDie))
  rmSync(cwd, { recursive: true, force: true })
  return { ...timings, peakRssBytes: process.resourceUsage().maxRSS * 1024, startRssBytes, left: children().length, permits }
}

// ---------------------------------------------------------------------------------------------
// Baseline: raw spawns under the same bound
// ---------------------------------------------------------------------------------------------

const raw = async (): Promise<Measurement> => {
  const permits = ProcessBudget.DEFAULT_PER_CORE * Math.max(1, navigator.hardwareConcurrency)
  const once = bounded(permits, rawSpawn)
  await Promise.all(Array.from({ length: WARMUP }, once))
  const startRssBytes = process.memoryUsage().rss
  const started = performance.now()
  await Promise.all(Array.from({ length: COUNT }, once))
  const runMs = performance.now() - started
  return { runMs, stopMs: 0, peakRssBytes: process.resourceUsage().maxRSS * 1024, startRssBytes, left: children().length, permits, failures: {} }
}

// ---------------------------------------------------------------------------------------------
// The parent: one child process per variant, then the comparison
// ---------------------------------------------------------------------------------------------

const variants: Record<string, () => Promise<Measurement>> = { raw, sessions }

const child = (variant: string): Measurement => {
  const out = spawnSync(process.execPath, [import.meta.filename, `--variant=${variant}`, `--count=${COUNT}`], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"]
  })
  if (out.status !== 0) throw new Error(`variant ${variant} exited with ${out.status}`)
  return JSON.parse(out.stdout.trim().split("\n").at(-1)!) as Measurement
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`

const main = async () => {
  const only = process.argv.find((a) => a.startsWith("--variant="))?.slice(10)
  if (only !== undefined) {
    const variant = variants[only]
    if (variant === undefined) throw new Error(`unknown variant ${only}`)
    console.log(JSON.stringify(await variant()))
    return
  }
  // Ours first, printed as soon as it is known: the raw baseline has failed on its own before (EMFILE).
  const ours = child("sessions")
  console.log(
    `${COUNT} sessions each running Bash true, budget ${ours.permits}: runs ${ours.runMs.toFixed(0)} ms, ` +
      `stop all ${ours.stopMs.toFixed(0)} ms, ${((ours.runMs + ours.stopMs) / COUNT).toFixed(2)} ms per session; ` +
      `RSS ${mib(ours.startRssBytes)} before, peak ${mib(ours.peakRssBytes)} ` +
      `(${((ours.peakRssBytes - ours.startRssBytes) / COUNT / 1024).toFixed(1)} KB per session); processes left ${ours.left}; ` +
      `Bash calls that failed: ${JSON.stringify(ours.failures)}`
  )
  const base = child("raw")
  console.log(
    `${COUNT} raw bash -c true, ${base.permits} at a time: ${base.runMs.toFixed(0)} ms ` +
      `(${(base.runMs / COUNT).toFixed(2)} ms each), peak RSS ${mib(base.peakRssBytes)}, processes left ${base.left}`
  )
  const total = ours.runMs + ours.stopMs
  report({
    benchmark: `sessions-exec: ${COUNT} sessions × Bash true / ${COUNT} raw spawns, same bound`,
    ours: `${(total / COUNT).toFixed(2)} ms/session`,
    baseline: `${(base.runMs / COUNT).toFixed(2)} ms/spawn`,
    ratio: total / base.runMs,
    goal: "completes, no process left, no Bash failure",
    met: ours.left === 0 && Object.keys(ours.failures).length === 0
  })
  report({
    benchmark: `sessions-exec: peak RSS, ${COUNT} sessions × Bash true / raw spawns`,
    ours: mib(ours.peakRssBytes),
    baseline: mib(base.peakRssBytes),
    ratio: ours.peakRssBytes / base.peakRssBytes,
    goal: "reported (bounded: it completes)",
    met: null
  })
}

await main()

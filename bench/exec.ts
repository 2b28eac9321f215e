/**
 * bench/exec — what a command costs beyond the spawn itself.
 *
 * Baseline: a raw `child_process.spawn("bash", ["-c", "true"])` awaited to exit. Against it:
 * `processGroup.run` of the same command (the shell fast path: the stderr merge rides on bash);
 * the same bash behind the `/bin/sh` wrapper (what any other executable, so Command, pays); and
 * `LocalSandbox` `exec("true")` (which also takes a ProcessBudget permit). The variants are
 * interleaved call by call so that drift in the machine's load hits them all alike. Goal:
 * LocalSandbox ≤ 1.15× raw.
 *
 * Then a burst (issue 14): 1,000 concurrent `exec("true")` calls, which the budget (Condukt.layer's
 * default, 4 per core) runs a few at a time, against two raw baselines of the same 1,000
 * `spawn("bash", ["-c", "true"])` awaited to exit, wall time for the whole burst:
 * - all 1,000 started at once: what a program without Condukt would do, and the baseline the
 *   issue's goal names (≤ 1.2×, docs/decisions/0030): the budget must not cost more than that;
 * - bounded to the budget's permits by a bare counter and FIFO: the same bound with none of our
 *   code, so the ratio to it is what our exec path adds per process, the bound itself aside.
 * The three run in ROUNDS interleaved rounds, the order rotating, so a change in the machine's load
 * hits all alike; the ratios are of medians.
 *
 * Run: node_modules/.bin/node bench/exec.ts
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as Condukt from "../packages/node/src/Condukt.ts"
import * as ProcessGroup from "../packages/node/src/internal/processGroup.ts"
import * as ProcessBudget from "../packages/core/src/ProcessBudget.ts"
import * as Sandbox from "../packages/core/src/Sandbox.ts"
import * as LocalSandbox from "../packages/node/src/sandbox/Local.ts"
import { report } from "./report.ts"
import { bounded, children, median as medianOf, rawSpawn } from "./support/spawns.ts"

const N = 200
const WARMUP = 30
const BURST = 1000
const ROUNDS = 3

interface Variant {
  readonly name: string
  readonly once: () => Promise<unknown>
  readonly times: Array<number>
}

const main = async () => {
  const cwd = mkdtempSync(join(tmpdir(), "condukt-bench-exec-"))
  const env = ProcessGroup.baseEnv()
  const variants: Array<Variant> = [
    { name: "raw spawn bash -c true", once: rawSpawn, times: [] },
    {
      name: "processGroup.run bash -c true",
      once: () => Effect.runPromise(ProcessGroup.run({ file: "bash", args: ["-c", "true"], cwd, env, timeoutMs: 120_000 })),
      times: []
    },
    {
      // `--norc` first, so not the fast path: the same bash behind the /bin/sh wrapper.
      name: "processGroup.run bash --norc -c true",
      once: () => Effect.runPromise(ProcessGroup.run({ file: "bash", args: ["--norc", "-c", "true"], cwd, env, timeoutMs: 120_000 })),
      times: []
    }
  ]
  const scope = Scope.makeUnsafe()
  const services = await Effect.runPromise(
    Layer.buildWithScope(LocalSandbox.layer({ cwd }).pipe(Layer.provideMerge(Condukt.layer)), scope)
  )
  const sandbox = Context.get(services, Sandbox.Sandbox)
  const budget = Context.get(services, ProcessBudget.ProcessBudget)
  variants.push({ name: "LocalSandbox exec true", once: () => Effect.runPromise(sandbox.exec("true")), times: [] })
  for (const variant of variants) for (let i = 0; i < WARMUP; i++) await variant.once()
  for (let i = 0; i < N; i++) {
    for (const variant of variants) {
      const start = performance.now()
      await variant.once()
      variant.times.push(performance.now() - start)
    }
  }
  const burst = async (once: () => Promise<unknown>) => {
    const start = performance.now()
    await Promise.all(Array.from({ length: BURST }, once))
    return performance.now() - start
  }
  const bursts = [
    { name: "raw at once", once: rawSpawn, times: new Array<number>() },
    { name: `raw bounded to ${budget.max}`, once: bounded(budget.max, rawSpawn), times: new Array<number>() },
    { name: "LocalSandbox exec", once: () => Effect.runPromise(sandbox.exec("true")), times: new Array<number>() }
  ]
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < bursts.length; i++) {
      const variant = bursts[(i + round) % bursts.length]!
      variant.times.push(await burst(variant.once))
    }
  }
  const left = children().length
  await Effect.runPromise(Scope.close(scope, Exit.void))
  rmSync(cwd, { recursive: true, force: true })
  const stats = (times: Array<number>) => {
    const sorted = [...times].sort((a, b) => a - b)
    return { mean: times.reduce((a, b) => a + b, 0) / times.length, median: sorted[sorted.length >> 1] ?? 0 }
  }
  const base = stats(variants[0]!.times)
  for (const variant of variants) {
    const { mean, median } = stats(variant.times)
    console.log(
      `${variant.name.padEnd(38)} mean ${mean.toFixed(3)} ms  median ${median.toFixed(3)} ms  ` +
        `ratio ${(mean / base.mean).toFixed(2)}× (median ${(median / base.median).toFixed(2)}×)`
    )
  }
  const [rawBurst, boundedBurst, execBurst] = bursts.map(({ times }) => medianOf(times))
  for (const { name, times } of bursts) {
    console.log(`${BURST} concurrent, ${name.padEnd(20)} ${times.map((ms) => ms.toFixed(0)).join(" / ")} ms (median ${medianOf(times).toFixed(0)})`)
  }
  console.log(`child processes left after the bursts: ${left}`)
  const ours = stats(variants.at(-1)!.times)
  report({
    benchmark: "exec: LocalSandbox exec true / raw spawn (mean)",
    ours: `${ours.mean.toFixed(3)} ms`,
    baseline: `${base.mean.toFixed(3)} ms`,
    ratio: ours.mean / base.mean,
    goal: "≤ 1.15×",
    met: ours.mean / base.mean <= 1.15
  })
  report({
    benchmark: `exec: ${BURST} concurrent exec true / ${BURST} raw spawns at once`,
    ours: `${execBurst!.toFixed(0)} ms`,
    baseline: `${rawBurst!.toFixed(0)} ms`,
    ratio: execBurst! / rawBurst!,
    goal: "≤ 1.2×",
    met: execBurst! / rawBurst! <= 1.2
  })
  report({
    benchmark: `exec: ${BURST} concurrent exec true / ${BURST} raw spawns, ${budget.max} at a time`,
    ours: `${execBurst!.toFixed(0)} ms`,
    baseline: `${boundedBurst!.toFixed(0)} ms`,
    ratio: execBurst! / boundedBurst!,
    goal: "diagnostic: our cost with the bound aside",
    met: null
  })
}

await main()

/**
 * bench/durable — what `--durable` costs a `condukt run` (issue 25 item 6): the CLI started as a
 * user starts it (Node on packages/cli/src/bin.ts), on a workflow of `STEPS` `tool` steps in a
 * chain (no process per step, so the figure is the CLI's and the journal's), run `ROUNDS` times
 * plain and `ROUNDS` times with `--durable` on a fresh SQLite file, alternating so the machine's
 * load falls on both alike. Per run: the process's CPU time (user + system, from bash's `time`)
 * and its wall time; the medians, the durable one against the plain one. The goal is ≤ 500 ms
 * added per run (effect/cluster and effect/workflow loaded, an embedded runner's start, the run
 * recorded, two journal entries per step), judged on CPU time: on a shared, loaded machine wall
 * time swings by seconds between identical runs, CPU time by tens of milliseconds. Wall times
 * are printed beside it.
 *
 * Run: node_modules/.bin/node bench/durable.ts
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { report } from "./report.ts"

const STEPS = 10
const ROUNDS = 9
const GOAL_ADDED_MS = 500

const root = resolve(import.meta.dirname, "..")
const bin = join(root, "packages/cli/src/bin.ts")

const source = (): string => {
  const steps = Array.from({ length: STEPS }, (_, i) =>
    `  tool "s${i}" {\n${i === 0 ? "" : `    needs = ["s${i - 1}"]\n`}    id = "Glob"\n    args = { pattern = "*.hcl" }\n  }`)
  return `workflow "chain" {\n${steps.join("\n")}\n  output = task.s${STEPS - 1}.ok\n}\n`
}

interface Timing {
  readonly cpu: number
  readonly wall: number
}

/**
 * One `condukt run` in `dir` under bash's `time` (its last stderr line: user and system seconds);
 * a run that does not print `true` fails the bench.
 */
const once = (dir: string, args: ReadonlyArray<string>): Timing => {
  const command = [process.execPath, bin, "run", "chain.hcl", "--quiet", ...args].map((word) => `'${word}'`).join(" ")
  const start = performance.now()
  const result = spawnSync("bash", ["-c", `TIMEFORMAT='%3U %3S'; time ${command}`], { cwd: dir, encoding: "utf8" })
  const wall = performance.now() - start
  const [user, system] = result.stderr.trimEnd().split("\n").at(-1)!.split(" ").map(Number)
  if (result.status !== 0 || result.stdout !== "true\n" || user === undefined || system === undefined) {
    throw new Error(`condukt run ${args.join(" ")} exited ${result.status}: ${result.stdout}${result.stderr}`)
  }
  return { cpu: (user + system) * 1000, wall }
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const dir = mkdtempSync(join(tmpdir(), "condukt-bench-durable-"))
writeFileSync(join(dir, "chain.hcl"), source())
const plain: Array<Timing> = []
const durable: Array<Timing> = []
try {
  for (let round = 0; round < ROUNDS; round++) {
    plain.push(once(dir, []))
    durable.push(once(dir, ["--durable", join(dir, `runs-${round}.db`)]))
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
const ours = median(durable.map((timing) => timing.cpu))
const baseline = median(plain.map((timing) => timing.cpu))
const added = ours - baseline
const wall = (timings: ReadonlyArray<Timing>) => median(timings.map((timing) => timing.wall)).toFixed(0)
console.log(`condukt run, ${STEPS} tool steps, medians of ${ROUNDS}:`)
console.log(`  CPU time:  plain ${baseline.toFixed(0)} ms, --durable ${ours.toFixed(0)} ms (${added >= 0 ? "+" : ""}${added.toFixed(0)} ms)`)
console.log(`  wall time: plain ${wall(plain)} ms, --durable ${wall(durable)} ms`)
report({
  benchmark: `condukt run --durable (${STEPS} steps, CPU time per run)`,
  ours: `${ours.toFixed(0)} ms`,
  baseline: `${baseline.toFixed(0)} ms plain`,
  ratio: ours / baseline,
  goal: `≤ ${GOAL_ADDED_MS} ms added`,
  met: added <= GOAL_ADDED_MS
})

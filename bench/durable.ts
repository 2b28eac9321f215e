/**
 * bench/durable — what `--durable` costs a `condukt run` (issue 25 item 6): the CLI started as a
 * user starts it (Node on packages/cli/src/bin.ts), on a workflow of `STEPS` `tool` steps in a
 * chain (no process per step, so the figure is the CLI's and the journal's), run `ROUNDS` times
 * plain and `ROUNDS` times with `--durable` on a fresh SQLite file, alternating so the machine's
 * load falls on both alike. The medians of wall time per run, the durable one against the plain
 * one; the goal is ≤ 500 ms added per run (an embedded runner's start, the run recorded, two
 * journal entries per step), judged on the medians' difference.
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

/** One `condukt run` in `dir`, its wall time in ms; a run that does not print `true` fails the bench. */
const once = (dir: string, args: ReadonlyArray<string>): number => {
  const start = performance.now()
  const result = spawnSync(process.execPath, [bin, "run", "chain.hcl", "--quiet", ...args], { cwd: dir, encoding: "utf8" })
  const elapsed = performance.now() - start
  if (result.status !== 0 || result.stdout !== "true\n") {
    throw new Error(`condukt run ${args.join(" ")} exited ${result.status}: ${result.stdout}${result.stderr}`)
  }
  return elapsed
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const dir = mkdtempSync(join(tmpdir(), "condukt-bench-durable-"))
writeFileSync(join(dir, "chain.hcl"), source())
const plain: Array<number> = []
const durable: Array<number> = []
try {
  for (let round = 0; round < ROUNDS; round++) {
    plain.push(once(dir, []))
    durable.push(once(dir, ["--durable", join(dir, `runs-${round}.db`)]))
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
const ours = median(durable)
const baseline = median(plain)
const added = ours - baseline
console.log(`condukt run, ${STEPS} tool steps, median of ${ROUNDS}: plain ${baseline.toFixed(0)} ms, --durable ${ours.toFixed(0)} ms (+${added.toFixed(0)} ms)`)
report({
  benchmark: `condukt run --durable (${STEPS} steps, wall time per run)`,
  ours: `${ours.toFixed(0)} ms`,
  baseline: `${baseline.toFixed(0)} ms plain`,
  ratio: ours / baseline,
  goal: `≤ ${GOAL_ADDED_MS} ms added`,
  met: added <= GOAL_ADDED_MS
})

/**
 * bench/cli-start — how long the `condukt` command takes to answer its first commands, from the
 * built CLI (packages/cli/dist/bin.js, built first by `tsc -b` when stale: a no-op otherwise) and
 * from its sources (packages/cli/src/bin.ts, under Node's type stripping): `condukt version`,
 * `condukt --help` and `condukt check examples/workflows/word-counts.hcl`, each a fresh process
 * on this Node, timed from spawn to exit. Baseline: `node -e 0` on the same Node, Node's own
 * start. Runs are interleaved, the order rotated by one each round, so the machine's load
 * drifting hits every variant alike; the figures are medians, with each run's exit code and stdout
 * checked. Goal: `version` and `--help` ≤ 300 ms wall, from dist and from src.
 *
 * `check` loads the workflow package, the providers, MCP and the HCL parser (WebAssembly). Its
 * goal, ≤ 500 ms wall, is for the CLI as npm installs it (`installed`: every @condukt package in
 * its published form, `dist` through `publishConfig`'s exports, its dependencies beside it, in a
 * temporary directory): from this workspace, `dist` is the CLI's own build on its packages'
 * sources, some 200 TypeScript files whose types Node strips again on every start (its compile
 * cache keeps the compiled code, not the stripped text), which no installed CLI does (ADR 0096).
 * `check` from dist and from src are reported beside it without a goal.
 *
 * Run: node_modules/.bin/node bench/cli-start.ts (BENCH_RUNS=N for N rounds, default 21)
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { report } from "./report.ts"
import { median } from "./support/spawns.ts"
import { VERSION } from "../packages/cli/src/Version.ts"

const RUNS = Number(process.env["BENCH_RUNS"] ?? 21)
const WARMUP = 2
const GOAL_MS = 300
const CHECK_GOAL_MS = 500

const root = path.dirname(import.meta.dirname)
const node = process.execPath
const workflow = "examples/workflows/word-counts.hcl"

interface Variant {
  readonly name: string
  readonly args: ReadonlyArray<string>
  /** What stdout must be (whole) or start with. */
  readonly stdout: (text: string) => boolean
  /** Its goal in ms, if it has one. */
  readonly goal: number | undefined
  readonly times: Array<number>
}

const variant = (name: string, args: ReadonlyArray<string>, stdout: (text: string) => boolean, goal: number | undefined): Variant => ({
  name,
  args,
  stdout,
  goal,
  times: []
})

const check = (from: string, bin: string, goal: number | undefined) =>
  variant(`condukt check ${path.basename(workflow)} (${from})`, [bin, "check", workflow], (text) => text === `ok: ${workflow}\n`, goal)

const commands = (from: "dist" | "src", bin: string): ReadonlyArray<Variant> => [
  variant(`condukt version (${from})`, [bin, "version"], (text) => text === `${VERSION}\n`, GOAL_MS),
  variant(`condukt --help (${from})`, [bin, "--help"], (text) => text.includes("Run Condukt HCL workflows"), GOAL_MS),
  check(from, bin, undefined)
]

/**
 * The CLI as npm would install it, in `dir` (a new temporary directory): each @condukt package it needs
 * (its dependencies, and theirs) as published (`dist`, and `package.json` with `publishConfig`
 * applied: the exports point at `dist`), every other dependency a link to the copy this workspace
 * installed. Copies, not links, for our packages: Node resolves a module's imports from its real
 * path, and a link would lead back to the workspace's sources.
 */
const install = (dir: string): void => {
  const modules = path.join(dir, "node_modules")
  const pending = ["@condukt/cli"]
  const done = new Set<string>()
  while (pending.length > 0) {
    const name = pending.pop()!
    if (done.has(name)) continue
    done.add(name)
    const source = path.join(root, "packages", name.slice("@condukt/".length))
    const pkg = JSON.parse(fs.readFileSync(path.join(source, "package.json"), "utf8")) as Record<string, unknown> & {
      readonly publishConfig?: Record<string, unknown>
      readonly dependencies?: Record<string, string>
      readonly peerDependencies?: Record<string, string>
    }
    // A package the CLI's build does not build (@condukt/server: only `serve` loads it) is left out.
    if (!fs.existsSync(path.join(source, "dist"))) continue
    const target = path.join(modules, name)
    fs.cpSync(path.join(source, "dist"), path.join(target, "dist"), { recursive: true })
    fs.writeFileSync(path.join(target, "package.json"), JSON.stringify({ ...pkg, ...pkg.publishConfig }))
    for (const dependency of Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies })) {
      if (dependency.startsWith("@condukt/")) {
        pending.push(dependency)
        continue
      }
      const link = path.join(modules, dependency)
      const installed = path.join(source, "node_modules", dependency)
      if (fs.existsSync(link) || !fs.existsSync(installed)) continue
      fs.mkdirSync(path.dirname(link), { recursive: true })
      fs.symlinkSync(fs.realpathSync(installed), link)
    }
  }
}

/** One run of `v`: its wall time in ms, its exit code and stdout checked. */
const once = (v: Variant): number => {
  const start = performance.now()
  const result = spawnSync(node, v.args, { cwd: root, encoding: "utf8" })
  const elapsed = performance.now() - start
  if (result.status !== 0 || !v.stdout(result.stdout)) {
    throw new Error(`${v.name}: exit code ${result.status}, stdout ${JSON.stringify(result.stdout)}, stderr ${JSON.stringify(result.stderr)}`)
  }
  return elapsed
}

/** The variants, rotated by one more each round: each runs first, second, … in turn. */
const rotated = <A>(items: ReadonlyArray<A>, round: number): ReadonlyArray<A> => {
  const at = round % items.length
  return [...items.slice(at), ...items.slice(0, at)]
}

// dist as it would be packed: `tsc -b` rebuilds it only when a source is newer.
const build = spawnSync(path.join(root, "node_modules/.bin/tsc"), ["-b", "packages/cli/tsconfig.build.json"], { cwd: root, encoding: "utf8" })
if (build.status !== 0) throw new Error(`tsc -b packages/cli/tsconfig.build.json failed:\n${build.stdout}${build.stderr}`)
const installed = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-cli-start-"))
process.on("exit", () => fs.rmSync(installed, { recursive: true, force: true }))
install(installed)

const baseline = variant("node -e 0", ["-e", "0"], (text) => text === "", undefined)
const variants: ReadonlyArray<Variant> = [
  baseline,
  check("installed", path.join(installed, "node_modules/@condukt/cli/dist/bin.js"), CHECK_GOAL_MS),
  ...commands("dist", "packages/cli/dist/bin.js"),
  ...commands("src", "packages/cli/src/bin.ts")
]

const load = () => os.loadavg().map((n) => n.toFixed(2)).join(" ")
const loadBefore = load()
for (let i = 0; i < WARMUP; i++) for (const v of variants) once(v)
for (let i = 0; i < RUNS; i++) for (const v of rotated(variants, i)) v.times.push(once(v))

const node0 = median(baseline.times)
console.log(`${RUNS} rounds (${WARMUP} warm-up), Node ${process.versions.node}, ${os.cpus().length} cores, load average ${loadBefore} before, ${load()} after`)
for (const v of variants) {
  const sorted = [...v.times].sort((a, b) => a - b)
  console.log(
    `${v.name.padEnd(40)} ${median(v.times).toFixed(0).padStart(5)} ms median (min ${sorted[0]!.toFixed(0)}, p90 ${sorted[Math.floor(sorted.length * 0.9)]!.toFixed(0)})` +
      (v === baseline ? "" : `  ${(median(v.times) / node0).toFixed(1)}× node -e 0`)
  )
}
for (const v of variants.filter((v) => v !== baseline)) {
  const ms = median(v.times)
  report({
    benchmark: `cli-start: ${v.name} / node -e 0 (wall, median)`,
    ours: `${ms.toFixed(0)} ms`,
    baseline: `${node0.toFixed(0)} ms`,
    ratio: ms / node0,
    goal: v.goal === undefined ? "—" : `≤ ${v.goal} ms`,
    met: v.goal === undefined ? null : ms <= v.goal
  })
}

/**
 * bench/run — runs every benchmark of bench/ in sequence, each in its own process on this Node
 * (none warms the JIT or fills the heap for the next), lets their own output through, and ends
 * with one table — benchmark, ours, baseline, ratio, goal — from the `BENCH` lines they print
 * (bench/report.ts). A missed goal is a result; a benchmark that fails to run makes the exit code 1.
 *
 * Run: `pnpm bench` (all), `pnpm bench turns exec` (these only).
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Schema, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as fs from "node:fs"
import * as path from "node:path"
import { prefix, Report } from "./report.ts"

const here = import.meta.dirname
const benchmarks = fs.readdirSync(here)
  .filter((file) => file.endsWith(".ts") && file !== "run.ts" && file !== "report.ts")
  .map((file) => file.slice(0, -".ts".length))
  .sort()

const decode = Schema.decodeUnknownEffect(Schema.fromJsonString(Report))

interface Outcome {
  readonly name: string
  readonly exitCode: number
  readonly reports: ReadonlyArray<Report>
}

const runOne = (name: string) =>
  Effect.scoped(Effect.gen(function*() {
    yield* Console.log(`\n== bench/${name}.ts`)
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const handle = yield* spawner.spawn(ChildProcess.make(process.execPath, [path.join(here, `${name}.ts`)], {
      cwd: path.dirname(here),
      stderr: "inherit",
      forceKillAfter: "5 seconds"
    }))
    const reports: Array<Report> = []
    yield* handle.stdout.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.runForEach((line) =>
        line.startsWith(prefix)
          ? Effect.map(decode(line.slice(prefix.length)), (report) => void reports.push(report))
          : Console.log(line)
      )
    )
    return { name, exitCode: Number(yield* handle.exitCode), reports } satisfies Outcome
  }))

const table = (outcomes: ReadonlyArray<Outcome>): string => {
  const rows = outcomes.flatMap(({ exitCode, name, reports }) => [
    ...reports.map((r) => [
      r.benchmark,
      r.ours,
      r.baseline,
      r.ratio === null ? "—" : `${r.ratio.toFixed(2)}×`,
      r.met === null ? r.goal : `${r.goal} ${r.met ? "met" : "MISSED"}`
    ]),
    ...(exitCode === 0 ? [] : [[`bench/${name}.ts failed (exit code ${exitCode})`, "", "", "", ""]])
  ])
  const header = ["benchmark", "ours", "baseline", "ratio", "goal"]
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)))
  const format = (row: ReadonlyArray<string>) => `| ${row.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`
  return [format(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(format)].join("\n")
}

const program = Effect.gen(function*() {
  const asked = process.argv.slice(2)
  const unknown = asked.filter((name) => !benchmarks.includes(name))
  if (unknown.length > 0) {
    yield* Console.error(`Unknown benchmark ${unknown.join(", ")}; the benchmarks are ${benchmarks.join(", ")}.`)
    return yield* Effect.sync(() => void (process.exitCode = 2))
  }
  const outcomes = yield* Effect.forEach(asked.length > 0 ? asked : benchmarks, runOne)
  yield* Console.log(`\n${table(outcomes)}`)
  if (outcomes.some(({ exitCode }) => exitCode !== 0)) yield* Effect.sync(() => void (process.exitCode = 1))
})

NodeRuntime.runMain(program.pipe(Effect.provide(NodeServices.layer)))

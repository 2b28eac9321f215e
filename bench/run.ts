/**
 * bench/run — runs every benchmark of bench/ in sequence, each in its own process on this Node
 * (none warms the JIT or fills the heap for the next), lets their own output through, and ends
 * with one table — benchmark, ours, baseline, ratio, goal — from the `BENCH` lines they print
 * (bench/report.ts), the missed goals last. A missed goal is a result, and a failed run: it makes the
 * exit code 1, as a benchmark that fails to run does.
 *
 * Run: `pnpm bench` (all), `pnpm bench turns exec` (these only).
 */
import { NodeChildProcessSpawner, NodeFileSystem, NodePath, NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, Layer, Schema, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Outcome, prefix, Report, summary } from "./report.ts"

const here = import.meta.dirname
const benchmarks = fs.readdirSync(here)
  .filter((file) => file.endsWith(".ts") && file !== "run.ts" && file !== "report.ts")
  .map((file) => file.slice(0, -".ts".length))
  .sort()

const decode = Schema.decodeUnknownEffect(Schema.fromJsonString(Report))

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

const program = Effect.gen(function*() {
  const asked = process.argv.slice(2)
  const unknown = asked.filter((name) => !benchmarks.includes(name))
  if (unknown.length > 0) {
    yield* Console.error(`Unknown benchmark ${unknown.join(", ")}; the benchmarks are ${benchmarks.join(", ")}.`)
    return yield* Effect.sync(() => void (process.exitCode = 2))
  }
  const outcomes = yield* Effect.forEach(asked.length > 0 ? asked : benchmarks, runOne)
  const { failed, table } = summary(outcomes)
  yield* Console.log(`\n${table}`)
  if (failed) yield* Effect.sync(() => void (process.exitCode = 1))
})

NodeRuntime.runMain(program.pipe(Effect.provide(Layer.provideMerge(NodeChildProcessSpawner.layer, Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)))))

/**
 * bench/cluster — what a run costs through the cluster, over the same run in one process.
 *
 * The same code (`Sessions.ById`: one session, `run` of a one-reply prompt, a scripted model) on three layers, on one SQLite file each (the embedded default): the one-process registry
 * (`Sessions.layerById`, the session saving to `SqlSessionStore` on the file: the baseline); this
 * process a runner holding the session (`Runner.layerSqlite`: the run is a persisted message, its
 * reply stored, both in the file); and this process a client of a runner in another process
 * (examples/cluster-runner.ts), the run crossing TCP. Runs are one after another (a caller waits
 * for its reply); medians over `RUNS` runs after a warm-up. All three use the embedded default's `synchronous = NORMAL`
 * (a commit is written, not synced: it survives a `kill -9`, docs/decisions/0071); with `FULL` every
 * commit is an fsync, and the file system's cost dominates the figures (a run through the cluster
 * commits four to six times, the registry once).
 *
 * In the same run, effect/cluster's floor: a bare entity (bench/support/bareEntity.ts, one persisted
 * Rpc answering a constant) on the same cluster layers (`Runner.layerSharding`, one SQLite file),
 * called the same way, on this runner and on a runner process of its own (bench/support/bareRunner.ts):
 * what any persisted call costs, none of ours in it. Reported: each cluster variant over the bare
 * call (the ratio, issue 43: 1.2× asked), and the goal (docs/decisions/0097): each variant
 * ≤ 1.2× the bare call plus the same run in one process — the bare handler runs no session, and a
 * run through the cluster is the registry's run in a persisted call's handler, so what this ratio
 * measures over 1 is the cluster's work that is ours. `BENCH_WARMUP` (default 300) sets the
 * untimed runs before each variant's `RUNS` (default 500): the runner processes start cold, and a
 * session's run is far more code than the bare handler for their JIT to compile.
 *
 * Run: node_modules/.bin/node bench/cluster.ts
 */
import { Agent, Sessions } from "@condukt/core"
import { Runner, SqlSessionStore } from "@condukt/cluster"
import { Condukt, SqliteClient } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { Effect, Layer, References } from "effect"
import type { Sharding } from "effect/cluster"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { report } from "./report.ts"
import * as BareEntity from "./support/bareEntity.ts"
import { freePort, runner } from "./support/clusterRunner.ts"

const RUNS = Number(process.env["BENCH_RUNS"] ?? 500)
const WARMUP = Number(process.env["BENCH_WARMUP"] ?? 300)
/** A run through the cluster over the bare call plus the same run in one process (docs/decisions/0097). */
const GOAL = 1.2

// The agent examples/cluster-runner.ts serves (the remote variant runs it, with its own stateless
// model); here a scripted one answers every run.
const agents = { notes: Agent.make({ name: "notes", model: "anthropic:claude-sonnet-4-6" }) }
const services = Layer.mergeAll(
  Condukt.layer,
  TestModel.layer(Array.from({ length: 2 * (WARMUP + RUNS) }, () => TestModel.text("Noted."))),
  Layer.succeed(References.MinimumLogLevel, "Warn")
)

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** Milliseconds per run of one session through `ById`, `RUNS` runs after `WARMUP`. */
const timed = Effect.gen(function*() {
  const sessions = yield* Sessions.ById
  const id = yield* sessions.start("notes")
  const times: Array<number> = []
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const start = performance.now()
    yield* sessions.run(id, `note ${i}`)
    if (i >= WARMUP) times.push(performance.now() - start)
  }
  return median(times)
})

/** Milliseconds per call of the bare entity (effect/cluster's floor), called as `timed` runs. */
const bare: Effect.Effect<number, unknown, Sharding.Sharding> = Effect.gen(function*() {
  const client = (yield* BareEntity.Bare.client)("bare")
  const times: Array<number> = []
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const start = performance.now()
    yield* client.Run({ runId: crypto.randomUUID(), prompt: `note ${i}` })
    if (i >= WARMUP) times.push(performance.now() - start)
  }
  return median(times)
})

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-bench-cluster-"))
const file = (name: string) => path.join(dir, `${name}.db`)

const program = Effect.gen(function*() {
  const local = yield* timed.pipe(Effect.provide(
    Sessions.layerById(agents).pipe(
      Layer.provide(Sessions.layer),
      Layer.provide(SqlSessionStore.layer()),
      // The runners' own setting (`Runner.layerSqlite`'s default): commits written, not synced.
      Layer.provide(SqliteClient.layer({ file: file("registry"), synchronous: "normal" }))
    )
  ))
  const sqlite = (name: string) => SqliteClient.layer({ file: file(name), synchronous: "normal" })
  const floorOwn = yield* bare.pipe(Effect.provide(
    BareEntity.layer.pipe(Layer.provideMerge(Runner.layerSharding({ port: yield* freePort })), Layer.provide(sqlite("bare-own")))
  ))
  const own = yield* timed.pipe(Effect.provide(Runner.layerSqlite({ agents, port: yield* freePort, file: file("own") })))
  yield* runner(file("bare-remote"), "bare", path.join(import.meta.dirname, "support/bareRunner.ts"))
  const floorRemote = yield* bare.pipe(Effect.provide(Runner.layerShardingClient().pipe(Layer.provide(sqlite("bare-remote")))))
  yield* runner(file("remote"), "remote")
  const remote = yield* timed.pipe(Effect.provide(Runner.layerSqliteClient({ file: file("remote") })))

  const ms = (value: number) => `${value.toFixed(2)} ms`
  console.log(`one process (registry, SQL store):           ${ms(local)}/run (median of ${RUNS})`)
  console.log(`bare effect/cluster entity, this runner:     ${ms(floorOwn)}/call, +${ms(floorOwn - local)}`)
  console.log(`bare effect/cluster entity, another runner:  ${ms(floorRemote)}/call, +${ms(floorRemote - local)}`)
  console.log(`cluster, session on this runner:             ${ms(own)}/run, +${ms(own - local)}; over the floor +${ms(own - floorOwn)}, ${(own / floorOwn).toFixed(2)}×; over the floor and the run ${(own / (floorOwn + local)).toFixed(2)}×`)
  console.log(`cluster, session on another runner:          ${ms(remote)}/run, +${ms(remote - local)}; over the floor +${ms(remote - floorRemote)}, ${(remote / floorRemote).toFixed(2)}×; over the floor and the run ${(remote / (floorRemote + local)).toFixed(2)}×`)
  for (const [where, value, floor] of [["this runner", own, floorOwn], ["another runner", remote, floorRemote]] as const) {
    report({
      benchmark: `cluster: a run through the cluster (session on ${where}) / a bare effect/cluster persisted call (SQLite, median)`,
      ours: `${ms(value)}/run`,
      baseline: `${ms(floor)}/call`,
      ratio: value / floor,
      goal: "none set (report; the issue's 1.2× is ADR 0097's below)",
      met: null
    })
    report({
      benchmark: `cluster: a run through the cluster (session on ${where}) / the bare persisted call + the same run in one process (SQLite, median)`,
      ours: `${ms(value)}/run`,
      baseline: `${ms(floor)} + ${ms(local)}`,
      ratio: value / (floor + local),
      goal: `≤ ${GOAL}×`,
      met: value <= GOAL * (floor + local)
    })
  }
}).pipe(Effect.scoped, Effect.provide(services), Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))))

Effect.runPromise(program).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})

/**
 * bench/cluster-throughput — how many runs a second a cluster serves, on one runner and on two.
 *
 * 1,000 sessions × 10 runs, through `Sessions.ById` from this process, a client of runner processes
 * (examples/cluster-runner.ts: the agent `notes`, a model that answers at once) sharing one SQLite
 * file (the embedded default, `synchronous = NORMAL`): first one runner, then two on a new file,
 * their shards spread over both before the clock starts (`cluster_locks` holds each runner's). Every
 * session is started and run once untimed; then the 1,000 run their 10 runs, all at once (`CALLERS`,
 * 1,000), each session one run after another. (Before calls the cluster cuts off were sent again,
 * 1,000 callers at once saw their first calls end "All fibers interrupted", and 50 at once runs
 * answered `Session … is stopped` before ADR 0072's handover.) The figure is runs per second; the ratio, two runners over one, is
 * reported (issue 25), not a goal: runners on one machine share its cores (two here, shared), and
 * on SQLite one writer at a time, so a second runner adds little or costs (Postgres on other
 * machines is what scales out).
 *
 * Run: node_modules/.bin/node bench/cluster-throughput.ts (SESSIONS=1000 RUNS=10 by default)
 */
import { Runner } from "@condukt/cluster"
import { Sessions } from "@condukt/core"
import { SqliteClient } from "@condukt/node"
import { Effect, Layer, References, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { report } from "./report.ts"
import { runner } from "./support/clusterRunner.ts"

const SESSIONS = Number(process.env["SESSIONS"] ?? 1000)
const RUNS = Number(process.env["RUNS"] ?? 10)
/** Callers at once, each taking the next session. */
const CALLERS = Number(process.env["CALLERS"] ?? 1000)

/** Until every shard is held, by `count` runners. */
const spread = (count: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql`SELECT COUNT(DISTINCT address) AS runners, COUNT(*) AS shards FROM cluster_locks`
    if (Number(row?.["runners"]) !== count || Number(row?.["shards"]) < Runner.FAILOVER.shardsPerGroup) {
      return yield* Effect.fail("not yet")
    }
  }).pipe(Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 600 }), Effect.orDie)

/** Runs per second of `SESSIONS` × `RUNS` on `count` runners of a new SQLite file. */
const throughput = (count: number) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-bench-throughput-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    const file = path.join(dir, "cluster.db")
    for (let i = 0; i < count; i++) yield* runner(file, `r${i}`)
    return yield* Effect.gen(function*() {
      yield* spread(count)
      const sessions = yield* Sessions.ById
      const ids = yield* Effect.forEach(
        Array.from({ length: SESSIONS }, (_, i) => `s${i}`),
        (id) => Effect.andThen(sessions.start("notes", { id }), sessions.run(id, "warm-up")).pipe(Effect.as(id)),
        { concurrency: CALLERS }
      )
      const start = performance.now()
      yield* Effect.forEach(ids, (id) => Effect.repeat(sessions.run(id, "note"), { times: RUNS - 1 }), { concurrency: CALLERS, discard: true })
      return (SESSIONS * RUNS) / ((performance.now() - start) / 1000)
    }).pipe(Effect.provide(Runner.layerClient().pipe(Layer.provideMerge(SqliteClient.layer({ file, synchronous: "normal" })))))
  }))

const program = Effect.gen(function*() {
  const one = yield* throughput(1)
  const two = yield* throughput(2)
  const rate = (value: number) => `${value.toFixed(0)} runs/s`
  console.log(`${SESSIONS} sessions × ${RUNS} runs, one runner:  ${rate(one)}`)
  console.log(`${SESSIONS} sessions × ${RUNS} runs, two runners: ${rate(two)} (${(two / one).toFixed(2)}× one)`)
  report({
    benchmark: `cluster throughput: ${SESSIONS} sessions × ${RUNS} runs on 2 runners / on 1 (one SQLite file, ${os.availableParallelism()} cores)`,
    ours: rate(two),
    baseline: rate(one),
    ratio: two / one,
    goal: "report",
    met: null
  })
}).pipe(Effect.provide(Layer.succeed(References.MinimumLogLevel, "Warn")))

Effect.runPromise(program).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})

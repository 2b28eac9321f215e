/**
 * bench/cluster-failover — how long a session is away when the runner holding it dies.
 *
 * Two runner processes (packages/cluster/test/fixtures/runner.ts, `Runner.FAILOVER` timings) on
 * one SQLite file, then on a Postgres the bench starts (packages/cluster/test/support); this process
 * a client. Each round: a new session is started and run (the runner serving it answers with its
 * name), that runner is killed (SIGKILL), and the time until
 * the session's next run completes is measured; a new runner takes the dead one's place. Median and
 * max over `ROUNDS` rounds per database; goal (issue 25): median ≤ 5 s. The baseline column is
 * the shard-lock expiry (4 s), the floor of failover without a word from the dead runner.
 *
 * Run: node_modules/.bin/node bench/cluster-failover.ts (ROUNDS=20 by default; DATABASES=sqlite or
 * DATABASES=pg for one of the two)
 */
import { Runner } from "@condukt/cluster"
import { Sessions } from "@condukt/core"
import { SqliteClient } from "@condukt/node"
import { Effect, Layer, References } from "effect"
import type { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { storeWriter } from "../packages/node/test/sessionStore/processes.ts"
import { start as startPostgres } from "../packages/cluster/test/support/embeddedPostgres.ts"
import { report } from "./report.ts"

const ROUNDS = Number(process.env["ROUNDS"] ?? 20)
const DATABASES = (process.env["DATABASES"] ?? "sqlite,pg").split(",")
const GOAL_MS = 5000
const fixture = path.resolve(import.meta.dirname, "../packages/cluster/test/fixtures/runner.ts")

type Runner = Effect.Success<ReturnType<typeof storeWriter>> & { readonly name: string }

/** A runner process, up when this returns. */
const runner = (kind: string, location: string, name: string, dir: string) =>
  Effect.gen(function*() {
    const child = yield* storeWriter([kind, location, name, dir], fixture)
    const line = yield* child.next
    if (!line.startsWith("ready")) return yield* Effect.die(new Error(`runner ${name}: ${line}`))
    return { ...child, name } satisfies Runner
  })

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** `ROUNDS` kills of the runner holding a session; the times to its next completed run. */
const rounds = (kind: string, location: string, database: Layer.Layer<SqlClient.SqlClient, unknown>) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-bench-failover-"))
    const runners = [yield* runner(kind, location, "r0", dir), yield* runner(kind, location, "r1", dir)]
    let spawned = 2
    return yield* Effect.gen(function*() {
      const sessions = yield* Sessions.ById
      const times: Array<number> = []
      for (let round = 0; round < ROUNDS; round++) {
        const id = yield* sessions.start("worker", { id: `failover-${round}` })
        // The runner serving the session answers with its name.
        const { text } = yield* sessions.run(id, "whoami")
        const owner = runners.findIndex((r) => r.name === text)
        if (owner === -1) return yield* Effect.die(new Error(`no runner is named ${text}`))
        yield* runners[owner]!.kill
        const killed = performance.now()
        yield* sessions.run(id, "after")
        times.push(performance.now() - killed)
        runners[owner] = yield* runner(kind, location, `r${spawned++}`, dir)
      }
      return times
    }).pipe(
      Effect.provide(Runner.layerClient().pipe(Layer.provide(database))),
      Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    )
  })

const program = Effect.gen(function*() {
  const measured: Array<readonly [string, ReadonlyArray<number>]> = []
  if (DATABASES.includes("sqlite")) {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-bench-failover-db-")), "cluster.db")
    measured.push(["one SQLite file", yield* rounds("sqlite", file, SqliteClient.layer({ file }))])
  }
  if (DATABASES.includes("pg")) {
    const postgres = yield* startPostgres
    const database = yield* postgres.createDatabase
    measured.push(["Postgres", yield* rounds("pg", `${postgres.socketDir}:${database}`, postgres.client(database))])
  }
  for (const [name, times] of measured) {
    const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`
    console.log(`${name}: ${times.map(s).join(", ")}`)
    console.log(`${name}: median ${s(median(times))}, max ${s(Math.max(...times))} over ${times.length} kills`)
    report({
      benchmark: `cluster failover on ${name}: kill -9 of the session's runner to its next completed run (median of ${times.length}; max ${s(Math.max(...times))})`,
      ours: s(median(times)),
      baseline: "4.00 s (lock expiry)",
      ratio: median(times) / 4000,
      goal: `median ≤ ${GOAL_MS / 1000} s`,
      met: median(times) <= GOAL_MS
    })
  }
}).pipe(Effect.scoped, Effect.provide(Layer.succeed(References.MinimumLogLevel, "Warn")))

Effect.runPromise(program).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})

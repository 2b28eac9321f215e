/**
 * The sharding timings a runner chooses by its store (ADR 0099): `FAILOVER_POSTGRES` on Postgres,
 * where a dead runner is found by its closed database session (ADR 0095), `FAILOVER` on SQLite.
 *
 * And what the longer Postgres timings are for: effect/cluster gives each shard-lock refresh the
 * refresh interval as its deadline, and a runner whose refresh is late gives up every shard it
 * holds and takes them back. A runner in this process (`Runner.layerSharding`, no entities) holds
 * every shard of a real Postgres database; its row of the runner list is then locked by another
 * transaction for 1.2 s, so its refreshes (the heartbeat's `UPDATE` first) wait that long — a
 * refresh answered late, as under CPU load. Its drops are counted from its log ("Shard lock storage
 * is unhealthy", one per drop): with `FAILOVER`'s 500 ms it drops its shards, with Postgres's
 * default (2 s) it keeps them.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Logger, Metric, Schedule } from "effect"
import { ClusterMetrics } from "effect/cluster"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as Runner from "../src/Runner.ts"
import { FreePort, TempDir } from "@condukt/testing"
import { EmbeddedPostgres, layer as embeddedPostgres } from "./support/embeddedPostgres.ts"

const tempDir = TempDir.make("condukt-store-")

/** What effect/cluster logs when a refresh missed its deadline and the runner drops every shard. */
const DROPPED = "Shard lock storage is unhealthy"

/** The timings a runner chooses on the SqlClient's database. */
const chosen = Effect.gen(function*() {
  return Runner.failoverOf(yield* SqlClient.SqlClient)
})

/** The shards this process's runner holds and is releasing (effect/cluster's gauges). */
const shards = Effect.map(
  Effect.all([Metric.value(ClusterMetrics.shards), Metric.value(ClusterMetrics.shardsReleasing)]),
  ([held, releasing]) => [Number(held.value), Number(releasing.value)] as const
)

/** Until this process's runner holds every shard and releases none (its shards move only then). */
const holdsEvery = shards.pipe(
  Effect.filterOrFail(([held, releasing]) => held === 100 && releasing === 0),
  Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 300 })
)

/** Until a refresh's heartbeat (`UPDATE cluster_runners SET last_heartbeat …`) waits for a row lock. */
const refreshWaiting = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
    AND query LIKE 'UPDATE%last_heartbeat%'`
  if (rows.length === 0) return yield* Effect.fail("no refresh waits")
}).pipe(Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 500 }))

/**
 * How many times a runner on a new Postgres database, with `sharding` over its store's timings,
 * drops its shards when a refresh of its locks waits 1.2 s for its runner row, held by another
 * transaction (counted once it holds every shard again, a refresh interval and more after the row
 * is let go).
 */
const dropsWhenLate = (sharding: Runner.Options<never>["sharding"]) =>
  Effect.scoped(Effect.gen(function*() {
    const postgres = yield* EmbeddedPostgres
    const database = yield* Effect.orDie(postgres.createDatabase)
    const port = yield* FreePort.make
    const logged: Array<string> = []
    const capture = Logger.make(({ message }) => {
      const first = Array.isArray(message) ? message[0] : message
      if (typeof first === "string") logged.push(first)
    })
    yield* Layer.build(Runner.layerSharding({ port, sharding }).pipe(Layer.provide([postgres.client(database), Logger.layer([capture])])))
    yield* holdsEvery
    // The row held until the runner's next refresh has waited 1.2 s for it (seen waiting on
    // another connection).
    yield* Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT 1 FROM cluster_runners WHERE address = ${`127.0.0.1:${port}`} FOR UPDATE`
        yield* refreshWaiting.pipe(Effect.provide(postgres.client(database)))
        yield* Effect.sleep("1200 millis")
      }))
    }).pipe(Effect.provide(postgres.client(database)))
    yield* Effect.sleep("2500 millis")
    yield* holdsEvery
    return logged.filter((message) => message === DROPPED).length
  }))

layer(embeddedPostgres, { excludeTestServices: true, timeout: "90 seconds" })("Runner's sharding timings, by store", (it) => {
  it.effect("runners on Postgres choose FAILOVER_POSTGRES (2 s refreshes, 10 s expiry), runners on SQLite FAILOVER (500 ms, 3 s)", () =>
    Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      const onPostgres = yield* chosen.pipe(Effect.provide(postgres.client(database)))
      const file = path.join(yield* tempDir, "cluster.db")
      const onSqlite = yield* chosen.pipe(Effect.provide(SqliteClient.layer({ file })))
      assert.deepStrictEqual({ onPostgres, onSqlite }, {
        onPostgres: { ...Runner.FAILOVER, shardLockRefreshInterval: "2 seconds", shardLockExpiration: "10 seconds" },
        onSqlite: Runner.FAILOVER
      })
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.effect("a runner on Postgres whose lock refreshes answer 1.2 s late drops its shards with FAILOVER's 500 ms deadline, and keeps them with Postgres's 2 s", () =>
    Effect.gen(function*() {
      const withFailover = yield* dropsWhenLate({
        shardLockRefreshInterval: Runner.FAILOVER.shardLockRefreshInterval,
        shardLockExpiration: Runner.FAILOVER.shardLockExpiration
      })
      const withPostgresTimings = yield* dropsWhenLate(undefined)
      assert.deepStrictEqual({ withFailover: withFailover > 0, withPostgresTimings }, { withFailover: true, withPostgresTimings: 0 })
    }), { timeout: 120_000 })
})

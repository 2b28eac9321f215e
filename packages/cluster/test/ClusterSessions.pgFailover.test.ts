/**
 * Failover on what Postgres knows (issue 43 item 4, ADR 0095): two runner processes
 * (fixtures/runner.ts) on a real Postgres (support/embeddedPostgres.ts), this process a client.
 * Each runner holds its liveness lock (internal/runnerLiveness.ts). A runner stopped (`SIGSTOP`,
 * its sockets open) for 2 s is never marked unhealthy and keeps its lock. The runner holding two
 * sessions is killed (`kill -9`) while one of them runs: Postgres frees its liveness lock and its
 * shard locks with its session, and it is marked unhealthy while its heartbeat is still fresh —
 * before the heartbeat expiry would have dropped it from the runner list; the run in flight
 * completes on the other runner, the other session's next run too, each run once in its history,
 * and the runner left holds every shard lock. And one look at a runner list, step by step: only a
 * runner seen holding its lock, that nobody holds now, is marked, once; one gone from the list is
 * forgotten.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as Message from "@condukt/core/Message"
import * as Sessions from "@condukt/core/Sessions"
import * as Runner from "../src/Runner.ts"
import { keyOf, look, NAMESPACE } from "../src/internal/runnerLiveness.ts"
import { storeWriter } from "../../node/test/sessionStore/processes.ts"
import { TempDir } from "@condukt/testing"
import { EmbeddedPostgres, layer as embeddedPostgres } from "./support/embeddedPostgres.ts"
import { ask, type Child, settled } from "./support/runners.ts"

const tempDir = TempDir.make("condukt-store-")

const fixture = path.resolve(import.meta.dirname, "fixtures/runner.ts")

const turn = (prompt: string, reply: string) => [Message.user(prompt), Message.assistant([Message.textPart(reply)])]

/** A runner process `name` on the database at `location`, up; its address (`host:port`, as the runner list spells it). */
const runner = (location: string, name: string, dir: string) =>
  Effect.gen(function*() {
    const child = yield* storeWriter(["pg", location, name, dir], fixture)
    const [word, named, port] = (yield* child.next).split(" ")
    assert.deepStrictEqual([word, named], ["ready", name])
    return { child, address: `127.0.0.1:${port}` }
  })

/** Whether the runner at `address` holds its liveness lock. */
const livenessHeld = (address: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
      AND classid = ${sql.literal(String(NAMESPACE >>> 0))} AND objid = ${sql.literal(String(keyOf(address) >>> 0))} AND objsubid = 2`
    return rows.length === 1
  })

/** The shard locks held (effect's two-key advisory locks, every runner's). */
const shardLocks = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ readonly count: number | string }>`SELECT count(*) AS count FROM pg_locks WHERE locktype = 'advisory'
    AND granted AND objsubid = 2 AND classid <> ${sql.literal(String(NAMESPACE >>> 0))}`
  return Number(row!.count)
})

/**
 * The runner at `address` as the list has it: healthy or not, and whether its heartbeat is fresh
 * (younger than 3 s: the runners' reads of the list, which drop it at 10 s on Postgres, still count it).
 */
const listed = (address: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ readonly healthy: boolean; readonly fresh: boolean }>`SELECT healthy,
      last_heartbeat > NOW() - INTERVAL '3 seconds' AS fresh FROM cluster_runners WHERE address = ${address}`
    return rows[0] === undefined ? undefined : { healthy: rows[0].healthy, fresh: rows[0].fresh }
  })

/** Observations of `effect` every 100 ms for `millis`. */
const observe = <A, E, R>(effect: Effect.Effect<A, E, R>, millis: number) =>
  Effect.gen(function*() {
    const seen: Array<A> = []
    for (let elapsed = 0; elapsed < millis; elapsed += 100) {
      seen.push(yield* effect)
      yield* Effect.sleep("100 millis")
    }
    return seen
  })

/** Stops the process `pid` (`SIGSTOP`) for the effect, then lets it go on. */
const stopped = <A, E, R>(pid: number, effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => process.kill(pid, "SIGSTOP")),
    () => effect,
    () => Effect.sync(() => process.kill(pid, "SIGCONT"))
  )

layer(embeddedPostgres, { excludeTestServices: true, timeout: "90 seconds" })("ClusterSessions, two runner processes on Postgres, failover on the closed session", (it) => {
  it.effect("a stalled runner is never marked; a killed one is marked unhealthy before its heartbeat expires, its locks free, and its sessions' runs complete on the other, each once", () =>
    Effect.scoped(Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      const dir = yield* tempDir
      const location = `${postgres.socketDir}:${database}`
      const a = yield* runner(location, "a", dir)
      const b = yield* runner(location, "b", dir)
      const runners = { a, b }
      yield* settled({ a: a.child, b: b.child })

      yield* Effect.gen(function*() {
        assert.deepStrictEqual([yield* livenessHeld(a.address), yield* livenessHeld(b.address), yield* shardLocks], [true, true, 100])

        // A runner stopped for 2 s keeps its sockets, its session, its lock: never marked.
        const stall = yield* stopped(a.child.pid, observe(Effect.all([listed(a.address), livenessHeld(a.address)]), 2000))
        assert.deepStrictEqual(stall.filter(([row, held]) => row?.healthy !== true || !held), [])
        yield* settled({ a: a.child, b: b.child })

        const sessions = yield* Sessions.ById
        const ids = Array.from({ length: 10 }, (_, i) => `s${i}`)
        yield* Effect.forEach(ids, (id) => sessions.start("worker", { id }), { concurrency: 10, discard: true })
        const owners = yield* Effect.forEach(ids, (id) => Effect.map(sessions.run(id, "whoami"), (reply) => reply.text), { concurrency: 10 })
        const victim = owners[0] === "a" ? "a" : "b"
        const survivor: Child = runners[victim === "a" ? "b" : "a"].child
        const [x, y] = ids.filter((_, i) => owners[i] === victim)
        assert.isDefined(y, `owners: ${owners.join("")}`)

        // x's run is in flight on the victim when it dies.
        const held = yield* Effect.forkChild(sessions.run(x!, "hold x"))
        assert.strictEqual(yield* runners[victim].child.next, `held ${victim}`)
        yield* runners[victim].child.kill

        // Marked unhealthy while its heartbeat is fresh: the heartbeat expiry did not move its shards
        // (polled until it is one or the other).
        const marked = yield* listed(runners[victim].address).pipe(
          Effect.filterOrFail((row) => row?.healthy !== true || !row.fresh),
          Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 200 })
        )
        assert.deepStrictEqual(marked, { healthy: false, fresh: true })
        assert.isFalse(yield* livenessHeld(runners[victim].address))

        // The run in flight completes on the runner left, and the other session's next run; each once.
        assert.strictEqual((yield* Fiber.join(held)).text, "done: hold x")
        assert.strictEqual((yield* sessions.run(y!, "after")).text, "echo: after")
        assert.deepStrictEqual(yield* sessions.history(x!), [...turn("whoami", victim), ...turn("hold x", "done: hold x")])
        assert.deepStrictEqual(yield* sessions.history(y!), [...turn("whoami", victim), ...turn("after", "echo: after")])

        // The runner left holds every shard, and every shard lock is its.
        yield* ask(survivor, "shards").pipe(
          Effect.filterOrFail((shards) => shards[0] === 100 && shards[1] === 0),
          Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 100 })
        )
        assert.strictEqual(yield* shardLocks, 100)
      }).pipe(Effect.provide(Runner.layerClient().pipe(Layer.provideMerge(postgres.client(database)))))
    })), { timeout: 120_000 })

  it.effect("a look marks unhealthy only a runner seen holding its lock that nobody holds now, once; a runner never seen holding it, one gone from the list since, or itself, is left alone", () =>
    Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE runners (address TEXT PRIMARY KEY, healthy BOOLEAN NOT NULL)`
        yield* sql`INSERT INTO runners VALUES ('10.0.0.1:1', TRUE), ('10.0.0.2:2', TRUE), ('10.0.0.3:3', TRUE)`
        const options = { address: "10.0.0.3:3", interval: 200, table: "runners" }
        const seen = new Set<string>()
        const health = Effect.map(sql<{ readonly address: string; readonly healthy: boolean }>`SELECT address, healthy FROM runners ORDER BY address`, (rows) =>
          rows.map((row) => `${row.address} ${row.healthy}`))
        /** The runner at `address`'s lock, held on a connection of its own until the scope closes (as its session would). */
        const holding = (address: string) =>
          Effect.gen(function*() {
            const conn = yield* sql.reserve
            yield* Effect.addFinalizer(() => Effect.orDie(conn.executeRaw(`SELECT pg_advisory_unlock(${NAMESPACE}, ${keyOf(address)})`, [])))
            yield* conn.executeRaw(`SELECT pg_advisory_lock(${NAMESPACE}, ${keyOf(address)})`, [])
          })

        // The first runner holds its lock; the second never has; the third is the one looking.
        const first = yield* Effect.scoped(Effect.gen(function*() {
          yield* holding("10.0.0.1:1")
          return yield* look(sql, options, seen)
        }))
        // Its connection closed: marked, once.
        const second = yield* look(sql, options, seen)
        const marked = yield* health
        const third = yield* look(sql, options, seen)
        // Healthy again (re-registered) without its lock: not seen since, left alone.
        yield* sql`UPDATE runners SET healthy = TRUE WHERE address = '10.0.0.1:1'`
        const fourth = yield* look(sql, options, seen)
        // Seen holding it again, then gone again: marked again.
        const fifth = yield* Effect.scoped(Effect.andThen(holding("10.0.0.1:1"), look(sql, options, seen)))
        const sixth = yield* look(sql, options, seen)
        // Seen holding its lock, then out of the list (gone gracefully): forgotten, so listed again
        // without its lock it is left alone.
        const seventh = yield* Effect.scoped(Effect.gen(function*() {
          yield* holding("10.0.0.2:2")
          const looks = [yield* look(sql, options, seen)]
          yield* sql`DELETE FROM runners WHERE address = '10.0.0.2:2'`
          looks.push(yield* look(sql, options, seen))
          yield* sql`INSERT INTO runners VALUES ('10.0.0.2:2', TRUE)`
          return looks
        }))
        seventh.push(yield* look(sql, options, seen))
        assert.deepStrictEqual({ first, second, marked, third, fourth, fifth, sixth, seventh, now: yield* health }, {
          first: [],
          second: ["10.0.0.1:1"],
          marked: ["10.0.0.1:1 false", "10.0.0.2:2 true", "10.0.0.3:3 true"],
          third: [],
          fourth: [],
          fifth: [],
          sixth: ["10.0.0.1:1"],
          seventh: [[], [], []],
          now: ["10.0.0.1:1 false", "10.0.0.2:2 true", "10.0.0.3:3 true"]
        })
      }).pipe(Effect.provide(postgres.client(database)))
    }), { timeout: 60_000 })
})

/**
 * runnerLiveness — on Postgres, a runner's death as the database sees it, so its shards move in
 * about a second instead of on the runner list's heartbeat expiry (3 to 4 s).
 *
 * effect/cluster's shard locks on Postgres are advisory locks of the runner's lock connection: when
 * a runner dies without a word (`kill -9`, a crash), the kernel closes its sockets, Postgres ends
 * its sessions and frees its locks at once. Its shards still wait: they move only once the other
 * runners drop it from their hash rings, when its row of the runner list (`cluster_runners`) is
 * older than the lock expiry or marked unhealthy, and the one health check that marks it (a
 * cluster singleton pinging every runner, retrying a refused ping five times 500 ms apart) takes
 * longer than the expiry, and does not run at all while the dead runner held its shard.
 *
 * So each runner holds one more advisory lock, keyed by its address, on a connection of its own for
 * as long as it runs, and every runner looks every `interval` for the runners of the list whose lock
 * it has seen held and that nobody holds now: Postgres closed their session, so their process is
 * gone (or cut off from the database, and has lost its shard locks with it). It marks them
 * unhealthy — one statement that checks again that the lock is free — and every runner's next
 * refresh of the assignments (500 ms) moves their shards. Only a closed session marks a runner: a
 * runner whose event loop stalls keeps its connections open and its lock held, and its shards are
 * taken, as before, only on the heartbeat expiry. A runner never seen holding its lock (one started
 * without this, or whose address hashes to another's key) is left to that expiry too. A runner
 * that loses its own connection takes its lock again on a new one within a second (marked unhealthy
 * meanwhile, it is marked healthy again by effect's health check).
 *
 * Postgres only (`pg` dialect, PGlite excepted: one session for every client); elsewhere nothing.
 */
import { Cause, Effect, Latch, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"

/** A 32-bit FNV-1a hash of `text`, signed (an advisory lock key is an `int4`). */
const fnv1a = (text: string): number => {
  const bytes = new TextEncoder().encode(text)
  let hash = 0x811c9dc5
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193)
  return hash | 0
}

/** The first key of every liveness lock (effect's shard locks use another: FNV-1a of `effect-cluster:cluster`). */
export const NAMESPACE = fnv1a("condukt-runner-liveness")

/** The second key of a runner's liveness lock: its address as the runner list spells it (`host:port`). */
export const keyOf = (address: string): number => fnv1a(address)

/** How a runner's lock is found in `pg_locks`: both keys as unsigned `oid`s, `objsubid` 2 for the two-key form. */
const heldBy = (key: number) =>
  `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ${NAMESPACE >>> 0} AND objsubid = 2 AND objid = ${key >>> 0}`

/**
 * Whether runners on `sql`'s database hold and watch liveness locks: Postgres (`pg`), not PGlite.
 *
 * @internal
 */
export const isWatched = (sql: SqlClient.SqlClient): boolean => sql.onDialectOrElse({ pg: () => sql.driver !== "pglite", orElse: () => false })

/** @internal */
export interface Options {
  /** This runner's address, `host:port`. */
  readonly address: string
  /** How often the runner list is looked at. */
  readonly interval: number
  /** The runner list's table (effect's `SqlRunnerStorage`, prefix `cluster`). */
  readonly table?: string | undefined
}

/**
 * Holds this runner's liveness lock on a connection of its own until the scope closes, taking it
 * again on a new connection when the one holding it fails (a cheap query every second finds out).
 * Until a previous holder of the address lets it go, it tries every 100 ms.
 */
const hold = (sql: SqlClient.SqlClient, key: number, taken: Latch.Latch) =>
  Effect.scoped(Effect.gen(function*() {
    const conn = yield* sql.reserve
    yield* Effect.addFinalizer(() => Effect.ignore(conn.executeRaw(`SELECT pg_advisory_unlock(${NAMESPACE}, ${key})`, [])))
    while (true) {
      const [[locked]] = (yield* conn.executeValues(`SELECT pg_try_advisory_lock(${NAMESPACE}, ${key})`, [])) as [[boolean]]
      if (locked) break
      yield* Effect.sleep("100 millis")
    }
    yield* taken.open
    yield* conn.executeRaw("SELECT 1", []).pipe(Effect.delay("1 second"), Effect.forever)
  })).pipe(
    Effect.catchCause((cause) => Effect.logWarning("runner liveness: the lock's connection failed; taking it again", Cause.pretty(cause))),
    Effect.repeat(Schedule.spaced("500 millis"))
  )

/**
 * One look at the runner list: the runners seen holding their lock are added to `seen`; those of
 * `seen` marked healthy whose lock nobody holds are marked unhealthy (and forgotten), as are those no
 * longer listed (so `seen` holds at most the list); the addresses marked.
 *
 * @internal
 */
export const look = Effect.fnUntraced(function*(sql: SqlClient.SqlClient, options: Options, seen: Set<string>) {
  const table = sql(options.table ?? "cluster_runners")
  const runners = yield* sql<{ readonly address: string; readonly healthy: boolean }>`SELECT address, healthy FROM ${table}`
  const held = new Set(
    (yield* sql<{ readonly objid: number | string }>`SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND granted
      AND classid = ${sql.literal(String(NAMESPACE >>> 0))} AND objsubid = 2`).map((row) => Number(row.objid))
  )
  const listed = new Set(runners.map((runner) => runner.address))
  for (const address of seen) if (!listed.has(address)) seen.delete(address)
  const gone: Array<string> = []
  for (const { address, healthy } of runners) {
    const key = keyOf(address)
    if (held.has(key >>> 0)) {
      seen.add(address)
      continue
    }
    if (address === options.address || !healthy || !seen.has(address)) continue
    seen.delete(address)
    // Checked again in the statement: a runner taking the address since is left alone.
    const marked = yield* sql`UPDATE ${table} SET healthy = FALSE WHERE address = ${address} AND healthy
      AND NOT EXISTS (${sql.literal(heldBy(key))}) RETURNING address`
    if (marked.length > 0) gone.push(address)
  }
  return gone
})

/** Looks at the runner list every `interval` for as long as the scope. */
const watch = (sql: SqlClient.SqlClient, options: Options) =>
  Effect.suspend(() => {
    const seen = new Set<string>()
    return look(sql, options, seen).pipe(
      Effect.tap((gone) =>
        gone.length === 0 ? Effect.void : Effect.logInfo(`runner liveness: ${gone.join(", ")} gone (its database session closed): marked unhealthy`)
      ),
      Effect.catchCause((cause) => Effect.logDebug("runner liveness: the runner list could not be read", Cause.pretty(cause))),
      Effect.repeat(Schedule.spaced(options.interval))
    )
  })

/**
 * A runner's liveness on Postgres: its lock held and the others watched, for the life of the layer.
 * Built before the runner's sharding, it waits (2 s at most) for the lock, so that a runner is
 * in the list only once it holds it. Nothing on another database.
 *
 * @internal
 */
export const layer = (options: Options): Layer.Layer<never, never, SqlClient.SqlClient> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    if (!isWatched(sql)) return
    const taken = yield* Latch.make(false)
    yield* Effect.forkScoped(hold(sql, keyOf(options.address), taken))
    yield* Effect.forkScoped(watch(sql, options))
    yield* Effect.timeoutOption(taken.await, "2 seconds")
  }))

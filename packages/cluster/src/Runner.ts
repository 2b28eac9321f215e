/**
 * Runner — the processes a cluster of sessions runs on, and the programs that only speak to it.
 *
 * A runner listens for other runners on TCP (`NodeClusterSocket`), keeps the cluster's mailboxes,
 * runner list and shard locks in SQL (`storage: "sql"`) and serves the session entities of the
 * agents it is given; every runner of one cluster shares one database and knows the same agents.
 * A client (`layerClient`) sends to the runners through the same database and sockets, and serves
 * no entity. Both give `Sessions.ById`.
 *
 * The database is the program's SqlClient: `@effect/sql-pg`'s `PgClient.layer` for a real
 * deployment; `layerSqlite` (and `layerSqliteClient`) are the embedded default, one SQLite file
 * through `@condukt/node`'s `SqliteClient`, for one process or several on one machine, with nothing
 * installed; its commits are written, not synced (`synchronous: "normal"`: they survive a runner's
 * `kill -9`, not a power loss; `"full"` syncs each one, docs/decisions/0071). Failover is set to seconds (`FAILOVER`): a runner that dies without a word (`kill -9`)
 * holds its shards until their locks expire, 3 s after their last refresh, then the other runners
 * take them over and deliver the runs it had accepted. On Postgres it is about a second: the dead
 * runner's locks go with its database session, and the runners, seeing that session closed, mark
 * it unhealthy at once (internal/runnerLiveness.ts, docs/decisions/0095); the lock expiry no
 * longer sets failover there, so its locks are refreshed less often, with more time for each
 * refresh (`FAILOVER_POSTGRES`, docs/decisions/0099; docs/cluster.md gives the timings).
 */
import * as NodeClusterSocket from "./internal/nodeClusterSocket.ts"
import { Duration, Effect, Layer, Option } from "effect"
import { RunnerAddress, ShardingConfig, SqlRunnerStorage } from "effect/cluster"
import { SqlClient } from "effect/sql"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as ClusterSessions from "./ClusterSessions.ts"
import * as MailboxSweep from "./internal/mailboxSweep.ts"
import * as MessageStorage from "./internal/messageStorage.ts"
import * as RunnerLiveness from "./internal/runnerLiveness.ts"
import * as SessionEntity from "./SessionEntity.ts"

/**
 * Sharding timings for failover in seconds: shard locks refreshed every 500 ms and expiring after
 * 3 s (effect's defaults, 10 s and 35 s, take ~37 s to move a dead runner's sessions): a live runner
 * keeps its shards through 2.5 s without a refresh (a stalled event loop, a database another writer
 * holds, 2 s at most on SQLite), and a dead one's are free 3 to 4 s after its last refresh (SQLite's
 * times have a one-second resolution). Assignments re-read every 500 ms, persisted messages polled
 * every 500 ms, runners pinged every 2 s (docs/decisions/0071). SQLite's, and any database's
 * without the liveness lock: on Postgres a dead runner is found by its closed database session
 * instead, within 200 ms (ADR 0095), and the runners there use `FAILOVER_POSTGRES`. A runner
 * stopping gracefully gives its entities 2 s before it interrupts them (effect's default is 15 s):
 * a run in flight then is handed to the next runner sooner (its session stopped at once, ADR 0072).
 * `shardsPerGroup` is fixed for the life of a database: every runner of a cluster must agree on it.
 *
 * @since 0.1.0
 * @category models
 */
export const FAILOVER = {
  shardsPerGroup: 100,
  shardLockRefreshInterval: "500 millis",
  shardLockExpiration: "3 seconds",
  refreshAssignmentsInterval: "500 millis",
  entityMessagePollInterval: "500 millis",
  runnerHealthCheckInterval: "2 seconds",
  entityTerminationTimeout: "2 seconds"
} as const satisfies Partial<ShardingConfig.ShardingConfig["Service"]>

/**
 * `FAILOVER` on Postgres, where a dead runner is found by its closed database session (ADR 0095),
 * not by its locks' expiry: shard locks refreshed every 2 s and expiring after 10 s. effect/cluster
 * gives each refresh the refresh interval as its deadline, and a runner whose refresh is later
 * than that gives up every shard it holds and takes them back (its sessions stopped, their runs
 * sent again): under CPU load a 500 ms deadline was missed hundreds of times an hour, a 2 s one
 * hardly ever (docs/decisions/0099). Failover of a runner that dies is unchanged, about a second.
 * What the expiry still sets there: how long a runner cut off from the database with its process
 * alive keeps its shards from the others (10 to 11 s; it stops serving them on its first late
 * refresh, within 4 s), and failover of a runner the others never saw holding its liveness lock.
 *
 * @since 0.1.0
 * @category models
 */
export const FAILOVER_POSTGRES = {
  ...FAILOVER,
  shardLockRefreshInterval: "2 seconds",
  shardLockExpiration: "10 seconds"
} as const satisfies Partial<ShardingConfig.ShardingConfig["Service"]>

/**
 * The timings of a cluster on `sql`'s database: `FAILOVER_POSTGRES` on Postgres (where runners
 * hold their liveness lock, internal/runnerLiveness.ts), `FAILOVER` elsewhere (SQLite, PGlite).
 * Every runner and client of one database chooses the same.
 *
 * @since 0.1.0
 * @category models
 */
export const failoverOf = (sql: SqlClient.SqlClient): typeof FAILOVER | typeof FAILOVER_POSTGRES =>
  RunnerLiveness.isWatched(sql) ? FAILOVER_POSTGRES : FAILOVER

/** The sharding settings of `sharding` over the timings of the SqlClient's database, for `build`. */
const withFailover = <A, E, R>(
  sharding: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined,
  build: (config: Partial<ShardingConfig.ShardingConfig["Service"]>) => Layer.Layer<A, E, R>
) =>
  Layer.unwrap(Effect.gen(function*() {
    return build({ ...failoverOf(yield* SqlClient.SqlClient), ...sharding })
  }))

/**
 * How often a runner on Postgres looks for runners whose database session closed (a process gone:
 * its shard locks are free), to mark them unhealthy at once (internal/runnerLiveness.ts, ADR 0095).
 */
const LIVENESS_INTERVAL = 200

/** What a runner serves, where it listens and how long it keeps its mailboxes. @since 0.1.0 @category models */
export interface Options<R> extends SessionEntity.Options<R> {
  /** The address other runners and clients reach this runner at. Default `127.0.0.1`. */
  readonly host?: string | undefined
  /** The TCP port this runner listens on for the other runners and the clients. */
  readonly port: number
  /** Sharding settings over `FAILOVER` (`FAILOVER_POSTGRES` on Postgres; the same for every runner of a cluster). */
  readonly sharding?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
  /**
   * How long the cluster keeps a session's answered messages (a run's prompt and reply, sent
   * again within it, is answered from them, not run again). Default 1 hour; swept every minute
   * (every `mailboxRetention` when shorter, at least a second apart).
   */
  readonly mailboxRetention?: Duration.Input | undefined
}

/**
 * How a program that runs no entity joins the cluster, and how its calls wait while no runner is
 * up (`waitNotice`: a warning after 30 s by default; `timeout`: then `Unavailable`, none by default).
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientOptions extends ClusterSessions.WaitOptions {
  /** Sharding settings over `FAILOVER` (`FAILOVER_POSTGRES` on Postgres; the runners'). */
  readonly sharding?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
}

/**
 * The cluster's storage on the SqlClient's database: effect's SQL mailboxes (their claim made cheap
 * on SQLite, internal/messageStorage.ts) and runner list and shard locks.
 */
const storage = (config: Partial<ShardingConfig.ShardingConfig["Service"]>) =>
  Layer.merge(MessageStorage.layer, Layer.orDie(SqlRunnerStorage.layer)).pipe(Layer.provide(ShardingConfig.layerFromEnv(config)))

/**
 * The cluster a runner takes part in, without entities: sharding over the SqlClient's database,
 * listening for other runners on `options.port` (what `layer` serves its sessions on; a program
 * with entities of its own registers them on it).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSharding = (options: Pick<Options<never>, "host" | "port" | "sharding">) => {
  const host = options.host ?? "127.0.0.1"
  const runnerAddress = Option.some(RunnerAddress.make(host, options.port))
  return withFailover(options.sharding, (config) => {
    const shardingConfig = { ...config, runnerAddress }
    return NodeClusterSocket.layer({ storage: "byo", shardingConfig }).pipe(Layer.provideMerge(storage(shardingConfig)))
  }).pipe(Layer.provide(RunnerLiveness.layer({ address: `${host}:${options.port}`, interval: LIVENESS_INTERVAL })))
}

/**
 * The cluster of a program that runs no entity: it sends to the runners of the SqlClient's database.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerShardingClient = (options: ClientOptions = {}) =>
  withFailover(options.sharding, (shardingConfig) =>
    NodeClusterSocket.layer({ clientOnly: true, storage: "byo", shardingConfig }).pipe(Layer.provideMerge(storage(shardingConfig))))

/**
 * A runner on the SqlClient's database, serving the sessions of `options.agents`, and
 * `Sessions.ById` to the program running it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <R>(options: Options<R>) => {
  const retention = Duration.fromInputUnsafe(options.mailboxRetention ?? "1 hour")
  const sweep = MailboxSweep.layer({
    entityType: SessionEntity.SessionEntity.type,
    retention,
    interval: Duration.clamp(retention, { minimum: Duration.seconds(1), maximum: Duration.minutes(1) })
  })
  return ClusterSessions.layerWith({ address: `${options.host ?? "127.0.0.1"}:${options.port}` }).pipe(
    Layer.provideMerge(SessionEntity.layer(options)),
    Layer.merge(sweep),
    Layer.provide(layerSharding(options))
  )
}

/**
 * `Sessions.ById` for a program that runs no sessions itself: it sends to the runners of the
 * SqlClient's database.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerClient = (options: ClientOptions = {}) => ClusterSessions.layerWith(options).pipe(Layer.provide(layerShardingClient(options)))

/**
 * Where the embedded default keeps the cluster: one SQLite file, and how its commits reach the disk.
 *
 * @since 0.1.0
 * @category models
 */
export interface SqliteOptions {
  /** The database file (created when missing), shared by the runners and clients of one machine. */
  readonly file: string
  /**
   * `"normal"` (the default): a commit is written to the file's WAL, not synced; it survives the
   * `kill -9` of any runner, and a power loss or an OS crash may lose the last commits (the machine's
   * runners all stop then). `"full"`: each commit is synced, and survives a power loss too, at an
   * fsync per commit (several per run).
   */
  readonly synchronous?: "full" | "normal" | undefined
}

const sqlite = (options: SqliteOptions) => SqliteClient.layer({ file: options.file, synchronous: options.synchronous ?? "normal" })

/**
 * The embedded default: a runner on the SQLite file `options.file` (created when missing), shared
 * by the runners and clients of one machine.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSqlite = <R>(options: Options<R> & SqliteOptions) => layer(options).pipe(Layer.provide(sqlite(options)))

/**
 * A client of the runners on the SQLite file `options.file`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSqliteClient = (options: ClientOptions & SqliteOptions) => layerClient(options).pipe(Layer.provide(sqlite(options)))

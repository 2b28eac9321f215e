/**
 * SqlServerStore — the server's own records (`ServerStore`) in a SQL database reached through
 * effect/sql's `SqlClient`: Postgres (`@effect/sql-pg`) or SQLite (`@condukt/node`'s
 * `SqliteClient`). Servers on one database share them: a session one server started is its
 * principal's on every other, and a stream dropped on one resumes on another, or on the same one
 * restarted after a `kill -9`, exactly after the last event its client saw.
 *
 * Four tables. `condukt_server_sessions`: a row per session (its principal, agent, creation, the
 * number of its last event, its last activity, its usage as columns, whether its events show a run
 * open). `condukt_server_events`: a row per kept event (the session, its number, when it was
 * written, its JSON as eventJson.ts writes it), keyed by both. `condukt_server_usage`: the tokens
 * of each session's turns per UTC day, written with the events. `condukt_server_runs`: the leases.
 * Tables an older version created gain the columns added since when a store opens them.
 *
 * An append is one transaction that first moves the session row's `last_event_id` on by the batch
 * (`UPDATE … RETURNING`: on Postgres the row's lock, on SQLite the write lock `BEGIN IMMEDIATE`
 * takes), then inserts the batch under the numbers that gives: of two servers appending to one
 * session, the second waits for the first's commit and numbers after it, never with it. The window
 * is kept by the readers, exactly (a read never returns an event more than `window` before the
 * last), and on disk every `pruneEvery` events, in the append that crosses a multiple of it.
 *
 * `wait` wakes on this process's own appends at once; another process's it finds by polling: every
 * `poll` (default 100 ms) it asks for the session's last number, one query for all the readers of a
 * session in this process, and completes once it moved past the reader's. A stream follows another
 * server's writes about that late.
 *
 * A database another writer holds (SQLite's lock, a Postgres deadlock or serialization failure) is
 * retried on the Effect clock, a transaction whole (statements inside a SqliteClient transaction
 * are not retried by the client).
 */
import { Array as Arr, Clock, Deferred, Duration, Effect, Layer, Option, Schedule } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import * as EventJson from "./internal/eventJson.ts"
import * as Rows from "./internal/sqlServerRows.ts"
import { dayOf, makeWaiters, NO_USAGE, runningAfter, tokensOf, usageOf } from "./internal/storeParts.ts"
import { type Entry, ServerStore, ServerStoreError, type Service, WINDOW } from "./ServerStore.ts"

/** @since 0.1.0 @category models */
export interface Options {
  /** The events kept per session for readers that resume (default `ServerStore.WINDOW`). */
  readonly window?: number | undefined
  /** How often `wait` asks the database whether another process wrote (default 100 ms). */
  readonly poll?: Duration.Input | undefined
  /** Events deleted from disk at most this many at a time (default `PRUNE_EVERY`, at most the window). */
  readonly pruneEvery?: number | undefined
}

/** How often a transaction retries a database another writer holds, 20 ms apart. */
export const BUSY_RETRIES = 100

/** Past the window, events are deleted from disk once this many more were written. */
export const PRUNE_EVERY = 256

/** Event rows per INSERT: three parameters each, far below either database's limit. */
const INSERT_CHUNK = 300

/** How often a read whose rows a concurrent prune took is tried again. */
const READ_ATTEMPTS = 5

/** The sessions whose last appended number this process remembers (for `wait`); the oldest forgotten first. */
const REMEMBERED = 10_000

/** Serialises the creation of the tables across processes on Postgres (`CREATE … IF NOT EXISTS` races there). */
const SCHEMA_LOCK = 0x636f6e73

const TABLES = {
  pg: [
    "CREATE TABLE IF NOT EXISTS condukt_server_sessions (id TEXT PRIMARY KEY NOT NULL, principal TEXT NOT NULL, agent TEXT NOT NULL, created_at BIGINT NOT NULL, last_event_id BIGINT NOT NULL, last_activity BIGINT NOT NULL, input_tokens BIGINT NOT NULL, output_tokens BIGINT NOT NULL, cache_read_tokens BIGINT NOT NULL, cache_write_tokens BIGINT NOT NULL, open_run BIGINT NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS condukt_server_sessions_principal ON condukt_server_sessions (principal, created_at, id)",
    "CREATE TABLE IF NOT EXISTS condukt_server_events (session_id TEXT NOT NULL, id BIGINT NOT NULL, event TEXT NOT NULL, at BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (session_id, id))",
    "CREATE TABLE IF NOT EXISTS condukt_server_runs (session_id TEXT PRIMARY KEY NOT NULL, holder TEXT NOT NULL, expires_at BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS condukt_server_usage (session_id TEXT NOT NULL, day TEXT NOT NULL, principal TEXT NOT NULL, agent TEXT NOT NULL, input_tokens BIGINT NOT NULL, output_tokens BIGINT NOT NULL, cache_read_tokens BIGINT NOT NULL, cache_write_tokens BIGINT NOT NULL, PRIMARY KEY (session_id, day))",
    "CREATE INDEX IF NOT EXISTS condukt_server_usage_principal ON condukt_server_usage (principal, day)",
    // Tables an older version created lack the columns added since.
    "ALTER TABLE condukt_server_sessions ADD COLUMN IF NOT EXISTS open_run BIGINT NOT NULL DEFAULT 0",
    "ALTER TABLE condukt_server_events ADD COLUMN IF NOT EXISTS at BIGINT NOT NULL DEFAULT 0"
  ],
  sqlite: [
    "CREATE TABLE IF NOT EXISTS condukt_server_sessions (id TEXT PRIMARY KEY NOT NULL, principal TEXT NOT NULL, agent TEXT NOT NULL, created_at INTEGER NOT NULL, last_event_id INTEGER NOT NULL, last_activity INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL, open_run INTEGER NOT NULL DEFAULT 0) STRICT",
    "CREATE INDEX IF NOT EXISTS condukt_server_sessions_principal ON condukt_server_sessions (principal, created_at, id)",
    "CREATE TABLE IF NOT EXISTS condukt_server_events (session_id TEXT NOT NULL, id INTEGER NOT NULL, event TEXT NOT NULL, at INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (session_id, id)) STRICT, WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS condukt_server_runs (session_id TEXT PRIMARY KEY NOT NULL, holder TEXT NOT NULL, expires_at INTEGER NOT NULL) STRICT",
    "CREATE TABLE IF NOT EXISTS condukt_server_usage (session_id TEXT NOT NULL, day TEXT NOT NULL, principal TEXT NOT NULL, agent TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL, PRIMARY KEY (session_id, day)) STRICT, WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS condukt_server_usage_principal ON condukt_server_usage (principal, day)"
  ]
} as const

/** Columns added since the first version, added to SQLite tables that lack them (SQLite has no `ADD COLUMN IF NOT EXISTS`). */
const ADDED_COLUMNS = [
  { table: "condukt_server_sessions", column: "open_run", definition: "open_run INTEGER NOT NULL DEFAULT 0" },
  { table: "condukt_server_events", column: "at", definition: "at INTEGER NOT NULL DEFAULT 0" }
] as const

/** Another writer holds the database: worth another try. */
const isBusy = (error: SqlError.SqlError | ServerStoreError) =>
  error._tag === "SqlError" &&
  (error.reason._tag === "LockTimeoutError" || error.reason._tag === "DeadlockError" || error.reason._tag === "SerializationError")

const busyPolicy = { while: isBusy, times: BUSY_RETRIES, schedule: Schedule.spaced("20 millis") }

/** `text` for a LIKE pattern with `!` as its escape: its wildcards and the escape itself taken as written. */
const likeEscaped = (text: string) => text.replace(/[!%_]/g, (c) => `!${c}`)

const storeError = (method: string) => (error: SqlError.SqlError | ServerStoreError) =>
  error._tag === "ServerStoreError" ? error : new ServerStoreError({ method, description: error.reason.message ?? error.message })

/**
 * A store on the current SqlClient's database; its tables are created when missing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("SqlServerStore.make")(function*(options: Options = {}) {
  const sql = yield* SqlClient.SqlClient
  const dialect = sql.onDialectOrElse({ pg: () => "pg" as const, sqlite: () => "sqlite" as const, orElse: () => undefined })
  if (dialect === undefined) {
    return yield* new SqlError.SqlError({
      reason: new SqlError.UnknownError({ cause: undefined, message: "SqlServerStore speaks Postgres and SQLite only", operation: "open" })
    })
  }
  const window = Math.max(1, Math.trunc(options.window ?? WINDOW))
  const pruneEvery = Math.max(1, Math.min(window, Math.trunc(options.pruneEvery ?? PRUNE_EVERY)))
  const poll = Duration.fromInputUnsafe(options.poll ?? "100 millis")
  const pollMillis = Duration.toMillis(poll)

  /** Runs `body` in one transaction, retried whole while another writer holds the database. */
  const transaction = <A, E extends SqlError.SqlError | ServerStoreError>(body: Effect.Effect<A, E>) =>
    Effect.retry(sql.withTransaction(body), busyPolicy)

  // Several processes opening a new database at once meet on its tables: retried like any transaction.
  yield* transaction(Effect.gen(function*() {
    if (dialect === "pg") yield* sql`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK})`
    for (const table of TABLES[dialect]) yield* sql.unsafe(table)
    if (dialect === "sqlite") {
      for (const { column, definition, table } of ADDED_COLUMNS) {
        const found = yield* sql`SELECT name FROM pragma_table_info(${table}) WHERE name = ${column}`
        if (found.length === 0) yield* sql.unsafe(`ALTER TABLE ${table} ADD COLUMN ${definition}`)
      }
    }
  }))

  const waiters = makeWaiters()
  /** The last number this process appended per session, so that `wait` need not wait for what it wrote itself. */
  const written = new Map<string, number>()
  const remember = (id: string, last: number) => {
    written.delete(id)
    written.set(id, last)
    if (written.size > REMEMBERED) written.delete(written.keys().next().value!)
  }

  const claim: Service["claim"] = Effect.fn("SqlServerStore.claim")(function*({ agent, id, now, principal }) {
    const at = Math.trunc(now)
    const rows = yield* sql`INSERT INTO condukt_server_sessions (id, principal, agent, created_at, last_event_id, last_activity, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
      VALUES (${id}, ${principal}, ${agent}, ${at}, 0, ${at}, 0, 0, 0, 0) ON CONFLICT (id) DO NOTHING RETURNING id`.pipe(Effect.mapError(storeError("claim")))
    return rows.length === 1
  })

  const owned: Service["owned"] = Effect.fn("SqlServerStore.owned")(function*(id) {
    const [row] = yield* sql`SELECT ${sql.literal(Rows.SESSION_COLUMNS)} FROM condukt_server_sessions WHERE id = ${id}`.pipe(Effect.mapError(storeError("owned")))
    return row === undefined ? Option.none() : Option.some(yield* Rows.owned("owned", row))
  })

  const list: Service["list"] = Effect.fn("SqlServerStore.list")(function*(principal, { agent, before, limit, q }) {
    const page = Math.max(0, Math.trunc(limit))
    // No id or agent holds a NUL (and Postgres refuses one in a text): such a filter matches nothing.
    if (page === 0 || [agent, q, before].some((text) => text?.includes("\u0000") === true)) return []
    // Newest first: by creation, then by id; a cursor that is not the principal's matches nothing.
    const where = sql.and([
      sql`principal = ${principal}`,
      ...(agent === undefined ? [] : [sql`agent = ${agent}`]),
      // The id holds `q` as written: LIKE with its wildcards escaped; SQLite's LIKE ignores ASCII case, instr does not.
      ...(q === undefined ? [] : [sql`id LIKE ${`%${likeEscaped(q)}%`} ESCAPE '!'`, ...(dialect === "sqlite" ? [sql`instr(id, ${q}) > 0`] : [])]),
      ...(before === undefined ? [] : [sql`(created_at, id) < (SELECT created_at, id FROM condukt_server_sessions WHERE id = ${before} AND principal = ${principal})`])
    ])
    const rows = yield* sql`SELECT ${sql.literal(Rows.SESSION_COLUMNS)}, open_run FROM condukt_server_sessions WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${page}`.pipe(
      Effect.mapError(storeError("list"))
    )
    return yield* Effect.forEach(rows, (row) => Rows.listed("list", row))
  })

  const TOKENS = "SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, SUM(cache_read_tokens) AS cache_read_tokens, SUM(cache_write_tokens) AS cache_write_tokens"
  const usage: Service["usage"] = Effect.fn("SqlServerStore.usage")(function*(principal, by, { limit, since }) {
    const page = Math.max(0, Math.trunc(limit))
    const tokens = sql.literal(TOKENS)
    const total = sql.literal("input_tokens + output_tokens + cache_read_tokens + cache_write_tokens")
    const rows = yield* (by === "session"
      ? sql`SELECT id AS usage_key, agent, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens FROM condukt_server_sessions
          WHERE principal = ${principal} AND ${total} > 0 ORDER BY ${total} DESC, id LIMIT ${page}`
      : by === "agent"
      ? sql`SELECT agent AS usage_key, agent, ${tokens} FROM condukt_server_sessions WHERE principal = ${principal}
          GROUP BY agent ORDER BY SUM(${total}) DESC, agent LIMIT ${page}`
      : sql`SELECT day AS usage_key, agent, ${tokens} FROM condukt_server_usage WHERE principal = ${principal} AND day >= ${since}
          GROUP BY day, agent ORDER BY day, agent`).pipe(Effect.mapError(storeError("usage")))
    return yield* Effect.forEach(rows, (row) => Rows.usage(row))
  })

  const append: Service["append"] = Effect.fn("SqlServerStore.append")(function*(id, events, now) {
    const bodies = yield* Effect.try({
      try: () => events.map(EventJson.encode),
      catch: (cause) => new ServerStoreError({ method: "append", description: `an event cannot be written: ${cause instanceof Error ? cause.message : String(cause)}` })
    })
    const added = usageOf(events, NO_USAGE)
    // A batch with no top-level start or end leaves the flag as it is (NULL: the column's own value).
    const decides = events.some((event) => event.agentPath === undefined && (event._tag === "AgentStart" || event._tag === "AgentEnd"))
    const open = decides ? (runningAfter(events, false) ? 1 : 0) : null
    const at = Math.trunc(now)
    const n = events.length
    const last = yield* transaction(Effect.gen(function*() {
      // The session row first: its lock orders this batch after every other on the session.
      const [row] = yield* sql`UPDATE condukt_server_sessions SET last_event_id = last_event_id + ${n}, last_activity = ${at}, open_run = COALESCE(${open}, open_run),
        input_tokens = input_tokens + ${added.inputTokens}, output_tokens = output_tokens + ${added.outputTokens},
        cache_read_tokens = cache_read_tokens + ${added.cacheReadTokens ?? 0}, cache_write_tokens = cache_write_tokens + ${added.cacheWriteTokens ?? 0}
        WHERE id = ${id} RETURNING last_event_id, principal, agent`
      if (row === undefined) return yield* new ServerStoreError({ method: "append", description: `no session ${id} was started here` })
      const last = yield* Rows.lastEventId("append", row)
      if (tokensOf(added) > 0) {
        // The day's sum beside the session's, in the same transaction: both or neither.
        yield* sql`INSERT INTO condukt_server_usage (session_id, day, principal, agent, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
          VALUES (${id}, ${dayOf(now)}, ${String(row.principal)}, ${String(row.agent)}, ${added.inputTokens}, ${added.outputTokens}, ${added.cacheReadTokens ?? 0}, ${added.cacheWriteTokens ?? 0})
          ON CONFLICT (session_id, day) DO UPDATE SET input_tokens = condukt_server_usage.input_tokens + excluded.input_tokens,
          output_tokens = condukt_server_usage.output_tokens + excluded.output_tokens, cache_read_tokens = condukt_server_usage.cache_read_tokens + excluded.cache_read_tokens,
          cache_write_tokens = condukt_server_usage.cache_write_tokens + excluded.cache_write_tokens`
      }
      const first = last - n + 1
      for (let start = 0; start < n; start += INSERT_CHUNK) {
        const chunk: Array<Record<string, unknown>> = bodies.slice(start, start + INSERT_CHUNK).map((event, i) => ({ session_id: id, id: first + start + i, event, at }))
        if (Arr.isArrayNonEmpty(chunk)) yield* sql`INSERT INTO condukt_server_events ${sql.insert(chunk)}`
      }
      // The batch crossed a multiple of `pruneEvery`: what fell out of the window goes.
      if (n > 0 && last > window && Math.floor((first - 1) / pruneEvery) !== Math.floor(last / pruneEvery)) {
        yield* sql`DELETE FROM condukt_server_events WHERE session_id = ${id} AND id <= ${last - window}`
      }
      return last
    })).pipe(Effect.mapError(storeError("append")))
    if (n > 0) {
      remember(id, last)
      waiters.wake(id)
    }
    return Array.from({ length: n }, (_, i) => last - n + 1 + i)
  })

  /** One read: the last number, then the entries after `after` up to it; undefined when a prune between the two took some. */
  const readOnce = (id: string, after: number, limit: number) =>
    Effect.gen(function*() {
      const [row] = yield* sql`SELECT last_event_id FROM condukt_server_sessions WHERE id = ${id}`
      const last = row === undefined ? 0 : yield* Rows.lastEventId("read", row)
      if (last === 0) return { entries: [], oldest: 0, last: 0 }
      const oldest = Math.max(1, last - window + 1)
      const from = Math.max(after, oldest - 1)
      const wanted = Math.max(0, Math.min(limit, last - from))
      if (wanted === 0) return { entries: [], oldest, last }
      // Every number up to `last` was committed with it: the rows are there, unless another
      // process's append moved the window past them meanwhile.
      const rows = yield* sql`SELECT id, event, at FROM condukt_server_events WHERE session_id = ${id} AND id > ${from} AND id <= ${last} ORDER BY id LIMIT ${wanted}`
      if (rows.length !== wanted) return undefined
      const entries: ReadonlyArray<Entry> = yield* Effect.forEach(rows, Rows.entry)
      return { entries, oldest, last }
    })

  const read: Service["read"] = Effect.fn("SqlServerStore.read")(function*(id, after, limit) {
    // A prune between the two statements moved the window: read again, past it. Rows missing for
    // any other reason (the table edited by hand) are not looked for for ever.
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      const found = yield* readOnce(id, after, Math.max(0, Math.trunc(limit))).pipe(Effect.mapError(storeError("read")))
      if (found !== undefined) return found
    }
    return yield* new ServerStoreError({ method: "read", description: `events of session ${id} after ${after} are missing from condukt_server_events` })
  })

  /**
   * The session's last number as the database has it, asked once for every reader of the session in
   * this process that asks within half a `poll`: a thousand streams idle on one session cost one
   * query a poll, not a thousand. A failure answers `Infinity`: its readers read, and meet it there.
   */
  const probes = new Map<string, { readonly at: number; readonly last: Deferred.Deferred<number> }>()
  const probe = (id: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const recent = probes.get(id)
      if (recent !== undefined && now - recent.at < pollMillis / 2) return Deferred.await(recent.last)
      const last = Deferred.makeUnsafe<number>()
      probes.delete(id)
      probes.set(id, { at: now, last })
      if (probes.size > REMEMBERED) probes.delete(probes.keys().next().value!)
      // Uninterruptible: the readers sharing the answer wait for it even when the one asking leaves.
      const asked = sql`SELECT last_event_id FROM condukt_server_sessions WHERE id = ${id}`.pipe(
        Effect.flatMap(([row]) => (row === undefined ? Effect.succeed(0) : Rows.lastEventId("wait", row))),
        Effect.orElseSucceed(() => Infinity),
        Effect.tap((n) => Deferred.succeed(last, n))
      )
      return Effect.uninterruptible(asked)
    })
  /** Every `poll`, until another process wrote past `after`. */
  const polled = (id: string, after: number): Effect.Effect<void> =>
    Effect.flatMap(Effect.andThen(Effect.sleep(poll), probe(id)), (last) => (last > after ? Effect.void : polled(id, after)))

  const wait: Service["wait"] = (id, after) =>
    Effect.suspend(() => {
      if ((written.get(id) ?? 0) > after) return Effect.void
      return Effect.race(Deferred.await(waiters.next(id)), polled(id, after))
    })

  // One statement takes the lease, or leaves another holder's good one: two servers never both hold it.
  const lease: Service["lease"] = Effect.fn("SqlServerStore.lease")(function*(id, holder, now, until) {
    return yield* transaction(Effect.gen(function*() {
      const [before] = yield* sql`SELECT holder, expires_at FROM condukt_server_runs WHERE session_id = ${id}`
      const taken = yield* sql`INSERT INTO condukt_server_runs (session_id, holder, expires_at) VALUES (${id}, ${holder}, ${Math.trunc(until)})
        ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
        WHERE condukt_server_runs.holder = excluded.holder OR condukt_server_runs.expires_at < ${Math.trunc(now)}
        RETURNING holder`
      const previous = before === undefined ? undefined : String(before.holder)
      if (taken.length === 0) return { taken: false as const, holder: previous ?? "" }
      return previous !== undefined && previous !== holder ? { taken: true as const, lapsed: previous } : { taken: true as const }
    })).pipe(Effect.mapError(storeError("lease")))
  })

  const release: Service["release"] = Effect.fn("SqlServerStore.release")(function*(id, holder) {
    yield* sql`DELETE FROM condukt_server_runs WHERE session_id = ${id} AND holder = ${holder}`.pipe(Effect.retry(busyPolicy), Effect.mapError(storeError("release")))
  })

  return ServerStore.of({ claim, owned, list, usage, append, read, wait, lease, release })
})

/**
 * The server's store on the SqlClient's database (Postgres or SQLite).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<ServerStore, SqlError.SqlError, SqlClient.SqlClient> =>
  Layer.effect(ServerStore, make(options))

/**
 * durableLease — one live process per durable run (ADR 0081). Two processes given the same run id
 * would both replay the run and both run its unfinished steps, side by side: the journal records
 * a step when it ends, so neither sees the other's step running. Before its first step a process
 * takes the run's lease, a row of `condukt_workflow_leases` naming it (pid, host, a random token,
 * when it took the run and last renewed it); it renews the row every quarter of the lease's
 * duration while the run is live and deletes it when the run ends. A process that died without a
 * word (`kill -9`, a power cut) leaves the row, which lapses once unrenewed for the duration: the
 * run can then be resumed.
 *
 * The lease is taken by one statement, an insert that, on the id's row, overwrites only a lapsed
 * one (`INSERT … ON CONFLICT DO UPDATE … WHERE`, as SQLite and Postgres both have it), and read
 * back: the token says who won, however many processes tried at once. Times are the database's
 * clock (Postgres's `clock_timestamp()`, SQLite's `julianday('now')`), so hosts whose clocks
 * disagree still agree on a lease. A process that finds, at a renewal, its token replaced (its
 * renewals failed for the whole duration: a database out of reach, a process frozen) stops the
 * run: another process runs it now.
 */
import { Duration, Effect, Result, type Scope } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { DurableFailed, LeaseHolder } from "../WorkflowError.ts"
import { BUSY } from "./sqlBusy.ts"

const LEASES_TABLE = "CREATE TABLE IF NOT EXISTS condukt_workflow_leases (" +
  "run_id TEXT PRIMARY KEY NOT NULL, token TEXT NOT NULL, pid BIGINT NOT NULL, host TEXT NOT NULL, " +
  "started_at BIGINT NOT NULL, renewed_at BIGINT NOT NULL, expires_at BIGINT NOT NULL)"

/**
 * How long a lease lasts unrenewed by default: how long a run whose process died without a word
 * stays refused. Renewed every quarter of it, a live run keeps its lease through a renewal or
 * two late on a loaded machine.
 */
export const DEFAULT_DURATION = Duration.seconds(60)

/** Who takes a lease, as a refused process is told. */
export interface Holder {
  readonly pid: number
  readonly host: string
}

/** What a lease is taken with: the run, how it is named in errors, the holder and the duration. */
export interface Options {
  readonly runId: string
  readonly location: string
  readonly holder: Holder
  readonly token: string
  readonly duration: Duration.Duration
}

interface LeaseRow {
  readonly token: string
  readonly pid: number | string | bigint
  readonly host: string
  readonly started_at: number | string | bigint
  readonly expires_at: number | string | bigint
  readonly now: number | string | bigint
}

/** The database's clock in milliseconds since the epoch, as SQL (SQLite and Postgres). */
const clock = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    pg: () => sql.literal("CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"),
    orElse: () => sql.literal("CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)")
  })

/** A process id, host and times read back from a lease row (Postgres gives BIGINTs as text). */
const holderOf = (row: LeaseRow) =>
  new LeaseHolder({
    pid: Number(row.pid),
    host: row.host,
    startedAt: Number(row.started_at),
    expiresInMillis: Math.max(0, Number(row.expires_at) - Number(row.now))
  })

/** "pid 1234 on build-7, since 2025-05-01T10:00:00.000Z" (the parts an embedder left empty omitted). */
const describe = (holder: LeaseHolder) => {
  const who = [holder.pid > 0 ? `pid ${holder.pid}` : "", holder.host === "" ? "" : `on ${holder.host}`].filter((part) => part !== "")
  return `${who.length === 0 ? "" : `${who.join(" ")}, `}since ${new Date(holder.startedAt).toISOString()}`
}

/**
 * Takes the lease on `options.runId` for the scope: refused with `RunBusy` while another live
 * process holds it. Returns the effect that keeps it: renewing it until the scope closes (when
 * the row is deleted), failing with `LeaseLost` if another process took it over meanwhile.
 */
export const acquire = (
  options: Options
): Effect.Effect<Effect.Effect<never, DurableFailed>, DurableFailed, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { runId, location, token } = options
    const unavailable = (error: SqlError.SqlError) =>
      new DurableFailed({
        reason: "StoreUnavailable",
        runId,
        location,
        description: `the database ${location} cannot hold the lease of run ${runId}: ${error.message}`,
        cause: error
      })
    const statement = <A>(effect: Effect.Effect<A, SqlError.SqlError>) => Effect.retry(effect, BUSY)
    // Renewed every quarter of it, a lease shorter than a second would keep the database busy.
    const duration = Duration.max(options.duration, Duration.seconds(1))
    const millis = Duration.toMillis(duration)
    const now = clock(sql)
    // Postgres may refuse one of two `CREATE TABLE IF NOT EXISTS` run at once (the type's name
    // taken by the other): tried again, the table is there.
    yield* Effect.mapError(Effect.retry(statement(sql.unsafe(LEASES_TABLE)), { times: 2 }), unavailable)
    const take = sql`INSERT INTO condukt_workflow_leases (run_id, token, pid, host, started_at, renewed_at, expires_at)
      VALUES (${runId}, ${token}, ${options.holder.pid}, ${options.holder.host}, ${now}, ${now}, ${now} + ${millis})
      ON CONFLICT (run_id) DO UPDATE SET token = excluded.token, pid = excluded.pid, host = excluded.host,
        started_at = excluded.started_at, renewed_at = excluded.renewed_at, expires_at = excluded.expires_at
      WHERE condukt_workflow_leases.expires_at <= excluded.started_at`
    const read = sql<LeaseRow>`SELECT token, pid, host, started_at, expires_at, ${now} AS now
      FROM condukt_workflow_leases WHERE run_id = ${runId}`
    // The row read back is the winner's; none means its holder ended between the two statements,
    // so the lease is free again: tried anew.
    const attempt = Effect.mapError(statement(Effect.andThen(take, read)), unavailable)
    let won = (yield* attempt)[0]
    for (let tries = 1; won === undefined && tries < 10; tries++) won = (yield* attempt)[0]
    if (won === undefined) {
      return yield* new DurableFailed({
        reason: "StoreUnavailable",
        runId,
        location,
        description: `the lease of run ${runId} in ${location} was released each of 10 times it was taken: other processes keep running it`
      })
    }
    if (won.token !== token) {
      const holder = holderOf(won)
      const seconds = Math.ceil(holder.expiresInMillis / 1000)
      return yield* new DurableFailed({
        reason: "RunBusy",
        runId,
        location,
        holder,
        description: `run ${runId} in ${location} is being run by another process (${describe(holder)}): ` +
          `wait for it to end, then resume it; if that process is gone (killed, its machine down), ` +
          `the run can be resumed once its lease lapses, in ${seconds} s`
      })
    }
    yield* Effect.addFinalizer(() =>
      Effect.ignore(statement(sql`DELETE FROM condukt_workflow_leases WHERE run_id = ${runId} AND token = ${token}`))
    )
    const renew = sql<{ readonly token: string }>`UPDATE condukt_workflow_leases
      SET renewed_at = ${now}, expires_at = ${now} + ${millis}
      WHERE run_id = ${runId} AND token = ${token} RETURNING token`
    const lost = Effect.gen(function*() {
      const rows = yield* Effect.orElseSucceed(statement(read), () => [])
      const holder = rows[0] === undefined ? undefined : holderOf(rows[0])
      return yield* new DurableFailed({
        reason: "LeaseLost",
        runId,
        location,
        holder,
        description: `run ${runId} in ${location} stopped: its lease lapsed (renewals failed for ${
          Duration.format(duration)
        })` + (holder === undefined ? "" : ` and another process runs it (${describe(holder)})`) +
          `; resume it once that process has ended`
      })
    })
    // A renewal that fails (a database out of reach) is tried again at the next one: the lease
    // is lost only when another process has taken it.
    const keep = Effect.sleep(Duration.divideUnsafe(duration, 4)).pipe(
      Effect.andThen(Effect.result(statement(renew))),
      Effect.flatMap((renewed) => (Result.isSuccess(renewed) && renewed.success.length === 0 ? lost : Effect.void)),
      Effect.forever
    )
    return keep
  })

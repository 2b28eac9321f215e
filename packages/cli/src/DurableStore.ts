/**
 * DurableStore — the database `condukt run --durable <db>` keeps a run in, as an `effect/sql`
 * client: a `postgres://` or `postgresql://` URL is Postgres (`@effect/sql-pg`, loaded only then,
 * so a run on SQLite pays nothing for it), anything else a SQLite file (`SqliteClient` of
 * `@condukt/node`, created when missing). A database that cannot be opened fails with
 * `DurableFailed` (`StoreUnavailable`) naming it, a URL without its password.
 */
import { SqliteClient } from "@condukt/node"
import { WorkflowError } from "@condukt/workflows"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as DatabaseUrl from "./internal/databaseUrl.ts"

/**
 * How errors name `db`: a URL without its password.
 *
 * @since 0.1.0
 * @category constructors
 */
export const location = (db: string): string => DatabaseUrl.location(db)

/**
 * A client on `db`, closed with the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (db: string, runId: string): Layer.Layer<SqlClient.SqlClient, WorkflowError.DurableFailed> => {
  const unavailable = (cause: { readonly message: string }) =>
    new WorkflowError.DurableFailed({
      reason: "StoreUnavailable",
      runId,
      location: location(db),
      description: `cannot open the database ${location(db)}: ${cause.message}`,
      cause
    })
  const opened = <E extends { readonly message: string }>(client: Layer.Layer<SqlClient.SqlClient, E>) =>
    Layer.catch(client, (error) => Layer.effect(SqlClient.SqlClient, Effect.fail(unavailable(error))))
  if (!DatabaseUrl.isPostgres(db)) return opened(SqliteClient.layer({ file: db }))
  return Layer.unwrap(Effect.map(
    Effect.tryPromise({ try: () => import("@effect/sql-pg/PgClient"), catch: (cause) => unavailable(cause instanceof Error ? cause : { message: String(cause) }) }),
    (PgClient) => opened(PgClient.layer({ url: Redacted.make(db) }))
  ))
}

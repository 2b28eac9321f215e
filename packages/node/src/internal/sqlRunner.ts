/**
 * sqlRunner — how the SQL store's statements run, shared by its sessions' tables (sqlStore.ts)
 * and its approval log (sqlApprovals.ts): a statement, the rows it returns, a transaction as the
 * statements it yields, and the runner of one database (node:sqlite, or effect/sql on SQLite and
 * Postgres).
 */
import type { Effect } from "effect"

/** A statement: its text, `?` for each parameter, and the parameters. */
export interface Statement {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

/** The rows a statement returned (none for one that returns none). */
export type Rows = ReadonlyArray<Readonly<Record<string, unknown>>>

/** A transaction: the statements it runs, each given the rows of the one before; what it returns. */
export type Transaction<A> = Generator<Statement, A, Rows>

/** How the store's statements run on one database. */
export interface Runner {
  readonly dialect: "pg" | "sqlite"
  /**
   * Runs `body` in one transaction (`read`: it only reads; on SQLite it is deferred), retried
   * while another writer holds the database; fails with what the database threw.
   */
  readonly transaction: <A>(mode: "read" | "write", body: () => Transaction<A>) => Effect.Effect<A, unknown>
}

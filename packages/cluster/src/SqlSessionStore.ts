/**
 * SqlSessionStore — the session store on `effect/sql`'s SqlClient (Postgres through
 * `@effect/sql-pg`, SQLite through `@condukt/node`'s `SqliteClient`), the store of the cluster: a
 * session entity keeps its state in the same database as the cluster's mailboxes, so whichever
 * runner holds the session loads it from there (docs/decisions/0058).
 *
 * It is `@condukt/node`'s SQL session store, the one the embedded `SqliteSessionStore` is too
 * (docs/decisions/0082): one implementation of the tables (`condukt_sessions`, `condukt_messages`)
 * and the revision check, re-exported here under the name the cluster has always given it.
 */
export * from "@condukt/node/sessionStore/Sql"

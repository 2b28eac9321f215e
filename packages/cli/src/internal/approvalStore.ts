/**
 * approvalStore — the store `condukt approvals --store <where>` reads and answers in, and its
 * approval log: a `postgres://` URL is the SQL store on Postgres (`@effect/sql-pg`, loaded only
 * then), a directory the disk store, any other path a SQLite file (the SQLite store, the default
 * durable one). Only what exists is opened: a path naming nothing is refused, never created, so a
 * mistyped path leaves no empty database behind. A store that cannot be opened, or keeps no
 * approval log, is one sentence on stderr and exit 2.
 */
import type * as ApprovalLog from "@condukt/core/ApprovalLog"
import { SessionStore, type SessionStoreError } from "@condukt/core/SessionStore"
import * as DiskSessionStore from "@condukt/node/sessionStore/Disk"
import * as SqliteSessionStore from "@condukt/node/sessionStore/Sqlite"
import * as SqlSessionStore from "@condukt/node/sessionStore/Sql"
import { Context, Effect, FileSystem, Layer, Redacted } from "effect"
import * as DatabaseUrl from "./databaseUrl.ts"
import { fail, plain } from "./print.ts"

/** What a store that could not be built says: its own message, or a promise's error's. */
const reason = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string" ? error.message : String(error)

/** The store at `where` as a layer: Postgres by URL, else by what the path is. */
const storeAt = Effect.fnUntraced(function*(where: string) {
  const named = DatabaseUrl.location(where)
  if (DatabaseUrl.isPostgres(where)) {
    const PgClient = yield* Effect.tryPromise({
      try: () => import("@effect/sql-pg/PgClient"),
      catch: (cause) => cause
    }).pipe(Effect.catch((cause) => fail(plain, 2, `cannot open the store ${named}: ${reason(cause)}`)))
    return SqlSessionStore.layer({ location: named }).pipe(Layer.provide(PgClient.layer({ url: Redacted.make(where) })))
  }
  const fs = yield* FileSystem.FileSystem
  const info = yield* fs.stat(where).pipe(
    Effect.catch((error) =>
      fail(
        plain,
        2,
        error.reason._tag === "NotFound"
          ? `no store at ${named}: give a SQLite file, the directory of a disk store, or a postgres:// URL`
          : `cannot open the store ${named}: ${reason(error.reason.cause ?? error)}`
      )
    )
  )
  if (info.type === "Directory") return DiskSessionStore.layer({ dir: where })
  if (info.type !== "File") return yield* fail(plain, 2, `cannot open the store ${named}: it is not a file or a directory`)
  return SqliteSessionStore.layer({ file: where })
})

/**
 * The approval log of the store at `where`, open for the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = Effect.fnUntraced(function*(where: string) {
  const named = DatabaseUrl.location(where)
  const layer = yield* storeAt(where)
  const context = yield* Layer.build(layer).pipe(
    Effect.catch((error) => fail(plain, 2, `cannot open the store ${named}: ${reason(error)}`))
  )
  const log: ApprovalLog.Service<SessionStoreError> | undefined = Context.get(context, SessionStore).approvals
  if (log === undefined) return yield* fail(plain, 2, `the store ${named} keeps no approval log`)
  return log
})

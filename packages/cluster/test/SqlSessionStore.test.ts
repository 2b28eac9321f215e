/**
 * SqlSessionStore on SQLite, through @condukt/node's SqliteClient: the SessionStore conformance
 * suite, writers that meet on one session, rows that are not the store's, and a database the
 * SQLite session store wrote (the same layout) read back.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as SqliteClient from "@condukt/node/SqliteClient"
import { SqliteSessionStore } from "@condukt/node"
import type * as SessionStore from "@condukt/core/SessionStore"
import * as SqlSessionStore from "../src/SqlSessionStore.ts"
import { TempDir } from "@condukt/testing"
import { approvalConformance, conformance, revisionConflicts, snapshot, storeError } from "@condukt/testing/SessionStoreConformance"

const tempDir = TempDir.make("condukt-store-")

/** A store on a new database file; `f` runs with its SqlClient. */
const withStore = <A, E>(
  f: (store: SessionStore.Service, file: string) => Effect.Effect<A, E, SqlClient.SqlClient | Scope.Scope>,
  options: { readonly approvalRetention?: number } = {}
) =>
  Effect.scoped(Effect.gen(function*() {
    const file = path.join(yield* tempDir, "sessions.db")
    return yield* Effect.flatMap(SqlSessionStore.make({ location: file, ...options }), (store) => f(store, file)).pipe(
      Effect.provide(SqliteClient.layer({ file }))
    )
  }))

const failure = <A>(effect: Effect.Effect<A, SessionStore.SessionStoreError>) => Effect.map(storeError(effect), (error) => error?.message)

describe("SqlSessionStore on SQLite", () => {
  conformance((f) => Effect.orDie(withStore((store) => f(store))))
  approvalConformance((f, options) => Effect.orDie(withStore((store) => f(store), options)))

  it.live("a save another writer got to first fails with Conflict naming the row, and overwrites nothing", () =>
    withStore((store, file) =>
      // The other writer on a client of its own, as another process would hold the file.
      revisionConflicts(store, Effect.flatMap(Layer.build(SqliteClient.layer({ file })), (client) => SqlSessionStore.make({ location: file }).pipe(Effect.provide(client))), file)))

  it.live("a missing message row fails the load naming the first one missing", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* store.save(snapshot("s1", 1))
        yield* sql`DELETE FROM condukt_messages WHERE idx = 1`
        assert.strictEqual(
          yield* failure(store.load("s1")),
          `SessionStore.load: session s1 at ${file}#condukt_messages/s1/1: not a session snapshot (message 1 is missing)`
        )
      })
    ))

  it.live("a caller's statement (`alongside`) is committed with a save, and not at all with a save refused", () =>
    withStore((_, file) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE beside (session TEXT NOT NULL, n INTEGER NOT NULL)`
        let n = 0
        const store = yield* SqlSessionStore.make({
          location: file,
          alongside: (saved) => (saved.id === "quiet" ? undefined : { sql: "INSERT INTO beside (session, n) VALUES (?, ?)", params: [saved.id, ++n] })
        })
        yield* store.save(snapshot("s1", 1))
        yield* store.save(snapshot("s1", 2), { appended: 4 })
        yield* store.save(snapshot("quiet", 1))
        // Another writer moves s1's row: this store's next save of it is refused, and its statement with it.
        const other = yield* SqlSessionStore.make({ location: file })
        yield* other.load("s1")
        yield* other.save(snapshot("s1", 3), { appended: 4 })
        assert.strictEqual((yield* storeError(store.save(snapshot("s1", 3), { appended: 4 })))?.reason._tag, "Conflict")
        // A statement that fails fails the save, and the session's rows stay as they were.
        const failing = yield* SqlSessionStore.make({ location: file, alongside: () => ({ sql: "INSERT INTO nowhere VALUES (?)", params: [1] }) })
        yield* failing.load("s2")
        assert.strictEqual((yield* storeError(failing.save(snapshot("s2", 1))))?.reason._tag, "Unavailable")
        assert.deepStrictEqual(yield* failing.load("s2"), Option.none())
        const rows = yield* sql<{ session: string; n: number }>`SELECT session, n FROM beside ORDER BY n`
        assert.deepStrictEqual(rows.map((row) => [row.session, Number(row.n)]), [["s1", 1], ["s1", 2]])
      })
    ))

  it.live("a database the SQLite session store wrote loads, and takes the turns saved after", () =>
    withStore((_, file) =>
      Effect.gen(function*() {
        const embedded = yield* SqliteSessionStore.make({ file })
        yield* embedded.save(snapshot("s1", 2))
        const store = yield* SqlSessionStore.make({ location: file })
        assert.deepStrictEqual(yield* store.load("s1"), Option.some(snapshot("s1", 2)))
        yield* store.save(snapshot("s1", 3), { appended: 4 })
        assert.deepStrictEqual(yield* embedded.load("s1"), Option.some(snapshot("s1", 3)))
      })
    ))
})

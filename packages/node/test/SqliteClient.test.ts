/**
 * SqliteClient: effect/sql statements and transactions over `node:sqlite`, and a database another
 * client holds failing at once with a retryable LockTimeoutError instead of blocking the loop.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as SqliteClient from "../src/SqliteClient.ts"
import { tempDir } from "./sessionStore/conformance.ts"

describe("SqliteClient", () => {
  it.live("statements bind parameters and return rows and values; a failed transaction leaves nothing", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "db.sqlite")
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, flag INTEGER)`
        yield* sql`INSERT INTO t ${sql.insert([{ id: 1, name: "a", flag: true }, { id: 2, name: "b", flag: false }])}`
        const failed = yield* Effect.exit(sql.withTransaction(Effect.andThen(sql`INSERT INTO t (id, name) VALUES (3, 'c')`, sql`INSERT INTO t (id) VALUES (1)`)))
        assert.isTrue(Exit.isFailure(failed))
        assert.deepStrictEqual(yield* sql`SELECT id, name, flag FROM t ORDER BY id`, [{ id: 1, name: "a", flag: 1 }, { id: 2, name: "b", flag: 0 }])
        assert.deepStrictEqual(yield* sql`SELECT id, name FROM t WHERE id = ${2}`.values, [[2, "b"]])
      }).pipe(Effect.provide(SqliteClient.layer({ file })))
    })))

  it.live("a database another client holds in a transaction fails at once with a retryable LockTimeoutError", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "db.sqlite")
      // Held open for the whole test, as another process would hold it.
      const other = Context.get(yield* Layer.build(SqliteClient.layer({ file })), SqlClient.SqlClient)
      yield* other`CREATE TABLE t (id INTEGER PRIMARY KEY)`
      const error = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* other.withTransaction(Effect.andThen(other`INSERT INTO t (id) VALUES (1)`, Effect.flip(sql`INSERT INTO t (id) VALUES (2)`)))
      }).pipe(Effect.provide(SqliteClient.layer({ file })))
      assert.deepStrictEqual([error.reason._tag, error.isRetryable, error.message], ["LockTimeoutError", true, "database is locked"])
      assert.deepStrictEqual(yield* other`SELECT id FROM t`, [{ id: 1 }])
    })))
})

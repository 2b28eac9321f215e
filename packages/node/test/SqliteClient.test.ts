/**
 * SqliteClient: effect/sql statements and transactions over `node:sqlite`, and a database another
 * client holds: a statement outside a transaction waits on the Effect clock (never blocking the
 * loop), one inside a transaction fails at once with a retryable LockTimeoutError.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as SqliteClient from "../src/SqliteClient.ts"
import { TempDir } from "@condukt/testing"

const tempDir = TempDir.make("condukt-store-")

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

  it.live("a statement outside a transaction that finds the database locked waits, retried on the Effect clock, and runs once the other's transaction ends", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "db.sqlite")
      // Held open for the whole test, as another process would hold it.
      const other = Context.get(yield* Layer.build(SqliteClient.layer({ file })), SqlClient.SqlClient)
      yield* other`CREATE TABLE t (id INTEGER PRIMARY KEY)`
      const sql = Context.get(yield* Layer.build(SqliteClient.layer({ file })), SqlClient.SqlClient)
      const waiting = yield* other.withTransaction(Effect.gen(function*() {
        yield* other`INSERT INTO t (id) VALUES (1)`
        // Started at once: its first try meets the lock before the transaction commits.
        return yield* Effect.forkChild(sql`INSERT INTO t (id) VALUES (2)`, { startImmediately: true })
      }))
      yield* Fiber.join(waiting)
      assert.deepStrictEqual(yield* other`SELECT id FROM t ORDER BY id`, [{ id: 1 }, { id: 2 }])
    })))

  it.live("a statement inside a transaction that finds the database locked fails at once with a retryable LockTimeoutError", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "db.sqlite")
      const other = Context.get(yield* Layer.build(SqliteClient.layer({ file })), SqlClient.SqlClient)
      yield* other`CREATE TABLE t (id INTEGER PRIMARY KEY)`
      const sql = Context.get(yield* Layer.build(SqliteClient.layer({ file })), SqlClient.SqlClient)
      // A deferred transaction takes no lock when it begins: its first write meets the other's.
      const error = yield* other.withTransaction(Effect.andThen(
        other`INSERT INTO t (id) VALUES (1)`,
        Effect.flip(Effect.andThen(sql.unsafe("BEGIN DEFERRED"), sql`INSERT INTO t (id) VALUES (2)`)).pipe(Effect.ensuring(Effect.ignore(sql.unsafe("ROLLBACK"))))
      ))
      assert.deepStrictEqual([error.reason._tag, error.isRetryable, error.message], ["LockTimeoutError", true, "database is locked"])
      assert.deepStrictEqual(yield* other`SELECT id FROM t`, [{ id: 1 }])
    })))

  it.live("commits are synced (FULL) by default, written but not synced with synchronous: normal", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const level = (options: Omit<SqliteClient.Options, "file">) =>
        Effect.flatMap(Layer.build(SqliteClient.layer({ file: path.join(dir, "db.sqlite"), ...options })), (context) =>
          Context.get(context, SqlClient.SqlClient)`PRAGMA synchronous`)
      // SQLite's levels: 1 NORMAL, 2 FULL; the journal is WAL in both.
      assert.deepStrictEqual(yield* level({}), [{ synchronous: 2 }])
      assert.deepStrictEqual(yield* level({ synchronous: "normal" }), [{ synchronous: 1 }])
      assert.deepStrictEqual(yield* level({ synchronous: "full" }), [{ synchronous: 2 }])
    })))
})

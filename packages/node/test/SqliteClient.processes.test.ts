/**
 * SqliteClient with `synchronous: "normal"` (commits written to the WAL, not synced): every commit
 * a process was told of survives its `kill -9`, and a transaction it had not committed leaves
 * nothing. The writer is a real process (test/fixtures/sqliteCommitter.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as SqliteClient from "../src/SqliteClient.ts"
import { TempDir } from "@condukt/testing"
import { storeWriter } from "./sessionStore/processes.ts"

const tempDir = TempDir.make("condukt-store-")

const fixture = path.resolve(import.meta.dirname, "fixtures/sqliteCommitter.ts")

describe("SqliteClient, synchronous: normal, in a process killed with kill -9", () => {
  it.live("keeps every commit the process reported, and nothing of the transaction it held open", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "db.sqlite")
      const writer = yield* storeWriter([file], fixture)
      assert.strictEqual(yield* writer.next, "ready")
      for (let n = 1; n <= 20; n++) {
        yield* writer.send(`commit ${n}`)
        assert.strictEqual(yield* writer.next, `committed ${n}`)
      }
      yield* writer.send("hold 21")
      assert.strictEqual(yield* writer.next, "holding 21")
      yield* writer.kill
      assert.match(yield* writer.next, /^exited null/)
      const sql = Context.get(yield* Layer.build(SqliteClient.layer({ file })), SqlClient.SqlClient)
      assert.deepStrictEqual(yield* sql`SELECT COUNT(*) AS rows, MAX(n) AS last FROM t`, [{ rows: 20, last: 20 }])
    })))
})

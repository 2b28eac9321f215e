import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Message from "@condukt/core/Message"
import * as nodeSqlite from "../../src/internal/nodeSqlite.ts"
import * as SqliteSessionStore from "../../src/sessionStore/Sqlite.ts"
import type * as SessionStore from "@condukt/core/SessionStore"
import { TempDir } from "@condukt/testing"
import { approvalConformance, conformance, readOnly, revisionConflicts, snapshot, storeError, turn } from "@condukt/testing/SessionStoreConformance"
import { storeWriter, twoWriters, winnerOf, writerNames, writerTurn } from "./processes.ts"

const tempDir = TempDir.make("condukt-store-")

const withStore = <A, E>(
  f: (store: SessionStore.Service, file: string) => Effect.Effect<A, E, Scope.Scope>,
  options: { readonly approvalRetention?: number } = {}
) =>
  Effect.scoped(Effect.gen(function*() {
    const file = path.join(yield* tempDir, "sessions.db")
    return yield* f(yield* SqliteSessionStore.make({ file, ...options }), file)
  }))

/** The database file opened as the store opens it: no `node:sqlite` ExperimentalWarning in the test's output. */
const database = (file: string) => Effect.orDie(nodeSqlite.open(file, (cause) => cause))

/** Runs `sql` on the database file behind the store's back, as another program (or a bug) would. */
const tamper = (file: string, sql: string) =>
  Effect.map(database(file), (db) => {
    db.exec(sql)
    db.close()
  })

const failure = <A>(effect: Effect.Effect<A, SessionStore.SessionStoreError>) => Effect.map(storeError(effect), (error) => error?.message)

describe("SqliteSessionStore", () => {
  conformance((f) => withStore((store) => f(store)))
  approvalConformance((f, options) => withStore((store) => f(store), options))

  it.live("a turn adds its message rows; the earlier rows are not rewritten", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        yield* tamper(file, "UPDATE condukt_messages SET body = json_set(body, '$.content', 'kept') WHERE idx = 0")
        yield* store.save(snapshot("s1", 2), { appended: 4 })
        const loaded = yield* store.load("s1")
        assert.deepStrictEqual(
          Option.map(loaded, (s) => s.messages),
          Option.some<ReadonlyArray<Message.Message>>([Message.user("kept"), ...turn(1).slice(1), ...turn(2)])
        )
      })
    ))

  it.live("a message row that is not JSON fails the load naming the row, and is left as it was", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        yield* tamper(file, "UPDATE condukt_messages SET body = '{\"_tag\":' WHERE idx = 2")
        assert.strictEqual(
          yield* failure(store.load("s1")),
          `SessionStore.load: session s1 at ${file}#condukt_messages/s1/2: not a session snapshot (Unexpected end of JSON input)`
        )
        const db = yield* database(file)
        assert.deepStrictEqual({ ...db.prepare("SELECT body FROM condukt_messages WHERE idx = 2").get() }, { body: "{\"_tag\":" })
        db.close()
      })
    ))

  it.live("a missing message row fails the load naming the first one missing", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        yield* tamper(file, "DELETE FROM condukt_messages WHERE idx = 1")
        assert.strictEqual(
          yield* failure(store.load("s1")),
          `SessionStore.load: session s1 at ${file}#condukt_messages/s1/1: not a session snapshot (message 1 is missing)`
        )
      })
    ))

  it.live("a snapshot of a newer version fails the load naming the row", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        yield* tamper(file, "UPDATE condukt_sessions SET body = json_set(body, '$.version', 3)")
        assert.strictEqual(
          yield* failure(store.load("s1")),
          `SessionStore.load: session s1 at ${file}#condukt_sessions/s1: snapshot version 3 is newer than this Condukt reads (2); upgrade to resume it`
        )
      })
    ))

  it.live("a save another writer got to first fails with Conflict naming the row, and overwrites nothing", () =>
    withStore((store, file) => revisionConflicts(store, SqliteSessionStore.make({ file }), file)))

  it.live("two processes saving one session at once: one saves, the other fails with Conflict; the store holds the winner's turn", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        const seed = snapshot("shared", 1)
        yield* store.save(seed)
        const outcomes = yield* twoWriters("sqlite", file, "shared")
        const winner = winnerOf(outcomes)
        assert.deepStrictEqual(outcomes[1 - winner], {
          reason: "Conflict",
          message:
            `SessionStore.save: session shared at ${file}#condukt_sessions/shared: another writer saved this session since it was last loaded or saved here (its row is at revision 2, 1 when last loaded or saved here); nothing was overwritten, start the session again to resume from what it saved`
        })
        assert.deepStrictEqual(
          yield* (yield* SqliteSessionStore.make({ file })).load("shared"),
          Option.some({ ...seed, messages: [...seed.messages, ...writerTurn(writerNames[winner])], updatedAt: seed.updatedAt + 1 })
        )
      })
    ), 20_000)

  it.live("eight processes opening one new database at once, three rounds: every open and save succeeds", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const names = Array.from({ length: 8 }, (_, i) => `p${i}`)
      const openers = yield* Effect.forEach(names, (name) => storeWriter(["opener", name]))
      for (const opener of openers) assert.strictEqual(yield* opener.next, "ready")
      for (const round of [1, 2, 3]) {
        const file = path.join(dir, `round${round}.db`)
        yield* Effect.forEach(openers, (opener) => opener.send(file), { discard: true })
        assert.deepStrictEqual(yield* Effect.forEach(openers, (opener) => opener.next), names.map(() => "ok"))
        const db = yield* database(file)
        assert.deepStrictEqual(db.prepare("SELECT id FROM condukt_sessions ORDER BY id").all().map((row) => row["id"]), names)
        db.close()
      }
      yield* Effect.forEach(openers, (opener) => opener.end, { discard: true })
    })), 30_000)

  it.live("assigns JSON cannot hold fail the save naming the row, and nothing is written", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        assert.strictEqual(
          yield* failure(store.save(snapshot("s1", 1, { assigns: { big: 1n } }))),
          `SessionStore.save: session s1 at ${file}#condukt_sessions/s1: not a session snapshot (it cannot be written as JSON: Do not know how to serialize a BigInt)`
        )
        assert.isTrue(Option.isNone(yield* store.load("s1")))
      })
    ))

  it.live("a database made before sessions had a revision gets the column, and its sessions load and save", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        yield* tamper(file, "ALTER TABLE condukt_sessions DROP COLUMN revision")
        const reopened = yield* SqliteSessionStore.make({ file })
        assert.deepStrictEqual(yield* reopened.load("s1"), Option.some(snapshot("s1", 1)))
        yield* reopened.save(snapshot("s1", 2), { appended: 4 })
        const db = yield* database(file)
        assert.deepStrictEqual({ ...db.prepare("SELECT revision FROM condukt_sessions WHERE id = 's1'").get() }, { revision: 1 })
        db.close()
      })
    ))

  it.live("a database in a read-only directory fails to open naming the file, and the file is left as it was", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "sessions.db")
      fs.writeFileSync(file, "")
      yield* readOnly(dir)
      assert.strictEqual(
        yield* failure(Effect.scoped(SqliteSessionStore.make({ file }))),
        `SessionStore.open: at ${file}: unable to open database file`
      )
      assert.deepStrictEqual(fs.readdirSync(dir), ["sessions.db"])
      assert.strictEqual(fs.statSync(file).size, 0)
    })))
})

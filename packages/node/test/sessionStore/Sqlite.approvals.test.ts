/**
 * SqliteSessionStore's approval log, beyond the suite every store runs (`approvalConformance`):
 * the records of a save are committed with it or not at all, ids it does not keep are refused
 * before anything is written, two stores on one file answer one record once, the open ones are
 * listed through their partial index, and a row that is not a record is named.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, type Scope } from "effect"
import { TestClock } from "effect/testing"
import * as path from "node:path"
import type * as SessionStore from "@condukt/core/SessionStore"
import * as nodeSqlite from "../../src/internal/nodeSqlite.ts"
import * as SqliteSessionStore from "../../src/sessionStore/Sqlite.ts"
import { TempDir } from "@condukt/testing"
import { record, snapshot, storeError, waiting } from "@condukt/testing/SessionStoreConformance"

const tempDir = TempDir.make("condukt-store-")

const withStore = <A, E>(f: (store: SessionStore.Service, file: string) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.scoped(Effect.gen(function*() {
    const file = path.join(yield* tempDir, "sessions.db")
    return yield* f(yield* SqliteSessionStore.make({ file }), file)
  }))

/** Runs `f` on the database file behind the store's back. */
const onDatabase = <A>(file: string, f: (db: nodeSqlite.Database) => A) =>
  Effect.map(Effect.orDie(nodeSqlite.open(file, (cause) => cause)), (db) => {
    const result = f(db)
    db.close()
    return result
  })

describe("SqliteSessionStore's approval log", () => {
  it.live("a save refused with Conflict indexes none of its records; a committed one has its columns", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        const other = yield* SqliteSessionStore.make({ file })
        yield* other.load("s1")
        yield* store.save(waiting("s1", [record(1)]), { appended: 0 })
        assert.strictEqual((yield* storeError(other.save(waiting("s1", [record(2)]), { appended: 0 })))?.reason._tag, "Conflict")
        assert.deepStrictEqual((yield* store.approvals!.list({ status: "all" })).records, [record(1)])
        yield* store.approvals!.answer(record(1).id, "approved", 1_100, { by: "ana" })
        const rows = yield* onDatabase(file, (db) => db.prepare("SELECT id, session_id, agent, tool, answered_by, requested_at, expires_at, answered_at, outcome, shadow FROM condukt_approvals").all())
        assert.deepStrictEqual(rows.map((row) => ({ ...row })), [{
          id: record(1).id,
          session_id: "s1",
          agent: "main",
          tool: "rm",
          answered_by: "ana",
          requested_at: 1_001,
          expires_at: null,
          answered_at: 1_100,
          outcome: "approved",
          shadow: 0
        }])
      })
    ))

  it.live("a record id the store does not keep fails the save naming the table, and nothing is written", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        const error = yield* storeError(store.save(waiting("s1", [record(1), record(2, { id: "../../etc/passwd" })])))
        assert.strictEqual(
          error?.message,
          `SessionStore.save: session s1 at ${file}#condukt_approvals: not an approval record (its id "../../etc/passwd" is not one a store keeps (1 to 128 lowercase letters, digits, - and _, a letter or a digit first))`
        )
        assert.isTrue(Option.isNone(yield* store.load("s1")))
        assert.deepStrictEqual((yield* store.approvals!.list({ status: "all" })).records, [])
      })
    ))

  it.live("two stores on one file answering one record at once: one answers, the other is refused as answered", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        yield* store.save(waiting("s1", [record(1)]))
        const other = yield* SqliteSessionStore.make({ file })
        const outcomes = yield* Effect.forEach(
          [store, other],
          (s, i) => Effect.exit(s.approvals!.answer(record(1).id, i === 0 ? "approved" : "denied", 1_100, { by: `answerer ${i}` })),
          { concurrency: "unbounded" }
        )
        const won = outcomes.findIndex((exit) => exit._tag === "Success")
        assert.notStrictEqual(won, -1)
        const lost = outcomes[1 - won]!
        assert.isTrue(lost._tag === "Failure" && lost.cause.reasons[0]?._tag === "Fail" && lost.cause.reasons[0].error._tag === "ApprovalRefused" &&
          lost.cause.reasons[0].error.reason === "answered")
        assert.strictEqual(Option.getOrThrow(yield* other.approvals!.get(record(1).id)).by, `answerer ${won}`)
      })
    ))

  it.live("the open requests are listed through the partial index of open rows, in id order, with no sort", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        yield* store.save(waiting("s1", [record(1)]))
        const plan = yield* onDatabase(file, (db) =>
          db.prepare(
            "EXPLAIN QUERY PLAN SELECT id, body FROM condukt_approvals WHERE shadow = 0 AND outcome IS NULL AND (expires_at IS NULL OR expires_at > ?) ORDER BY id LIMIT ?"
          ).all(5, 101).map((row) => String(row["detail"])))
        assert.deepStrictEqual(plan, ["SCAN condukt_approvals USING INDEX condukt_approvals_open"])
        const bySession = yield* onDatabase(file, (db) =>
          db.prepare("EXPLAIN QUERY PLAN SELECT id, body FROM condukt_approvals WHERE shadow = 0 AND session_id = ? ORDER BY id LIMIT ?").all("s1", 101)
            .map((row) => String(row["detail"])))
        assert.deepStrictEqual(bySession, ["SEARCH condukt_approvals USING INDEX condukt_approvals_session (session_id=?)"])
      })
    ))

  it.effect("retention deletes old answers in a save at most once a minute: the store's first save, then one a minute on", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "sessions.db")
      const store = yield* SqliteSessionStore.make({ file, approvalRetention: 1_000 })
      const answered = (n: number, at: number) => record(n, { outcome: "denied", answeredAt: at, by: "bo" })
      const kept = () => Effect.map(store.approvals!.list({ status: "answered" }), (page) => page.records.map((r) => r.callId))
      yield* store.save(waiting("s1", [answered(1, -5_000)]))
      assert.deepStrictEqual(yield* kept(), [])
      // Within the minute, an old answer stays until the next pass.
      yield* TestClock.adjust("59 seconds")
      yield* store.save(waiting("s2", [answered(2, -5_000)]))
      assert.deepStrictEqual(yield* kept(), ["c2"])
      yield* TestClock.adjust("1 second")
      yield* store.save(waiting("s3", [answered(3, 59_500)]))
      assert.deepStrictEqual(yield* kept(), ["c3"])
    })))

  it.live("a row whose body is not a record fails list and get naming the row", () =>
    withStore((store, file) =>
      Effect.gen(function*() {
        yield* store.save(waiting("s1", [record(1)]))
        yield* onDatabase(file, (db) => db.exec("UPDATE condukt_approvals SET body = '{\"id\":1}'"))
        const at = `${file}#condukt_approvals/${record(1).id}`
        const messages = yield* Effect.forEach([Effect.asVoid(store.approvals!.list()), Effect.asVoid(store.approvals!.get(record(1).id))], (effect) =>
          Effect.map(storeError(effect), (error) => [error?.method, error?.location, error?.reason._tag]))
        assert.deepStrictEqual(messages, [["list", at, "Corrupt"], ["get", at, "Corrupt"]])
      })
    ))
})

/**
 * The server's store, one behaviour on three databases: in memory (`ServerStore.makeMemory`), on a
 * SQLite file (`SqlServerStore` over `@condukt/node`'s SqliteClient) and on a real Postgres the file
 * starts itself (the cluster's support/embeddedPostgres.ts). Events are numbered from 1 in order;
 * the window keeps the last events and a read after a number finds what follows it; a session is its
 * principal's, listed newest first by pages; two stores on one database appending to one session at
 * once never give one number twice; a reader waiting on one store sees what the other wrote.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option, type Scope } from "effect"
import * as path from "node:path"
import { SqlClient } from "effect/sql"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import * as SqliteClient from "@condukt/node/SqliteClient"
import { EmbeddedPostgres, layer as embeddedPostgres } from "../../cluster/test/support/embeddedPostgres.ts"
import { tempDir } from "../../node/test/sessionStore/conformance.ts"
import { ServerStore, SqlServerStore } from "../src/index.ts"

/** Opens a store on the test's database (each call another store, on its own connection, when the database allows). */
type Open = (options?: { readonly window?: number }) => Effect.Effect<ServerStore.Service, never, Scope.Scope>

const base = (seq: number) => ({ sessionId: "s", runId: "r1", seq })
const text = (seq: number): SessionEvent.SessionEvent => ({ _tag: "TextDelta", ...base(seq), text: `chunk ${seq} «ü» "quoted"\n` })
const turnEnd = (seq: number, inputTokens: number, outputTokens: number): SessionEvent.SessionEvent => ({
  _tag: "TurnEnd",
  ...base(seq),
  turn: 1,
  usage: { inputTokens, outputTokens, cacheReadTokens: 2 }
})
const texts = (from: number, count: number) => Array.from({ length: count }, (_, i) => text(from + i))

const conformance = <R>(test: (name: string, self: (open: Open) => Effect.Effect<void, unknown, Scope.Scope | R>) => void) => {
  test("events are numbered from 1 in the order written, read back whole, and the record adds up the turns' usage", (open) =>
    Effect.gen(function*() {
      const store = yield* open()
      assert.isTrue(yield* store.claim({ id: "s", principal: "alice", agent: "ops", now: 1_000 }))
      assert.isFalse(yield* store.claim({ id: "s", principal: "bob", agent: "ops", now: 1_001 }))
      assert.deepStrictEqual(yield* store.read("s", 0, 10), { entries: [], oldest: 0, last: 0 })
      const first = [text(0), text(1), turnEnd(2, 10, 5)]
      assert.deepStrictEqual(yield* store.append("s", first, 2_000), [1, 2, 3])
      assert.deepStrictEqual(yield* store.append("s", [text(3), turnEnd(4, 1, 1)], 3_000), [4, 5])
      assert.deepStrictEqual(yield* store.append("s", [], 3_500), [])
      const all = [...first, text(3), turnEnd(4, 1, 1)]
      assert.deepStrictEqual(yield* store.read("s", 0, 10), { entries: all.map((event, i) => ({ id: i + 1, event })), oldest: 1, last: 5 })
      assert.deepStrictEqual(yield* store.read("s", 3, 1), { entries: [{ id: 4, event: text(3) }], oldest: 1, last: 5 })
      assert.deepStrictEqual(yield* store.read("s", 5, 10), { entries: [], oldest: 1, last: 5 })
      assert.deepStrictEqual(yield* store.owned("s"), Option.some({
        id: "s",
        principal: "alice",
        agent: "ops",
        createdAt: 1_000,
        lastEventId: 5,
        lastActivity: 3_500,
        usage: { inputTokens: 11, outputTokens: 6, cacheReadTokens: 4 }
      }))
      assert.deepStrictEqual(yield* store.owned("nobody's"), Option.none())
      assert.deepStrictEqual(yield* store.read("nobody's", 0, 10), { entries: [], oldest: 0, last: 0 })
      const refused = yield* Effect.flip(store.append("nobody's", [text(0)], 4_000))
      assert.deepStrictEqual([refused._tag, refused.method, refused.description], ["ServerStoreError", "append", "no session nobody's was started here"])
    }))

  test("the window keeps a session's last events: a read from before it starts at the oldest kept, a read after a number finds what follows", (open) =>
    Effect.gen(function*() {
      const store = yield* open({ window: 5 })
      yield* store.claim({ id: "s", principal: "alice", agent: "ops", now: 1 })
      for (let i = 0; i < 12; i += 3) yield* store.append("s", texts(i, 3), 2)
      const entries = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => ({ id: from + i, event: text(from + i - 1) }))
      assert.deepStrictEqual(yield* store.read("s", 0, 100), { entries: entries(8, 12), oldest: 8, last: 12 })
      assert.deepStrictEqual(yield* store.read("s", 9, 100), { entries: entries(10, 12), oldest: 8, last: 12 })
      assert.deepStrictEqual(yield* store.read("s", 9, 2), { entries: entries(10, 11), oldest: 8, last: 12 })
      yield* store.append("s", texts(12, 400), 3)
      assert.deepStrictEqual(yield* store.read("s", 406, 100), { entries: entries(408, 412), oldest: 408, last: 412 })
      assert.deepStrictEqual(yield* store.read("s", 410, 100), { entries: entries(411, 412), oldest: 408, last: 412 })
    }))

  test("a session is its principal's: listed newest first, a page after the last id of the one before, another principal's id a cursor that finds nothing", (open) =>
    Effect.gen(function*() {
      const store = yield* open()
      for (let i = 1; i <= 5; i++) yield* store.claim({ id: `a${i}`, principal: "alice", agent: "ops", now: 100 * i })
      yield* store.claim({ id: "b1", principal: "bob", agent: "ops", now: 250 })
      const ids = (owned: ReadonlyArray<ServerStore.Owned>) => owned.map((session) => session.id)
      assert.deepStrictEqual(ids(yield* store.list("alice", { limit: 2 })), ["a5", "a4"])
      assert.deepStrictEqual(ids(yield* store.list("alice", { limit: 2, before: "a4" })), ["a3", "a2"])
      assert.deepStrictEqual(ids(yield* store.list("alice", { limit: 2, before: "a2" })), ["a1"])
      assert.deepStrictEqual(ids(yield* store.list("alice", { limit: 2, before: "a1" })), [])
      assert.deepStrictEqual(ids(yield* store.list("alice", { limit: 10, before: "b1" })), [])
      assert.deepStrictEqual(ids(yield* store.list("bob", { limit: 10 })), ["b1"])
      assert.deepStrictEqual(ids(yield* store.list("carol", { limit: 10 })), [])
      assert.deepStrictEqual(Option.map(yield* store.owned("b1"), (owned) => owned.principal), Option.some("bob"))
    }))

  test("two stores on one database appending to one session at once never give a number twice: every batch is numbered in a run, all of them 1..N", (open) =>
    Effect.gen(function*() {
      const a = yield* open()
      const b = yield* open()
      yield* a.claim({ id: "shared", principal: "alice", agent: "ops", now: 1 })
      const batches = Array.from({ length: 40 }, (_, i) => ({ store: i % 2 === 0 ? a : b, events: texts(i * 3, 3) }))
      const numbered = yield* Effect.forEach(batches, ({ events, store }) => store.append("shared", events, 2), { concurrency: "unbounded" })
      for (const ids of numbered) assert.deepStrictEqual(ids, [ids[0]!, ids[0]! + 1, ids[0]! + 2])
      assert.deepStrictEqual(numbered.flat().sort((x, y) => x - y), Array.from({ length: 120 }, (_, i) => i + 1))
      // Each number holds the event its batch wrote there.
      const read = yield* b.read("shared", 0, 1_000)
      const written = new Map(numbered.flatMap((ids, i) => ids.map((id, j) => [id, batches[i]!.events[j]!] as const)))
      assert.deepStrictEqual(read.entries, Array.from({ length: 120 }, (_, i) => ({ id: i + 1, event: written.get(i + 1)! })))
    }))

  test("the lease of reading a run: one holder at a time across two stores, renewed by its holder, taken over once lapsed, given back", (open) =>
    Effect.gen(function*() {
      const a = yield* open()
      const b = yield* open()
      assert.deepStrictEqual(yield* a.lease("s", "A", 1_000, 11_000), { taken: true })
      assert.deepStrictEqual(yield* b.lease("s", "B", 2_000, 12_000), { taken: false, holder: "A" })
      assert.deepStrictEqual(yield* a.lease("s", "A", 5_000, 15_000), { taken: true })
      assert.deepStrictEqual(yield* b.lease("s", "B", 14_000, 24_000), { taken: false, holder: "A" })
      assert.deepStrictEqual(yield* b.lease("s", "B", 16_000, 26_000), { taken: true, lapsed: "A" })
      yield* a.release("s", "A")
      assert.deepStrictEqual(yield* a.lease("s", "A", 17_000, 27_000), { taken: false, holder: "B" })
      yield* b.release("s", "B")
      assert.deepStrictEqual(yield* a.lease("s", "A", 18_000, 28_000), { taken: true })
    }))

  test("readers waiting on one store see what the other wrote, and one that waits for what it already has returns at once", (open) =>
    Effect.gen(function*() {
      const a = yield* open()
      const b = yield* open()
      yield* a.claim({ id: "s", principal: "alice", agent: "ops", now: 1 })
      yield* a.append("s", [text(0)], 2)
      yield* a.wait("s", 0)
      const waiting = yield* Effect.forEach(Array.from({ length: 10 }), () => Effect.forkChild(a.wait("s", 1)))
      yield* b.append("s", [text(1)], 3)
      yield* Fiber.joinAll(waiting)
      assert.deepStrictEqual(yield* a.read("s", 1, 10), { entries: [{ id: 2, event: text(1) }], oldest: 1, last: 2 })
    }))
}

describe("ServerStore in memory", () => {
  conformance<never>((name, self) =>
    it.live(name, () => {
      let shared: ServerStore.Service | undefined
      let window: number | undefined
      // One database is one store in memory: a second open is the same store.
      const open: Open = (options = {}) => Effect.sync(() => {
        if (shared === undefined || window !== options.window) shared = ServerStore.makeMemory(options), window = options.window
        return shared
      })
      return Effect.scoped(Effect.orDie(self(open)))
    }))
})

describe("SqlServerStore on SQLite", () => {
  conformance<never>((name, self) =>
    it.live(name, () =>
      Effect.scoped(Effect.gen(function*() {
        const file = path.join(yield* tempDir, "server.db")
        const open: Open = (options) =>
          Effect.map(Effect.orDie(Layer.build(SqlServerStore.layer(options).pipe(Layer.provide(SqliteClient.layer({ file }))))), (context) =>
            Context.get(context, ServerStore.ServerStore))
        yield* Effect.orDie(self(open))
      }))))

  it.live("events that fell out of the window are deleted from the table every pruneEvery events, the window's kept", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "server.db")
      const context = yield* Effect.orDie(Layer.build(Layer.provideMerge(SqlServerStore.layer({ window: 10, pruneEvery: 4 }), SqliteClient.layer({ file }))))
      const store = Context.get(context, ServerStore.ServerStore)
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* store.claim({ id: "s", principal: "alice", agent: "ops", now: 1 })
      const kept = () => Effect.map(sql<{ readonly id: number }>`SELECT id FROM condukt_server_events WHERE session_id = ${"s"} ORDER BY id`, (rows) => rows.map((row) => row.id))
      const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
      yield* store.append("s", texts(0, 9), 2)
      // 10 and 11: past the window, in a batch that crosses no multiple of 4: nothing deleted yet.
      yield* store.append("s", texts(9, 2), 2)
      assert.deepStrictEqual(yield* kept(), range(1, 11))
      // 12 crosses a multiple of 4: everything before 12 - 10 goes.
      yield* store.append("s", texts(11, 1), 3)
      assert.deepStrictEqual(yield* kept(), range(3, 12))
      yield* store.append("s", texts(12, 3), 4)
      assert.deepStrictEqual(yield* kept(), range(3, 15))
      assert.deepStrictEqual((yield* store.read("s", 0, 100)).entries.map((entry) => entry.id), range(6, 15))
    }).pipe(Effect.orDie)))
})

layer(embeddedPostgres, { excludeTestServices: true, timeout: "60 seconds" })("SqlServerStore on Postgres", (it) => {
  conformance<EmbeddedPostgres>((name, self) =>
    it.effect(name, () =>
      Effect.scoped(Effect.gen(function*() {
        const postgres = yield* EmbeddedPostgres
        const database = yield* Effect.orDie(postgres.createDatabase)
        const open: Open = (options) =>
          Effect.map(Effect.orDie(Layer.build(SqlServerStore.layer(options).pipe(Layer.provide(postgres.client(database))))), (context) =>
            Context.get(context, ServerStore.ServerStore))
        yield* Effect.orDie(self(open))
      }))))
})

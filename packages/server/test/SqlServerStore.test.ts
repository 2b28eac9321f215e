/**
 * The server's store, one behaviour on three databases: in memory (`ServerStore.makeMemory`), on a
 * SQLite file (`SqlServerStore` over `@condukt/node`'s SqliteClient) and on a real Postgres the file
 * starts itself (the cluster's support/embeddedPostgres.ts). Events are numbered from 1 in order;
 * the window keeps the last events and a read after a number finds what follows it; a session is its
 * principal's, listed newest first by pages (filtered by agent and by a literal part of the id, each
 * row running while its run is open); its tokens add up by agent, session and day; two stores on one database appending to one session at
 * once never give one number twice; a reader waiting on one store sees what the other wrote.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option, type Scope } from "effect"
import * as path from "node:path"
import { SqlClient } from "effect/sql"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import * as SqliteClient from "@condukt/node/SqliteClient"
import { EmbeddedPostgres, layer as embeddedPostgres } from "../../cluster/test/support/embeddedPostgres.ts"
import { TempDir } from "@condukt/testing"
import { ServerStore, SqlServerStore } from "../src/index.ts"

const tempDir = TempDir.make("condukt-store-")

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
      const at = [2_000, 2_000, 2_000, 3_000, 3_000]
      assert.deepStrictEqual(yield* store.read("s", 0, 10), { entries: all.map((event, i) => ({ id: i + 1, at: at[i]!, event })), oldest: 1, last: 5 })
      assert.deepStrictEqual(yield* store.read("s", 3, 1), { entries: [{ id: 4, at: 3_000, event: text(3) }], oldest: 1, last: 5 })
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
      const entries = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => ({ id: from + i, at: from + i <= 12 ? 2 : 3, event: text(from + i - 1) }))
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

  test("a page filtered by agent and by a literal part of the id: wildcards and case taken as written, the cursor kept across filters, each row running while its run is open", (open) =>
    Effect.gen(function*() {
      const store = yield* open()
      const ids = ["a%1", "b_2", "A%3", "x!4", "ab5", "a%6"]
      for (const [i, id] of ids.entries()) yield* store.claim({ id, principal: "alice", agent: i % 2 === 0 ? "ops" : "dev", now: 100 * (i + 1) })
      yield* store.claim({ id: "a%bob", principal: "bob", agent: "ops", now: 50 })
      const listed = (query: ServerStore.ListQuery) => Effect.map(store.list("alice", query), (rows) => rows.map((row) => row.id))
      assert.deepStrictEqual(yield* listed({ limit: 10, q: "a%" }), ["a%6", "a%1"])
      assert.deepStrictEqual(yield* listed({ limit: 10, q: "%" }), ["a%6", "A%3", "a%1"])
      assert.deepStrictEqual(yield* listed({ limit: 10, q: "_" }), ["b_2"])
      assert.deepStrictEqual(yield* listed({ limit: 10, q: "!" }), ["x!4"])
      assert.deepStrictEqual(yield* listed({ limit: 10, q: "b" }), ["ab5", "b_2"])
      assert.deepStrictEqual(yield* listed({ limit: 10, q: "nothing" }), [])
      assert.deepStrictEqual(yield* listed({ limit: 10, agent: "dev" }), ["a%6", "x!4", "b_2"])
      assert.deepStrictEqual(yield* listed({ limit: 1, agent: "ops" }), ["ab5"])
      assert.deepStrictEqual(yield* listed({ limit: 1, agent: "ops", before: "ab5" }), ["A%3"])
      assert.deepStrictEqual(yield* listed({ limit: 5, agent: "ops", before: "A%3" }), ["a%1"])
      assert.deepStrictEqual(yield* listed({ limit: 5, agent: "ops", q: "%", before: "a%6" }), ["A%3", "a%1"])
      assert.deepStrictEqual(yield* listed({ limit: 5, agent: "nobody" }), [])
      assert.deepStrictEqual(yield* listed({ limit: 5, q: "a\u0000" }), [])
      assert.deepStrictEqual(yield* listed({ limit: 5, agent: "ops\u0000" }), [])
      assert.deepStrictEqual(yield* listed({ limit: 5, before: "a%6\u0000" }), [])
      // A run open from its AgentStart to its AgentEnd; a sub-agent's do not count.
      const event = (tag: "AgentStart" | "AgentEnd", agentPath?: ReadonlyArray<string>): SessionEvent.SessionEvent =>
        tag === "AgentStart"
          ? { _tag: "AgentStart", ...base(0), prompt: "go", ...(agentPath === undefined ? {} : { agentPath }) }
          : { _tag: "AgentEnd", ...base(9), outcome: "completed", ...(agentPath === undefined ? {} : { agentPath }) } as SessionEvent.SessionEvent
      const running = Effect.map(store.list("alice", { limit: 10, q: "a%" }), (rows) => rows.map((row) => [row.id, row.running]))
      assert.deepStrictEqual(yield* running, [["a%6", false], ["a%1", false]])
      yield* store.append("a%1", [event("AgentStart"), text(1)], 1_000)
      assert.deepStrictEqual(yield* running, [["a%6", false], ["a%1", true]])
      yield* store.append("a%1", [event("AgentStart", ["helper"]), event("AgentEnd", ["helper"]), text(2)], 1_001)
      assert.deepStrictEqual(yield* running, [["a%6", false], ["a%1", true]])
      yield* store.append("a%1", [event("AgentEnd")], 1_002)
      assert.deepStrictEqual(yield* running, [["a%6", false], ["a%1", false]])
      yield* store.append("a%6", [event("AgentStart"), event("AgentEnd"), event("AgentStart")], 1_003)
      assert.deepStrictEqual(yield* running, [["a%6", true], ["a%1", false]])
    }))

  test("a principal's tokens by agent and by session from the sessions' turns, by day and agent from the day each turn's end was written", (open) =>
    Effect.gen(function*() {
      const store = yield* open()
      const DAY = 86_400_000
      const day = (n: number) => new Date(n * DAY).toISOString().slice(0, 10)
      yield* store.claim({ id: "s1", principal: "alice", agent: "ops", now: 1 })
      yield* store.claim({ id: "s2", principal: "alice", agent: "dev", now: 2 })
      yield* store.claim({ id: "s3", principal: "alice", agent: "ops", now: 3 })
      yield* store.claim({ id: "s4", principal: "alice", agent: "ops", now: 4 })
      yield* store.claim({ id: "b1", principal: "bob", agent: "ops", now: 5 })
      yield* store.append("s1", [turnEnd(0, 10, 5), text(1)], 10 * DAY + 5)
      yield* store.append("s1", [turnEnd(2, 1, 1)], 11 * DAY)
      yield* store.append("s2", [turnEnd(0, 100, 50)], 10 * DAY + 7)
      yield* store.append("s3", [turnEnd(0, 3, 3), { ...turnEnd(1, 1_000, 1_000), agentPath: ["helper"] } as SessionEvent.SessionEvent], 11 * DAY + 1)
      yield* store.append("s4", [text(0)], 12 * DAY)
      yield* store.append("b1", [turnEnd(0, 7, 7)], 10 * DAY)
      const usage = (inputTokens: number, outputTokens: number, cacheReadTokens: number) => ({ inputTokens, outputTokens, cacheReadTokens })
      assert.deepStrictEqual(yield* store.usage("alice", "agent", { limit: 10, since: day(0) }), [
        { key: "dev", agent: "dev", usage: usage(100, 50, 2) },
        { key: "ops", agent: "ops", usage: { inputTokens: 14, outputTokens: 9, cacheReadTokens: 6 } }
      ])
      assert.deepStrictEqual(yield* store.usage("alice", "agent", { limit: 1, since: day(0) }), [{ key: "dev", agent: "dev", usage: usage(100, 50, 2) }])
      assert.deepStrictEqual(yield* store.usage("alice", "session", { limit: 10, since: day(0) }), [
        { key: "s2", agent: "dev", usage: usage(100, 50, 2) },
        { key: "s1", agent: "ops", usage: usage(11, 6, 4) },
        { key: "s3", agent: "ops", usage: usage(3, 3, 2) }
      ])
      assert.deepStrictEqual(yield* store.usage("alice", "session", { limit: 2, since: day(0) }), [
        { key: "s2", agent: "dev", usage: usage(100, 50, 2) },
        { key: "s1", agent: "ops", usage: usage(11, 6, 4) }
      ])
      assert.deepStrictEqual(yield* store.usage("alice", "day", { limit: 10, since: day(0) }), [
        { key: day(10), agent: "dev", usage: usage(100, 50, 2) },
        { key: day(10), agent: "ops", usage: usage(10, 5, 2) },
        { key: day(11), agent: "ops", usage: usage(4, 4, 4) }
      ])
      assert.deepStrictEqual(yield* store.usage("alice", "day", { limit: 10, since: day(11) }), [{ key: day(11), agent: "ops", usage: usage(4, 4, 4) }])
      assert.deepStrictEqual(yield* store.usage("bob", "day", { limit: 10, since: day(0) }), [{ key: day(10), agent: "ops", usage: usage(7, 7, 2) }])
      assert.deepStrictEqual(yield* store.usage("carol", "agent", { limit: 10, since: day(0) }), [])
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
      assert.deepStrictEqual(read.entries, Array.from({ length: 120 }, (_, i) => ({ id: i + 1, at: 2, event: written.get(i + 1)! })))
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
      assert.deepStrictEqual(yield* a.read("s", 1, 10), { entries: [{ id: 2, at: 3, event: text(1) }], oldest: 1, last: 2 })
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

  it.live("a database an older version created gains the columns added since: its events read with `at` 0, its sessions listed and written as before", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "server.db")
      const old = yield* Effect.orDie(Layer.build(SqliteClient.layer({ file })))
      const sql = Context.get(old, SqlClient.SqlClient)
      yield* sql.unsafe("CREATE TABLE condukt_server_sessions (id TEXT PRIMARY KEY NOT NULL, principal TEXT NOT NULL, agent TEXT NOT NULL, created_at INTEGER NOT NULL, last_event_id INTEGER NOT NULL, last_activity INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL) STRICT")
      yield* sql.unsafe("CREATE TABLE condukt_server_events (session_id TEXT NOT NULL, id INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (session_id, id)) STRICT, WITHOUT ROWID")
      yield* sql`INSERT INTO condukt_server_sessions VALUES ('s', 'alice', 'ops', 1, 1, 2, 0, 0, 0, 0)`
      yield* sql`INSERT INTO condukt_server_events VALUES ('s', 1, ${JSON.stringify(text(0))})`
      const store = Context.get(yield* Layer.build(SqlServerStore.layer().pipe(Layer.provide(SqliteClient.layer({ file })))), ServerStore.ServerStore)
      assert.deepStrictEqual(yield* store.read("s", 0, 10), { entries: [{ id: 1, at: 0, event: text(0) }], oldest: 1, last: 1 })
      assert.deepStrictEqual(yield* store.append("s", [turnEnd(1, 2, 3)], 5), [2])
      assert.deepStrictEqual(yield* store.list("alice", { limit: 10 }), [{
        id: "s",
        principal: "alice",
        agent: "ops",
        createdAt: 1,
        lastEventId: 2,
        lastActivity: 5,
        usage: { inputTokens: 2, outputTokens: 3, cacheReadTokens: 2 },
        running: false
      }])
      assert.deepStrictEqual(yield* store.usage("alice", "day", { limit: 10, since: "1970-01-01" }), [{ key: "1970-01-01", agent: "ops", usage: { inputTokens: 2, outputTokens: 3, cacheReadTokens: 2 } }])
    }).pipe(Effect.orDie)))

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

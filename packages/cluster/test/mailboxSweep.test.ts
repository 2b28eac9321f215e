/**
 * internal/mailboxSweep: a runner deletes the sessions' answered messages older than the
 * retention, with their replies, and keeps a run still waiting for its answer; the sessions'
 * histories are untouched. The cluster is one in-memory runner whose mailboxes are effect's SQL
 * tables, on a SQLite file and on a real Postgres (support/embeddedPostgres.ts).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { RunnerHealth, Runners, RunnerStorage, Sharding, ShardingConfig } from "effect/cluster"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as Model from "@condukt/core/Model"
import * as Sessions from "@condukt/core/Sessions"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as ClusterSessions from "../src/ClusterSessions.ts"
import * as MailboxSweep from "../src/internal/mailboxSweep.ts"
import * as MessageStorage from "../src/internal/messageStorage.ts"
import * as SessionEntity from "../src/SessionEntity.ts"
import { TempDir } from "@condukt/testing"
import { EmbeddedPostgres, layer as embeddedPostgres } from "./support/embeddedPostgres.ts"
import { agents, echoModel } from "../../core/test/fixtures/sessionsById.ts"

const tempDir = TempDir.make("condukt-store-")

/** One in-memory runner, its mailboxes in the SqlClient's database. */
const runner = Sharding.layer.pipe(
  Layer.provideMerge(Runners.layerNoop),
  Layer.provideMerge(MessageStorage.layer),
  Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
  Layer.provide(ShardingConfig.layer())
)

const cluster = <E>(database: Layer.Layer<SqlClient.SqlClient, E>) =>
  ClusterSessions.layer.pipe(
    Layer.provideMerge(SessionEntity.layer({ agents })),
    Layer.provideMerge(runner),
    Layer.provideMerge(Layer.mergeAll(database, Layer.succeed(Model.Model, echoModel)))
  )

const counts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [messages] = yield* sql`SELECT COUNT(*) AS n FROM cluster_messages WHERE entity_type = 'Session'`
  const [replies] = yield* sql`SELECT COUNT(*) AS n FROM cluster_replies`
  return { messages: Number(messages?.["n"]), replies: Number(replies?.["n"]) }
})

/** Answered messages past the retention go with their replies; a run waiting for its answer stays; the session goes on. */
const swept = Effect.gen(function*() {
  const sessions = yield* Sessions.ById
  const id = yield* sessions.start("echo", { id: "swept" })
  for (let i = 0; i < 30; i++) yield* sessions.run(id, `run ${i}`)
  // A run whose model never answers: its request is not answered, and must stay.
  const waiting = yield* Effect.forkChild(sessions.run(id, "wait here"))
  while ((yield* sessions.history(id)).length < 61) yield* Effect.yieldNow
  const before = yield* counts
  assert.isAtLeast(before.messages, 32) // the start, 30 runs and the waiting one, at least

  // Within the retention: nothing goes.
  assert.strictEqual(yield* MailboxSweep.sweep({ entityType: "Session", retention: "1 hour" }), 0)
  assert.deepStrictEqual(yield* counts, before)

  // Past it: every answered message and its reply; the waiting run's request stays.
  assert.strictEqual(yield* MailboxSweep.sweep({ entityType: "Session", retention: 0 }), before.messages - 1)
  const sql = yield* SqlClient.SqlClient
  const left = yield* sql`SELECT tag, processed FROM cluster_messages WHERE entity_type = 'Session'`
  assert.deepStrictEqual(left.map((row) => [row["tag"], Number(row["processed"])]), [["Run", 0]])
  assert.strictEqual((yield* counts).replies, 0)

  // The session goes on: the waiting run is aborted and answers, the next runs.
  yield* sessions.abort(id)
  assert.isTrue((yield* Fiber.await(waiting))._tag === "Failure")
  assert.strictEqual((yield* sessions.run(id, "after")).text, "echo: after")
  const history = yield* sessions.history(id)
  assert.strictEqual(history.length, 63)
  assert.deepStrictEqual(history.slice(0, 2).map((message) => message._tag), ["UserMessage", "AssistantMessage"])
})

describe("the sweep of the sessions' mailboxes", () => {
  it.live("deletes answered messages past the retention with their replies, keeps a run waiting for its answer; histories untouched", () =>
    Effect.flatMap(tempDir, (dir) => Effect.provide(swept, cluster(SqliteClient.layer({ file: path.join(dir, "cluster.db") })))))

  it.live("a runner's layer sweeps every interval, and in batches of 500", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const id = yield* sessions.start("echo", { id: "many" })
        yield* Effect.forEach(Array.from({ length: 620 }, (_, i) => `run ${i}`), (prompt) => sessions.run(id, prompt), { discard: true })
        const many = yield* counts
        assert.isAtLeast(many.messages, 621)
        // One sweep takes them all, in two batches.
        assert.strictEqual(yield* MailboxSweep.sweep({ entityType: "Session", retention: 0 }), many.messages)
        assert.deepStrictEqual(yield* counts, { messages: 0, replies: 0 })
        for (let i = 0; i < 3; i++) yield* sessions.run(id, `later ${i}`)
        assert.strictEqual((yield* counts).messages, 3)
        // The layer's first sweep comes one interval after it starts.
        yield* Layer.launch(MailboxSweep.layer({ entityType: "Session", retention: 0, interval: "200 millis" })).pipe(
          Effect.raceFirst(Effect.repeat(counts, { until: (now) => now.messages === 0 && now.replies === 0 })),
          Effect.timeout("20 seconds")
        )
        assert.deepStrictEqual(yield* counts, { messages: 0, replies: 0 })
        assert.strictEqual((yield* sessions.run(id, "after")).text, "echo: after")
      }).pipe(Effect.provide(cluster(SqliteClient.layer({ file: path.join(dir, "cluster.db") }))))
    }), 60_000)
})

layer(embeddedPostgres, { excludeTestServices: true, timeout: "60 seconds" })("the sweep of the sessions' mailboxes on Postgres", (it) => {
  it.effect("deletes answered messages past the retention with their replies, keeps a run waiting for its answer; histories untouched", () =>
    Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      yield* Effect.provide(swept, cluster(postgres.client(database)))
    }))
})

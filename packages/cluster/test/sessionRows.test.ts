/**
 * sessionRows: the record of where each run began (`condukt_cluster_runs`) is written with the run's
 * first save (no commit of its own) and deleted once the run is settled, so the table stays bounded however many runs a
 * session makes; a run whose reply the cluster has not saved (its runner died before, so the run is
 * delivered again) keeps its row. The cluster is effect/cluster's in-memory runner, its storage
 * holding back one run's reply as a runner that dies before saving it would.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Stream } from "effect"
import { MessageStorage, RunnerHealth, Runners, RunnerStorage, Sharding, ShardingConfig, TestRunner } from "effect/cluster"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as Model from "@condukt/core/Model"
import * as Sessions from "@condukt/core/Sessions"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as ClusterSessions from "../src/ClusterSessions.ts"
import * as SessionEntity from "../src/SessionEntity.ts"
import { TempDir } from "@condukt/testing"
import { agents, echoModel } from "../../core/test/fixtures/sessionsById.ts"

const tempDir = TempDir.make("condukt-store-")

/**
 * The in-memory storage, but the second reply (the first is the start's) is held back until
 * `release`, then dropped: its request stays unprocessed, as when its runner dies before saving it.
 */
const holdingStorage = (held: Deferred.Deferred<string>, release: Deferred.Deferred<void>) =>
  Layer.effect(
    MessageStorage.MessageStorage,
    Effect.map(MessageStorage.MessageStorage, (storage) => {
      let replies = 0
      return MessageStorage.MessageStorage.of({
        ...storage,
        saveReply: (reply) =>
          Effect.flatMap(Deferred.isDone(held), (done) =>
            done || replies++ === 0
              ? storage.saveReply(reply)
              : Effect.andThen(Deferred.succeed(held, String(reply.reply.requestId)), Deferred.await(release)))
      })
    })
  ).pipe(Layer.provideMerge(MessageStorage.layerMemory))

/** TestRunner.layer, on `holdingStorage`. */
const runner = (held: Deferred.Deferred<string>, release: Deferred.Deferred<void>) =>
  Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(holdingStorage(held, release)),
    Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
    Layer.provide(ShardingConfig.layer())
  )

describe("condukt_cluster_runs", () => {
  it.live("stays bounded over 40 runs of a session, and keeps the row of a run whose reply was not saved", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const held = yield* Deferred.make<string>()
      const release = yield* Deferred.make<void>()
      const sqlite = SqliteClient.layer({ file: path.join(dir, "cluster.db") })
      const cluster = ClusterSessions.layer.pipe(
        Layer.provideMerge(SessionEntity.layer({ agents })),
        Layer.provideMerge(runner(held, release)),
        Layer.provideMerge(Layer.mergeAll(sqlite, Layer.succeed(Model.Model, echoModel)))
      )
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const sql = yield* SqlClient.SqlClient
        const rows = Effect.map(sql`SELECT run FROM condukt_cluster_runs ORDER BY run`, (rows) => rows.map((row) => String(row["run"])))
        const id = yield* sessions.start("echo", { id: "many" })
        // The first run: its handler completes, its reply is never saved (its caller waits on).
        const waiting = yield* Effect.forkChild(sessions.run(id, "first"), { startImmediately: true })
        yield* Deferred.await(held)
        const [first, ...others] = yield* rows
        assert.deepStrictEqual(others, [])
        for (let i = 0; i < 40; i++) yield* sessions.run(id, `run ${i}`)
        const left = yield* rows
        // Pruned every 16 runs: at most 16 settled rows, and the unsettled one.
        assert.isAtMost(left.length, 17)
        assert.include(left, first)
        assert.strictEqual((yield* sessions.history(id)).length, 82)
        yield* Fiber.interrupt(waiting)
      }).pipe(Effect.ensuring(Deferred.succeed(release, undefined)), Effect.provide(cluster))
    }))

  it.live("a run has no row until its first save: a run whose model has not answered left nothing to find", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const asked = yield* Deferred.make<void>()
      // Answers the first request, then never again (the run in flight), saying when it was asked.
      let requests = 0
      const model = Model.Model.of({
        name: "test:echo",
        stream: (request) => (requests++ === 0 ? echoModel.stream(request) : Stream.unwrap(Effect.as(Deferred.succeed(asked, undefined), Stream.never)))
      })
      const cluster = ClusterSessions.layer.pipe(
        Layer.provideMerge(SessionEntity.layer({ agents })),
        Layer.provideMerge(TestRunner.layer),
        Layer.provideMerge(Layer.mergeAll(SqliteClient.layer({ file: path.join(dir, "cluster.db") }), Layer.succeed(Model.Model, model)))
      )
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const sql = yield* SqlClient.SqlClient
        const id = yield* sessions.start("echo", { id: "slow" })
        yield* sessions.run(id, "first")
        const count = Effect.map(sql`SELECT COUNT(*) AS n FROM condukt_cluster_runs WHERE session = ${id}`, ([row]) => Number(row?.["n"]))
        assert.strictEqual(yield* count, 1)
        yield* Effect.forkChild(sessions.run(id, "second"), { startImmediately: true })
        yield* Deferred.await(asked)
        // The second run began (its model was asked): its row comes with its first save, not before.
        assert.strictEqual(yield* count, 1)
        yield* sessions.abort(id)
      }).pipe(Effect.provide(cluster))
    }))
})

/**
 * internal/restingHeap: a runner optimizes for size while no session is active on it, and stops at
 * the first one. The runner is one in-memory runner (effect's SQL mailboxes on a SQLite file, its
 * sessions passivating after 1 s idle); the flags the layer sets are recorded in place of V8's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schedule } from "effect"
import { RunnerHealth, Runners, RunnerStorage, Sharding, ShardingConfig } from "effect/cluster"
import * as path from "node:path"
import * as Model from "@condukt/core/Model"
import * as Sessions from "@condukt/core/Sessions"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as ClusterSessions from "../src/ClusterSessions.ts"
import * as MessageStorage from "../src/internal/messageStorage.ts"
import * as RestingHeap from "../src/internal/restingHeap.ts"
import * as SessionEntity from "../src/SessionEntity.ts"
import { TempDir } from "@condukt/testing"
import { agents, echoModel } from "../../core/test/fixtures/sessionsById.ts"

const tempDir = TempDir.make("condukt-store-")

const runner = Sharding.layer.pipe(
  Layer.provideMerge(Runners.layerNoop),
  Layer.provideMerge(MessageStorage.layer),
  Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
  Layer.provide(ShardingConfig.layer())
)

/** Until `flags` has `count` entries (asked every 100 ms, for at most 30 s). */
const until = (flags: ReadonlyArray<string>, count: number) =>
  Effect.suspend(() => (flags.length >= count ? Effect.void : Effect.fail(flags.length))).pipe(
    Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 300 }),
    Effect.orDie
  )

describe("a runner's heap at rest", () => {
  it.live("optimizes for size with no session active, not while one is, and again once it passivated", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const flags: Array<string> = []
      const cluster = ClusterSessions.layer.pipe(
        Layer.provideMerge(SessionEntity.layer({ agents, maxIdleTime: "1 second" })),
        Layer.provideMerge(runner),
        Layer.provideMerge(Layer.mergeAll(SqliteClient.layer({ file: path.join(dir, "cluster.db") }), Layer.succeed(Model.Model, echoModel)))
      )
      yield* Effect.gen(function*() {
        yield* until(flags, 1)
        const sessions = yield* Sessions.ById
        const id = yield* sessions.start("echo", { id: "resting" })
        assert.strictEqual((yield* sessions.run(id, "hello")).text, "echo: hello")
        yield* until(flags, 3)
        assert.deepStrictEqual(flags.slice(0, 3), ["--optimize-for-size", "--no-optimize-for-size", "--optimize-for-size"])
      }).pipe(Effect.provide(RestingHeap.make((flag) => void flags.push(flag)).pipe(Layer.provideMerge(cluster))))
      assert.deepStrictEqual(flags.at(-1), "--no-optimize-for-size")
    }))
})

/**
 * ClusterSessions on an in-memory cluster (effect/cluster's TestRunner, messages serialised as if
 * remote) with the sessions' rows and store in a SQLite file: the same body as the one-process
 * `Sessions.layerById` (packages/core/test/fixtures/sessionsById.ts), so a program changes a Layer,
 * not its code. Runners in real processes: ClusterSessions.processes.test.ts.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestRunner } from "effect/cluster"
import * as path from "node:path"
import * as Model from "@condukt/core/Model"
import * as Sessions from "@condukt/core/Sessions"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as ClusterSessions from "../src/ClusterSessions.ts"
import * as SessionEntity from "../src/SessionEntity.ts"
import { TempDir } from "@condukt/testing"
import { agents, conformance, echoModel } from "../../core/test/fixtures/sessionsById.ts"

const tempDir = TempDir.make("condukt-store-")

/** A cluster of one in-memory runner, its database a new SQLite file. */
const cluster = Layer.unwrap(Effect.map(tempDir, (dir) =>
  ClusterSessions.layer.pipe(
    Layer.provideMerge(SessionEntity.layer({ agents })),
    Layer.provide(TestRunner.layer),
    Layer.provide(Layer.mergeAll(SqliteClient.layer({ file: path.join(dir, "cluster.db") }), Layer.succeed(Model.Model, echoModel)))
  )))

describe("ClusterSessions on one in-memory runner", () => {
  conformance((f) => Effect.flatMap(Sessions.ById, f).pipe(Effect.provide(cluster), Effect.orDie), it.live)
})

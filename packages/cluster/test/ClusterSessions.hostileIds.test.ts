/**
 * The hostile-id corpus (@condukt/testing's `HostileSessionIds`) through `Sessions.ById` on a real
 * runner in this process, its mailboxes in effect/cluster's SQL storage: on a SQLite file, where
 * `node:sqlite` reads TEXT up to a NUL (a session `alice\0x` was delivered to alice's entity, and
 * read and extended alice's history), and on Postgres (support/embeddedPostgres.ts). Every call
 * with an id the rule refuses fails `InvalidSessionId`; every other id runs a session of its own.
 */
import { describe, it, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import * as path from "node:path"
import * as Model from "@condukt/core/Model"
import * as Sessions from "@condukt/core/Sessions"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as Runner from "../src/Runner.ts"
import { FreePort, TempDir } from "@condukt/testing"
import { agents, echoModel, hostileIds } from "../../core/test/fixtures/sessionsById.ts"
import { EmbeddedPostgres, layer as embeddedPostgres } from "./support/embeddedPostgres.ts"

const tempDir = TempDir.make("condukt-store-")

/** The corpus through a runner of this process on `client`'s database. */
const throughRunner = (client: Layer.Layer<SqlClient.SqlClient, SqlError.SqlError>) =>
  Effect.scoped(Effect.gen(function*() {
    const port = yield* FreePort.make
    const runner = yield* Layer.build(
      Runner.layer({ agents, port }).pipe(Layer.provide(Layer.mergeAll(client, Layer.succeed(Model.Model, echoModel))))
    )
    yield* hostileIds(Context.get(runner, Sessions.ById))
  })).pipe(Effect.orDie)

describe("ClusterSessions on a runner with its storage on SQLite", () => {
  it.live("hostile ids: every call with one the rule refuses fails InvalidSessionId; each other one runs a session of its own", () =>
    Effect.flatMap(tempDir, (dir) => throughRunner(SqliteClient.layer({ file: path.join(dir, "cluster.db") }))), { timeout: 120_000 })
})

layer(embeddedPostgres, { excludeTestServices: true, timeout: "60 seconds" })("ClusterSessions on a runner with its storage on Postgres", (it) => {
  it.effect("hostile ids: every call with one the rule refuses fails InvalidSessionId; each other one runs a session of its own", () =>
    Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      yield* throughRunner(postgres.client(database))
    }), { timeout: 120_000 })
})

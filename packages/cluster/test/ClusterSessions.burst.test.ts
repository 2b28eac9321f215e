/**
 * Calls the cluster cuts off are sent again: a runner process (fixtures/runner.ts) on a SQLite file
 * is up, and at once this process, a client, starts 1,000 sessions and runs each, all at the same
 * time. While the runner still takes its shards, the cluster answers some calls in flight with an
 * interruption (no failure): each start and run must still be answered — and a start sent again
 * after it marked its session must answer as the first did, not `AlreadyStarted`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import * as Message from "@condukt/core/Message"
import * as Sessions from "@condukt/core/Sessions"
import * as Runner from "../src/Runner.ts"
import { TempDir } from "@condukt/testing"
import { storeWriter } from "../../node/test/sessionStore/processes.ts"

const tempDir = TempDir.make("condukt-store-")

const fixture = path.resolve(import.meta.dirname, "fixtures/runner.ts")

describe("ClusterSessions, 1,000 sessions at once on a runner just up", () => {
  it.live("every start and run is answered, each session's history holds its turn once", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "cluster.db")
      const runner = yield* storeWriter(["sqlite", file, "a", dir], fixture)
      assert.deepStrictEqual((yield* runner.next).split(" ", 2), ["ready", "a"])
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const ids = Array.from({ length: 1000 }, (_, i) => `s${i}`)
        const replies = yield* Effect.forEach(ids, (id) => Effect.andThen(sessions.start("worker", { id }), sessions.run(id, id)), { concurrency: "unbounded" })
        assert.deepStrictEqual(replies.map((reply) => reply.text), ids.map((id) => `echo: ${id}`))
        for (const id of ["s0", "s499", "s999"]) {
          assert.deepStrictEqual(yield* sessions.history(id), [Message.user(id), Message.assistant([Message.textPart(`echo: ${id}`)])])
        }
      }).pipe(Effect.provide(Runner.layerSqliteClient({ file })))
    })), 120_000)
})

/**
 * Many sessions over runners on Postgres lose nothing (issue 43, "Must show"; bench/cluster-million
 * is the large version, with the figures): two runner processes (fixtures/runner.ts, sessions
 * passivating after 5 s idle) on a real Postgres (support/embeddedPostgres.ts), this process a
 * client of both. 20,000 sessions are each started and run once, 128 at a time, spread over the
 * two: every call answers, and every session's history is whole in the store — counted in SQL,
 * 2 messages (the prompt and its answer) for each of the 20,000 sessions and no other — and read
 * back whole through the cluster for a few of them, touched again after they passivated.
 * Several minutes on a shared 2-core machine: it is in the `release` project.
 */
import { assert, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import * as Message from "@condukt/core/Message"
import * as Sessions from "@condukt/core/Sessions"
import * as Runner from "../src/Runner.ts"
import { TempDir } from "@condukt/testing"
import { EmbeddedPostgres, layer as embeddedPostgres } from "./support/embeddedPostgres.ts"
import { ask, type Child, settled, twoRunners } from "./support/runners.ts"

const tempDir = TempDir.make("condukt-store-")

const SESSIONS = 20_000

/** Waits until no session is active on `runner` (asked every second, for at most 5 minutes). */
const passivated = (runner: Child) =>
  Effect.flatMap(ask(runner, "entities"), ([active]) => (active === 0 ? Effect.void : Effect.fail(active))).pipe(
    Effect.retry({ schedule: Schedule.spaced("1 second"), times: 300 })
  )

layer(embeddedPostgres, { excludeTestServices: true, timeout: "90 seconds" })("ClusterSessions, 20,000 sessions on two runner processes on Postgres", (it) => {
  it.effect("each started and run once: every call answers, every history is whole in the store, sessions touched again have theirs", () =>
    Effect.scoped(Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      const runners = yield* twoRunners("pg", `${postgres.socketDir}:${database}`, yield* tempDir, "5 seconds")
      // Shards moving to the runner that joined last would interrupt what is under way on them.
      yield* settled(runners)
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const failures = yield* Effect.forEach(Array.from({ length: SESSIONS }, (_, i) => `s${i}`), (id) =>
          Effect.gen(function*() {
            const started = yield* Effect.exit(sessions.start("worker", { id }))
            if (Exit.isFailure(started)) return [`${id} start: ${Cause.pretty(started.cause).split("\n")[0]}`]
            const ran = yield* Effect.exit(sessions.run(id, "hello"))
            return Exit.isFailure(ran) ? [`${id} run: ${Cause.pretty(ran.cause).split("\n")[0]}`] : []
          }), { concurrency: 128 })
        assert.deepStrictEqual(failures.flat().slice(0, 5), [], `${failures.flat().length} of ${SESSIONS} failed`)

        // Every session's history, by count: one group, 2 messages for each of the 20,000.
        const sql = yield* SqlClient.SqlClient
        const histories = yield* sql<{ messages: number; sessions: number }>`
          SELECT messages::int AS messages, COUNT(*)::int AS sessions FROM (
            SELECT session, COUNT(*) AS messages FROM condukt_messages GROUP BY session
          ) AS histories GROUP BY messages ORDER BY messages`
        assert.deepStrictEqual(histories.map((row) => ({ ...row })), [{ messages: 2, sessions: SESSIONS }])

        // Passivated, then activated again from the store, with the run before.
        yield* Effect.forEach([runners.a, runners.b], passivated, { discard: true })
        for (const id of ["s0", "s9999", "s19999"]) {
          assert.strictEqual((yield* sessions.run(id, "again")).text, "echo: again")
          assert.deepStrictEqual(yield* sessions.history(id), [
            Message.user("hello"),
            Message.assistant([Message.textPart("echo: hello")]),
            Message.user("again"),
            Message.assistant([Message.textPart("echo: again")])
          ])
        }
      }).pipe(Effect.provide(Runner.layerClient().pipe(Layer.provideMerge(Layer.orDie(postgres.client(database))))))
    })), { timeout: 1_200_000 })
})

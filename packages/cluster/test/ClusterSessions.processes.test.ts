/**
 * Sessions that outlive their runner: two runner processes (fixtures/runner.ts) on one SQLite file
 * and on a real Postgres (support/embeddedPostgres.ts), this process a client of both. A session
 * is started through the cluster; a run of it blocks in its model request on the runner that owns it, a
 * second run is accepted behind it, and that runner is killed (`kill -9`): both runs, and the next
 * one, complete on the other runner; the history holds each turn once; events stream back in order;
 * an abort sent from this process stops a run on the runner that holds the session. A stream whose
 * runner dies before anything of its run was saved starts the run again on the other runner.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Clock, Effect, Fiber, Layer, Schedule, Stream } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Message from "@condukt/core/Message"
import * as Sessions from "@condukt/core/Sessions"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as Runner from "../src/Runner.ts"
import { TempDir } from "@condukt/testing"
import { EmbeddedPostgres, layer as embeddedPostgres } from "./support/embeddedPostgres.ts"
import { twoRunners } from "./support/runners.ts"

const tempDir = TempDir.make("condukt-store-")

const echo = (prompt: string) => [Message.user(prompt), Message.assistant([Message.textPart(`echo: ${prompt}`)])]
const held = [Message.user("hold on"), Message.assistant([Message.textPart("done: hold on")])]

/**
 * Two runners on `location`, a session on them, the kill; what failover took (from the kill to the
 * held run's reply), in milliseconds.
 */
const failover = (kind: "sqlite" | "pg", location: string, database: Layer.Layer<SqlClient.SqlClient, unknown>) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const runners = yield* twoRunners(kind, location, dir)
    return yield* Effect.gen(function*() {
      const sessions = yield* Sessions.ById
      const id = yield* sessions.start("worker", { id: "x" })
      const events = yield* Stream.runCollect(sessions.stream(id, "hello"))
      assert.deepStrictEqual(events.map((event) => [event._tag, event.seq]), [["AgentStart", 0], ["TurnStart", 1], ["TextDelta", 2], ["TurnEnd", 3], ["AgentEnd", 4]])
      // The run blocks in its model request on the runner that owns the session; another is accepted behind it.
      const holding = yield* Effect.forkChild(sessions.run(id, "hold on"))
      const owner = yield* Effect.raceFirst(runners.a.next, runners.b.next)
      const queued = yield* Effect.forkChild(sessions.run(id, "queued"))
      yield* accepted(id, 2)
      const victim = owner === "held a" ? runners.a : runners.b
      assert.include(["held a", "held b"], owner)
      yield* victim.kill
      const killed = yield* Clock.currentTimeMillis
      const reply = yield* Fiber.join(holding)
      const took = (yield* Clock.currentTimeMillis) - killed
      assert.deepStrictEqual(reply, { text: "done: hold on", turns: 1, messages: held.slice(1) })
      assert.deepStrictEqual((yield* Fiber.join(queued)).text, "echo: queued")
      assert.deepStrictEqual((yield* sessions.run(id, "after")).text, "echo: after")
      assert.deepStrictEqual(yield* sessions.history(id), [...echo("hello"), ...held, ...echo("queued"), ...echo("after")])
      assert.strictEqual(fs.readFileSync(path.join(dir, "held-hold-on"), "utf8"), owner.slice(5))
      // An abort sent from this process stops the run on the runner that now holds the session.
      const tags: Array<string> = []
      yield* Stream.runForEach(sessions.stream(id, "wait"), (event) => {
        tags.push(event._tag)
        return event._tag === "TurnStart" ? sessions.abort(id) : Effect.void
      })
      assert.deepStrictEqual(tags, ["AgentStart", "TurnStart", "AgentEnd"])
      assert.deepStrictEqual((yield* sessions.run(id, "last")).text, "echo: last")
      return took
    }).pipe(Effect.provide(Runner.layerClient().pipe(Layer.provideMerge(database))))
  })

/** Waits until the cluster's mailbox holds `count` runs of session `id` (polled, 20 ms apart, for at most 10 s). */
const accepted = (id: string, count: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql`SELECT count(*) AS n FROM cluster_messages WHERE entity_id = ${id} AND tag = 'Run'`
    if (Number(row?.["n"]) !== count) return yield* Effect.fail("not yet" as const)
  }).pipe(Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 500 }), Effect.orDie)

describe("ClusterSessions, two runner processes on one SQLite file", () => {
  it.live("kill -9 of the runner streaming a run of which nothing was saved: the stream starts the run again on the other, its turn saved once", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "cluster.db")
      const runners = yield* twoRunners("sqlite", file, dir)
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const id = yield* sessions.start("worker", { id: "y" })
        const tags: Array<string> = []
        const streaming = yield* Effect.forkChild(Stream.runForEach(sessions.stream(id, "hold the stream"), (event) => Effect.sync(() => tags.push(event._tag))))
        const owner = yield* Effect.raceFirst(runners.a.next, runners.b.next)
        yield* (owner === "held a" ? runners.a : runners.b).kill
        yield* Fiber.join(streaming)
        // What the first attempt sent before its runner died (if anything) is cut where the kill fell; the second is whole.
        const again = tags.lastIndexOf("AgentStart")
        assert.deepStrictEqual(tags.slice(again), ["AgentStart", "TurnStart", "TextDelta", "TurnEnd", "AgentEnd"])
        assert.isAtMost(tags.slice(0, again).length, 2)
        assert.deepStrictEqual(yield* sessions.history(id), [Message.user("hold the stream"), Message.assistant([Message.textPart("done: hold the stream")])])
      }).pipe(Effect.provide(Runner.layerClient().pipe(Layer.provide(SqliteClient.layer({ file })))))
    })), 60_000)

  it.live("kill -9 of the runner owning a session: its accepted runs and the next complete on the other, each turn once", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "cluster.db")
      const took = yield* failover("sqlite", file, SqliteClient.layer({ file }))
      yield* Effect.log(`failover on SQLite: ${took} ms`)
    })), 60_000)
})

layer(embeddedPostgres, { excludeTestServices: true, timeout: "90 seconds" })("ClusterSessions, two runner processes on Postgres", (it) => {
  it.effect("kill -9 of the runner owning a session: its accepted runs and the next complete on the other, each turn once", () =>
    Effect.scoped(Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      const took = yield* failover("pg", `${postgres.socketDir}:${database}`, postgres.client(database))
      yield* Effect.log(`failover on Postgres: ${took} ms`)
    })))
})

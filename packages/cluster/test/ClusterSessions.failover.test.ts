/**
 * Sessions that outlive their runner while a tool runs (issue 25, "Must show"): two runner
 * processes (fixtures/runner.ts, a real LocalSandbox and the Bash tool) on a real Postgres
 * (support/embeddedPostgres.ts) and on one SQLite file, this process a client of both. 100
 * sessions are spread over the two; the runner owning sessions `x` and `y` is killed (`kill -9`)
 * while `x`'s run is inside a Bash call (`sleep 1000`) and `y`'s inside a `retrySafe` tool's call.
 * Both runs complete on the other runner: `x`'s call reads as interrupted by a machine failure, `y`'s
 * ran once more (two lines in its side-effect file); each history holds every committed turn once;
 * the dead runner's Bash left no process; the other 98 sessions still answer. An abort sent from
 * one runner stops a run inside a Bash call on the other and kills its process group; so do the
 * caller's interruption, from a third process, and a stop.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Schedule } from "effect"
import type { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Message from "@condukt/core/Message"
import * as Sessions from "@condukt/core/Sessions"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as Runner from "../src/Runner.ts"
import { Processes, TempDir } from "@condukt/testing"
import { EmbeddedPostgres, layer as embeddedPostgres } from "./support/embeddedPostgres.ts"
import { awaitGroupGone, groupOf, parentOf, settled, twoRunners } from "./support/runners.ts"

const tempDir = TempDir.make("condukt-store-")

/** What the model reads for a call whose runner died while it ran (core's journal). */
const INTERRUPTED =
  "Interrupted: the machine running this call failed before the call finished, and the call was not run again. Whatever it did before the failure may or may not have taken effect: check before relying on it."

const SESSIONS = 100

const turn = (prompt: string, reply: string) => [Message.user(prompt), Message.assistant([Message.textPart(reply)])]

/** A run whose one tool call got `result`, then answered `done: <prompt>`. */
const called = (prompt: string, name: string, input: unknown, result: string, isError: boolean) => [
  Message.user(prompt),
  Message.assistant([Message.toolCallPart({ id: "call_1", name, input })]),
  Message.toolResult({ callId: "call_1", name, content: result, isError }),
  Message.assistant([Message.textPart(`done: ${prompt}`)])
]

/** The lines of `file` once it holds `count` of them (polled, 20 ms apart, for at most 10 s). */
const awaitLines = (file: string, count: number) =>
  Effect.suspend(() => {
    const lines = fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").slice(0, -1) : []
    return lines.length >= count ? Effect.succeed(lines) : Effect.fail(`${file}: ${lines.length} lines`)
  }).pipe(Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 500 }))

/** Which runner each session runs on (its model answers `whoami` with the runner's name). */
const whoami = (ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions.ById
    return yield* Effect.forEach(ids, (id) => Effect.map(sessions.run(id, "whoami"), (reply) => reply.text), { concurrency: 25 })
  })

const failover = (kind: "sqlite" | "pg", location: string, dir: string, database: Layer.Layer<SqlClient.SqlClient, unknown>) =>
  Effect.gen(function*() {
    const runners = yield* twoRunners(kind, location, dir)
    yield* settled(runners)
    yield* Effect.gen(function*() {
      const sessions = yield* Sessions.ById
      const ids = Array.from({ length: SESSIONS }, (_, i) => `s${i}`)
      yield* Effect.forEach(ids, (id) => sessions.start("worker", { id }), { concurrency: 25, discard: true })
      const owners = yield* whoami(ids)
      // Spread over both runners.
      assert.deepStrictEqual([...new Set(owners)].sort(), ["a", "b"])
      const victim = owners[0] === "a" ? "a" : "b"
      const survivor = victim === "a" ? "b" : "a"
      const [x, y] = ids.filter((_, i) => owners[i] === victim)
      assert.isDefined(y, `owners: ${owners.join("")}`)
      const bash = yield* Effect.forkChild(sessions.run(x!, "bash x"))
      const safe = yield* Effect.forkChild(sessions.run(y!, "safe y"))
      const shell = yield* Processes.awaitPidFile(path.join(dir, "pid-x"))
      const group = groupOf(shell)
      assert.isDefined(group)
      // Both calls run on the victim: the Bash call's shell is its child, the retrySafe call wrote its name.
      assert.strictEqual(parentOf(shell), runners[victim].pid)
      assert.deepStrictEqual(yield* awaitLines(path.join(dir, "side-y"), 1), [victim])

      yield* runners[victim].kill
      // Nothing the dead runner's tools started is left.
      yield* awaitGroupGone(group!)
      yield* Processes.awaitDeath(shell)

      // Both runs complete on the other runner.
      assert.strictEqual((yield* Fiber.join(bash)).text, "done: bash x")
      assert.strictEqual((yield* Fiber.join(safe)).text, "done: safe y")
      const command = `echo $$ > ${path.join(dir, "pid-x")}; sleep 1000`
      assert.deepStrictEqual(yield* sessions.history(x!), [
        ...turn("whoami", victim),
        ...called("bash x", "Bash", { command }, INTERRUPTED, true)
      ])
      // The retrySafe call ran exactly once more, on the survivor.
      assert.deepStrictEqual(yield* awaitLines(path.join(dir, "side-y"), 2), [victim, survivor])
      assert.deepStrictEqual(yield* sessions.history(y!), [
        ...turn("whoami", victim),
        ...called("safe y", "again", { tag: "y" }, "ran 2 times", false)
      ])
      // Every session answers, from the runner left.
      assert.deepStrictEqual(yield* whoami(ids), ids.map(() => survivor))
      assert.deepStrictEqual(yield* sessions.history(ids.at(-1)!), [...turn("whoami", owners.at(-1)!), ...turn("whoami", survivor)])
    }).pipe(Effect.provide(Runner.layerClient().pipe(Layer.provide(database))))
  })

describe("ClusterSessions, two runner processes on one SQLite file, tools running", () => {
  it.live("kill -9 of the runner inside a Bash call and a retrySafe call: both runs complete on the other, the call interrupted, the retrySafe one run once more, no process left", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "cluster.db")
      yield* failover("sqlite", file, dir, SqliteClient.layer({ file }))
    })), 180_000)

  it.live("an abort sent from one runner stops a run inside a Bash call on the other and kills its process group; so do the caller's interruption and a stop", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "cluster.db")
      const runners = yield* twoRunners("sqlite", file, dir)
      yield* settled(runners)
      yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const ids = Array.from({ length: 10 }, (_, i) => `t${i}`)
        yield* Effect.forEach(ids, (id) => sessions.start("worker", { id }), { concurrency: 10, discard: true })
        const owners = yield* whoami(ids)
        const z = ids[0]!
        // Sent from the runner that does not hold the session.
        const [holder, sender] = owners[0] === "a" ? [runners.a, runners.b] : [runners.b, runners.a]
        const run = yield* Effect.forkChild(sessions.run(z, "bash z"))
        const shell = yield* Processes.awaitPidFile(path.join(dir, "pid-z"))
        const group = groupOf(shell)
        assert.isDefined(group)
        assert.strictEqual(parentOf(shell), holder.pid)
        yield* sender.send(`abort ${z}`)
        assert.strictEqual(yield* sender.next, `aborted ${z}`)
        const exit = yield* Fiber.await(run)
        assert.isTrue(Exit.isFailure(exit), `the run: ${JSON.stringify(exit)}`)
        yield* awaitGroupGone(group!)
        yield* Processes.awaitDeath(shell)
        assert.deepStrictEqual((yield* sessions.history(z)).slice(2), [
          Message.user("bash z"),
          Message.assistant([Message.toolCallPart({ id: "call_1", name: "Bash", input: { command: `echo $$ > ${path.join(dir, "pid-z")}; sleep 1000` } })]),
          Message.toolResult({ callId: "call_1", name: "Bash", content: "Interrupted: the user aborted the run before this call finished", isError: true })
        ])
        assert.strictEqual((yield* sessions.run(z, "after")).text, "echo: after")

        // The caller's interruption, in this process, reaches the run on the holder the same way.
        const interrupted = yield* Effect.forkChild(sessions.run(z, "bash w"))
        const second = yield* Processes.awaitPidFile(path.join(dir, "pid-w"))
        const secondGroup = groupOf(second)
        assert.isDefined(secondGroup)
        assert.strictEqual(parentOf(second), holder.pid)
        yield* Fiber.interrupt(interrupted)
        yield* awaitGroupGone(secondGroup!)
        yield* Processes.awaitDeath(second)
        // The abort reaches the holder after the interruption returns: the next run waits for it.
        assert.strictEqual((yield* sessions.run(z, "after")).text, "echo: after")
        assert.deepStrictEqual((yield* sessions.history(z)).slice(7), [
          Message.user("bash w"),
          Message.assistant([Message.toolCallPart({ id: "call_1", name: "Bash", input: { command: `echo $$ > ${path.join(dir, "pid-w")}; sleep 1000` } })]),
          Message.toolResult({ callId: "call_1", name: "Bash", content: "Interrupted: the user aborted the run before this call finished", isError: true }),
          Message.user("after"),
          Message.assistant([Message.textPart("echo: after")])
        ])

        // And a stop: the run fails, its process group is killed.
        const stopped = yield* Effect.forkChild(sessions.run(z, "bash v"))
        const third = yield* Processes.awaitPidFile(path.join(dir, "pid-v"))
        const thirdGroup = groupOf(third)
        assert.isDefined(thirdGroup)
        yield* sessions.stop(z)
        const outcome = yield* Effect.match(Fiber.join(stopped), { onFailure: (error) => error.message, onSuccess: (reply) => reply.text })
        assert.strictEqual(outcome, `Sessions: session ${z}: the session is stopped`)
        yield* awaitGroupGone(thirdGroup!)
        yield* Processes.awaitDeath(third)
      }).pipe(Effect.provide(Runner.layerSqliteClient({ file })))
    })), 120_000)
})

layer(embeddedPostgres, { excludeTestServices: true, timeout: "90 seconds" })("ClusterSessions, two runner processes on Postgres, tools running", (it) => {
  it.effect("kill -9 of the runner inside a Bash call and a retrySafe call: both runs complete on the other, the call interrupted, the retrySafe one run once more, no process left", () =>
    Effect.scoped(Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      yield* failover("pg", `${postgres.socketDir}:${database}`, yield* tempDir, postgres.client(database))
    })), { timeout: 180_000 })
})

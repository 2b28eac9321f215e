/**
 * Approvals as records outlive their runner (issue 39, "must show"): two runner processes
 * (fixtures/runner.ts) on one SQLite file and on a real Postgres (support/embeddedPostgres.ts),
 * this process a client of both. Sessions on one runner each wait on the approval of a `guarded`
 * call; that runner is killed (`kill -9`). From this process, the `Approvals` service over the
 * cluster's store and the cluster's `Sessions.ById` lists the requests and approves each by id:
 * every run completes on the other runner, each call ran there exactly once (its log file), the
 * audit says who answered, and a second answer is refused.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Schedule } from "effect"
import type { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as path from "node:path"
import * as ApprovalLog from "@condukt/core/ApprovalLog"
import type * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import * as Approvals from "@condukt/core/Approvals"
import * as Message from "@condukt/core/Message"
import * as Sessions from "@condukt/core/Sessions"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as Runner from "../src/Runner.ts"
import * as SqlSessionStore from "../src/SqlSessionStore.ts"
import { TempDir } from "@condukt/testing"
import { EmbeddedPostgres, layer as embeddedPostgres } from "./support/embeddedPostgres.ts"
import { settled, twoRunners } from "./support/runners.ts"

const tempDir = TempDir.make("condukt-store-")

/** Sessions started, spread over the two runners; `WAITING` of the victim's each wait on an approval. */
const SESSIONS = 80
const WAITING = 20

/** Which runner each session runs on (its model answers `whoami` with the runner's name). */
const whoami = (ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions.ById
    return yield* Effect.forEach(ids, (id) => Effect.map(sessions.run(id, "whoami"), (reply) => reply.text), { concurrency: 20 })
  })

/** The fields of a record that do not vary from run to run. */
const stable = ({ answeredAt: _a, id: _i, requestedAt: _r, runId: _u, ...rest }: ApprovalRecord.ApprovalRecord) => rest

/** The request of session `id`'s `guarded` call, as its record keeps it. */
const asked = (id: string) => ({ sessionId: id, agent: "worker", callId: "call_1", tool: "guarded", input: { tag: id }, rule: "needsApproval" })

const bySession = (a: { readonly sessionId: string }, b: { readonly sessionId: string }) => a.sessionId.localeCompare(b.sessionId)

/** The open requests of the log once it lists `count` (polled, 100 ms apart, for at most 20 s). */
const awaitOpen = (approvals: Approvals.Service, count: number) =>
  Effect.flatMap(approvals.list({ limit: 1000 }), (page) => page.records.length >= count ? Effect.succeed(page.records) : Effect.fail(`${page.records.length} open`)).pipe(
    Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 200 })
  )

const killedWhileWaiting = (kind: "sqlite" | "pg", location: string, dir: string, database: Layer.Layer<SqlClient.SqlClient, unknown>) =>
  Effect.gen(function*() {
    const runners = yield* twoRunners(kind, location, dir)
    yield* settled(runners)
    const client = Approvals.layer.pipe(
      Layer.provideMerge(Layer.merge(Runner.layerClient(), SqlSessionStore.layer())),
      Layer.provide(database)
    )
    yield* Effect.gen(function*() {
      const sessions = yield* Sessions.ById
      const approvals = yield* Approvals.Approvals
      const ids = Array.from({ length: SESSIONS }, (_, i) => `q${String(i).padStart(2, "0")}`)
      yield* Effect.forEach(ids, (id) => sessions.start("worker", { id }), { concurrency: 20, discard: true })
      const owners = yield* whoami(ids)
      const victim = owners[0] === "a" ? "a" : "b"
      const survivor = victim === "a" ? "b" : "a"
      const waiting = ids.filter((_, i) => owners[i] === victim).slice(0, WAITING)
      assert.strictEqual(waiting.length, WAITING, `owners: ${owners.join("")}`)
      const runs = yield* Effect.forEach(waiting, (id) => Effect.forkChild(sessions.run(id, `ask ${id}`)))
      const open = yield* awaitOpen(approvals, waiting.length)
      assert.deepStrictEqual(open.map(stable).sort(bySession), waiting.map(asked))

      yield* runners[victim].kill
      assert.match(yield* runners[victim].next, /^exited null: /)
      // Nothing ran on the victim before it died.
      const log = path.join(dir, "guarded.log")
      assert.isFalse(fs.existsSync(log))

      const reason = "the runner died; reviewed"
      const answered = yield* Effect.forEach(open, (record) => approvals.approve(record.id, { by: "ops", reason }))
      assert.deepStrictEqual(answered.map(stable), open.map((record) => ({ ...stable(record), outcome: "approved" as const, by: "ops", reason })))
      // Every run completes on the runner left, each call run there once.
      assert.deepStrictEqual(yield* Effect.forEach(runs, (run) => Effect.map(Fiber.join(run), (reply) => reply.text)), waiting.map((id) => `done: ask ${id}`))
      assert.deepStrictEqual(fs.readFileSync(log, "utf8").split("\n").slice(0, -1).sort(), waiting.map((id) => `${id} call_1 ${survivor}`))
      assert.deepStrictEqual(yield* sessions.history(waiting[0]!), [
        Message.user("whoami"),
        Message.assistant([Message.textPart(victim)]),
        Message.user(`ask ${waiting[0]}`),
        Message.assistant([Message.toolCallPart({ id: "call_1", name: "guarded", input: { tag: waiting[0] } })]),
        Message.toolResult({ callId: "call_1", name: "guarded", content: "ran", isError: false }),
        Message.assistant([Message.textPart(`done: ask ${waiting[0]}`)])
      ])

      const audit = yield* approvals.list({ status: "answered", by: "ops", limit: 1000 })
      assert.deepStrictEqual(audit.records.map(stable), answered.map(stable))
      for (const record of audit.records) assert.isAtLeast(record.answeredAt!, record.requestedAt)
      assert.deepStrictEqual((yield* approvals.list()).records, [])
      const again = yield* Effect.flip(approvals.approve(open[0]!.id, { by: "eve" }))
      assert.deepStrictEqual(again, new ApprovalLog.ApprovalRefused({ id: open[0]!.id, reason: "answered", record: audit.records[0]! }))
    }).pipe(Effect.provide(client))
  })

describe("ClusterSessions, two runner processes on one SQLite file, approvals waiting", () => {
  it.live("kill -9 of the runner whose sessions wait on approvals: listed and approved by id from a client, each call runs once on the other runner; the audit says who", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "cluster.db")
      yield* killedWhileWaiting("sqlite", file, dir, SqliteClient.layer({ file }))
    })), 120_000)
})

layer(embeddedPostgres, { excludeTestServices: true, timeout: "90 seconds" })("ClusterSessions, two runner processes on Postgres, approvals waiting", (it) => {
  it.effect("kill -9 of the runner whose sessions wait on approvals: listed and approved by id from a client, each call runs once on the other runner; the audit says who", () =>
    Effect.scoped(Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      yield* killedWhileWaiting("pg", `${postgres.socketDir}:${database}`, yield* tempDir, postgres.client(database))
    })), { timeout: 120_000 })
})

/**
 * Approvals as records outlive their process (issue 39, "must show"): a child
 * (fixtures/approvals-records-child.ts) starts sessions on a SQLite file, each waiting on the
 * approval of an `rm` call, and is killed with SIGKILL once the store's log lists them all; this
 * process, with fresh layers on the same file, finds the requests in the log and answers them by id
 * through the `Approvals` service, which starts each session from the store. Each call runs once,
 * here (the tool's log file); the audit says who answered; a second answer is refused. A deadline
 * holds across the kill: started after it, the session reads that its request expired, and the call
 * never ran. A tool asking mid-call (`asks: true`) holds across the kill as well: its backup ran
 * in the killed process, its destructive step never did; started by id, each session reads the call
 * as interrupted, or runs a `retrySafe` one again, which asks again and drops once, here.
 */
import { Approval, ApprovalLog, Approvals, type ApprovalRecord, type Message, Model, Sandbox, Session, Sessions } from "@condukt/core"
import { SqliteSessionStore } from "@condukt/node"
import { TempDir, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schedule } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { storeWriter } from "../packages/node/test/sessionStore/processes.ts"
import { guardedAgent, migratingAgent, sessionIds } from "./fixtures/approvals-records-agent.ts"
import { root } from "./support/exec.ts"

const fixture = path.join(root, "test/fixtures/approvals-records-child.ts")

const tempDir = TempDir.make("condukt-approval-records-")

/**
 * A SQLite file and an empty tool log in a temp dir, and the child killed with SIGKILL once its
 * `count` sessions wait, their model calling `tool` (`rm` or `migrate`, with the child's option).
 */
const killedWaiting = (count: number, tool: "rm" | "migrate", ...rest: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const file = path.join(dir, "sessions.db")
    const log = path.join(dir, "tool.log")
    fs.writeFileSync(log, "")
    const child = yield* storeWriter([file, log, String(count), tool, ...rest], fixture)
    assert.strictEqual(yield* child.next, "waiting")
    yield* child.kill
    assert.match(yield* child.next, /^exited null: /)
    return { file, log }
  })

/** The tool log's lines, sorted. */
const logLines = (log: string) => fs.readFileSync(log, "utf8").split("\n").slice(0, -1).sort()

/** The fields of a record that do not vary from run to run. */
const stable = ({ answeredAt: _a, id: _i, requestedAt: _r, runId: _u, expiresAt: _e, ...rest }: ApprovalRecord.ApprovalRecord) => rest

/** An `rm` request of session `sessionId`, as its record keeps it. */
const asked = (sessionId: string) => ({ sessionId, agent: "ops", callId: "c_rm", tool: "rm", input: { path: "/tmp/x" }, rule: "needsApproval" })

/** The tool results the model read in `request`. */
const results = (request: TestModel.RecordedRequest) => request.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))

/** Every open request of the log, a page of `limit` at a time; the pages' sizes beside them. */
const allOpen = (approvals: Approvals.Service, limit: number) =>
  Effect.gen(function*() {
    const records: Array<ApprovalRecord.ApprovalRecord> = []
    const sizes: Array<number> = []
    let cursor: string | undefined
    do {
      const page = yield* approvals.list({ limit, cursor })
      records.push(...page.records)
      sizes.push(page.records.length)
      cursor = page.next
    } while (cursor !== undefined)
    return { records, sizes }
  })

/** A `migrate` request of session `sessionId`, asked mid-call, as its record keeps it. */
const askedMidCall = (sessionId: string) => ({
  sessionId,
  agent: "migrations",
  callId: "c_m",
  tool: "migrate",
  input: { table: "users" },
  rule: "tool",
  summary: "drop table users"
})

const bySession = (a: { readonly sessionId: string }, b: { readonly sessionId: string }) => a.sessionId.localeCompare(b.sessionId)

/** The tool results a session's history keeps. */
const toolResults = (history: ReadonlyArray<Message.Message>) =>
  history.flatMap((m) => (m._tag === "ToolResultMessage" ? [{ callId: m.callId, content: m.content, isError: m.isError }] : []))

/**
 * This process on the killed child's SQLite file: the `migrations` agent (its `migrate` on `log`,
 * `retrySafe` as told) behind `Sessions.ById` and `Approvals`, a model answering each of `count`
 * requests with text.
 */
const resumedMigrations = (file: string, log: string, retrySafe: boolean, count: number) =>
  Approvals.layer.pipe(
    Layer.provideMerge(Sessions.layerById({ migrations: migratingAgent(log, retrySafe) })),
    Layer.provideMerge(Sessions.layer),
    Layer.provideMerge(Layer.mergeAll(
      SqliteSessionStore.layer({ file }),
      TestModel.layer(Array.from({ length: count }, () => TestModel.text("understood"))),
      Sandbox.layerNoop()
    ))
  )

/** Starts each session by id from the store (it resumes its run). */
const startedById = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(Sessions.ById, (byId) => Effect.forEach(ids, (id) => byId.start("migrations", { id }), { discard: true }))

/** Waits until each session is idle. */
const allIdle = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(Sessions.Sessions, (registry) =>
    Effect.forEach(ids, (id) => Effect.flatMap(registry.whereis(id), (found) => Option.getOrThrow(found).idle), { discard: true }))

/** Each session's history: the call's one result, and the model's reply after it (asked once more). */
const historiesRead = (ids: ReadonlyArray<string>, result: { readonly content: string; readonly isError: boolean }) =>
  Effect.gen(function*() {
    const byId = yield* Sessions.ById
    for (const id of ids) {
      const history = yield* byId.history(id)
      assert.deepStrictEqual(toolResults(history), [{ callId: "c_m", ...result }], id)
      assert.deepStrictEqual(history.map((m) => m._tag), ["UserMessage", "AssistantMessage", "ToolResultMessage", "AssistantMessage"], id)
    }
  })

/** `records`, as the log keeps them now: each ended as aborted by the restart. */
const abortedByRestart = (approvals: Approvals.Service, records: ReadonlyArray<ApprovalRecord.ApprovalRecord>) =>
  Effect.forEach(records, (record) =>
    Effect.map(approvals.get(record.id), (ended) => assert.deepStrictEqual(ended, { ...record, outcome: "aborted", by: "restart", answeredAt: ended.answeredAt! })))

describe("approval records across a SIGKILL, on the SQLite store", () => {
  it.live("100 sessions each wait on an approval, their process killed: a new one lists all 100, approves each by id; each call ran once, here; the audit says who; a second answer is refused", () =>
    Effect.scoped(Effect.gen(function*() {
      const ids = sessionIds(100)
      const { file, log } = yield* killedWaiting(ids.length, "rm")
      // No call ran in the killed process.
      assert.strictEqual(fs.readFileSync(log, "utf8"), "")
      const resumed = Approvals.layer.pipe(
        Layer.provideMerge(Sessions.layerById({ ops: guardedAgent(log) })),
        Layer.provideMerge(Sessions.layer),
        Layer.provideMerge(Layer.mergeAll(SqliteSessionStore.layer({ file }), TestModel.layer(ids.map(() => TestModel.text("done"))), Sandbox.layerNoop()))
      )
      yield* Effect.gen(function*() {
        const approvals = yield* Approvals.Approvals
        const open = yield* allOpen(approvals, 30)
        assert.deepStrictEqual(open.sizes, [30, 30, 30, 10])
        assert.deepStrictEqual(open.records.map(stable).sort((a, b) => a.sessionId.localeCompare(b.sessionId)), ids.map(asked))

        const reason = "reviewed after the crash"
        const answered = yield* Effect.forEach(open.records, (record) => approvals.approve(record.id, { by: "ops", reason }))
        assert.deepStrictEqual(answered.map(stable), open.records.map((record) => ({ ...stable(record), outcome: "approved" as const, by: "ops", reason })))
        const registry = yield* Sessions.Sessions
        for (const id of ids) yield* Effect.flatMap(registry.whereis(id), (found) => Option.getOrThrow(found).idle)

        // Each session's call ran exactly once, in this process.
        assert.deepStrictEqual(logLines(log), ids.map((id) => `${id} c_rm`))
        // Each run went on: the model read the call's result, once per session.
        const requests = yield* TestModel.TestModel.use((recorder) => recorder.requests)
        assert.deepStrictEqual(requests.map(results), ids.map(() => ["removed"]))

        const audit = yield* approvals.list({ status: "answered", by: "ops", limit: 1000 })
        assert.deepStrictEqual(audit.records.map(stable), answered.map(stable))
        for (const record of audit.records) assert.isAtLeast(record.answeredAt!, record.requestedAt)
        assert.deepStrictEqual((yield* approvals.list()).records, [])

        const again = yield* Effect.flip(approvals.approve(open.records[0]!.id, { by: "eve", reason: "once more" }))
        assert.deepStrictEqual(again, new ApprovalLog.ApprovalRefused({ id: open.records[0]!.id, reason: "answered", record: audit.records[0]! }))
      }).pipe(Effect.provide(resumed))
    })), 60_000)

  it.live("a deadline holds across a SIGKILL: past it, an approval is refused as expired, and a session started by id reads that its request expired; no call ran", () =>
    Effect.scoped(Effect.gen(function*() {
      const rules: Approval.Rules = { expires: "2 seconds" }
      const { file, log } = yield* killedWaiting(2, "rm", "2 seconds")
      assert.strictEqual(fs.readFileSync(log, "utf8"), "")
      const { model, recorder } = yield* TestModel.make([TestModel.text("understood"), TestModel.text("understood")])
      const resumed = Approvals.layer.pipe(
        Layer.provideMerge(Sessions.layerById({ ops: guardedAgent(log, rules) })),
        Layer.provideMerge(Sessions.layer),
        Layer.provideMerge(Layer.mergeAll(SqliteSessionStore.layer({ file }), Layer.succeed(Model.Model, model), Sandbox.layerNoop()))
      )
      yield* Effect.gen(function*() {
        const approvals = yield* Approvals.Approvals
        const open = (yield* approvals.list()).records
        assert.deepStrictEqual(open.map(stable).sort((a, b) => a.sessionId.localeCompare(b.sessionId)), [asked("s000"), asked("s001")])
        for (const record of open) assert.strictEqual(record.expiresAt, record.requestedAt + 2_000)
        // The log judges a request open until its deadline: polled until it lists none.
        yield* Effect.suspend(() => Effect.flatMap(approvals.list(), (page) => page.records.length === 0 ? Effect.void : Effect.fail("open"))).pipe(
          Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 100 })
        )
        const [first, second] = [open.find((r) => r.sessionId === "s000")!, open.find((r) => r.sessionId === "s001")!]

        // s001: an approval past the deadline is refused, and the audit says the request expired.
        const refused = yield* Effect.flip(approvals.approve(second.id, { by: "ops", reason: "too late" }))
        assert.deepStrictEqual(refused, new ApprovalLog.ApprovalRefused({ id: second.id, reason: "expired", record: second }))
        const recorded = yield* approvals.get(second.id)
        assert.deepStrictEqual(recorded, { ...second, outcome: "expired", by: "expiry", answeredAt: recorded.answeredAt! })

        // Both sessions started by id: each run goes on, the model reading that the request expired.
        const registry = yield* Sessions.Sessions
        const byId = yield* Sessions.ById
        for (const id of ["s000", "s001"]) {
          yield* byId.start("ops", { id })
          yield* Effect.flatMap(registry.whereis(id), (found) => Option.getOrThrow(found).idle)
          assert.deepStrictEqual(yield* byId.pending(id), [])
        }
        assert.deepStrictEqual((yield* recorder.requests).map(results), [[Approval.deniedByExpiry(first.expiresAt!)], [Approval.deniedByExpiry(second.expiresAt!)]])
        assert.strictEqual(fs.readFileSync(log, "utf8"), "")
        const expired = yield* approvals.get(first.id)
        assert.deepStrictEqual(expired, { ...first, outcome: "expired", by: "expiry", answeredAt: expired.answeredAt! })
        for (const record of [expired, recorded]) assert.isAtLeast(record.answeredAt!, record.expiresAt!)
      }).pipe(Effect.provide(resumed))
    })), 60_000)

  it.live("a tool asking mid-call, its process killed while 10 sessions wait on it: started by id, each call reads that it was interrupted; the drop never ran; each first record ends, aborted by restart", () =>
    Effect.scoped(Effect.gen(function*() {
      const ids = sessionIds(10)
      const { file, log } = yield* killedWaiting(ids.length, "migrate")
      // Each backup ran in the killed process; no drop did.
      assert.deepStrictEqual(logLines(log), ids.map((id) => `backup ${id}`))
      yield* Effect.gen(function*() {
        const approvals = yield* Approvals.Approvals
        const first = (yield* approvals.list()).records
        assert.deepStrictEqual(first.map(stable).sort(bySession), ids.map(askedMidCall))

        yield* startedById(ids)
        yield* allIdle(ids)
        // The call never ran again: neither a second backup nor a drop.
        assert.deepStrictEqual(logLines(log), ids.map((id) => `backup ${id}`))
        yield* historiesRead(ids, { content: Session.INTERRUPTED_RESULT, isError: true })
        const requests = yield* TestModel.TestModel.use((recorder) => recorder.requests)
        assert.deepStrictEqual(requests.map(results), ids.map(() => [Session.INTERRUPTED_RESULT]))
        yield* abortedByRestart(approvals, first)
        assert.deepStrictEqual((yield* approvals.list()).records, [])
      }).pipe(Effect.provide(resumedMigrations(file, log, false, ids.length)))
    })), 60_000)

  it.live("a retrySafe tool asking mid-call, its process killed while 10 sessions wait on it: started by id, each call runs again and asks again; approved by id, each drops once; the first record aborted by restart, the second approved by dba", () =>
    Effect.scoped(Effect.gen(function*() {
      const ids = sessionIds(10)
      const { file, log } = yield* killedWaiting(ids.length, "migrate", "retrySafe")
      assert.deepStrictEqual(logLines(log), ids.map((id) => `backup ${id}`))
      yield* Effect.gen(function*() {
        const approvals = yield* Approvals.Approvals
        const first = (yield* approvals.list()).records
        assert.deepStrictEqual(first.map(stable).sort(bySession), ids.map(askedMidCall))
        const firstIds = new Set(first.map((record) => record.id))

        yield* startedById(ids)
        // Each call runs again and asks again: polled until the log lists only the new requests.
        const second = yield* Effect.suspend(() =>
          Effect.flatMap(approvals.list(), (page) =>
            page.records.length === ids.length && page.records.every((record) => !firstIds.has(record.id)) ? Effect.succeed(page.records) : Effect.fail("asking"))
        ).pipe(Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 500 }))
        assert.deepStrictEqual(second.map(stable).sort(bySession), ids.map(askedMidCall))
        assert.deepStrictEqual(logLines(log), [...ids, ...ids].map((id) => `backup ${id}`).sort())
        const answered = yield* Effect.forEach(second, (record) => approvals.approve(record.id, { by: "dba" }))
        assert.deepStrictEqual(answered.map(stable), second.map((record) => ({ ...stable(record), outcome: "approved" as const, by: "dba" })))
        yield* allIdle(ids)

        // Exactly one drop per session, in this process.
        assert.deepStrictEqual(logLines(log), [...ids.map((id) => `backup ${id}`), ...ids.map((id) => `backup ${id}`), ...ids.map((id) => `drop ${id}`)].sort())
        yield* historiesRead(ids, { content: "dropped users", isError: false })
        const requests = yield* TestModel.TestModel.use((recorder) => recorder.requests)
        assert.deepStrictEqual(requests.map(results), ids.map(() => ["dropped users"]))
        yield* abortedByRestart(approvals, first)
        for (const record of answered) assert.deepStrictEqual(yield* approvals.get(record.id), record)
        assert.deepStrictEqual((yield* approvals.list()).records, [])
      }).pipe(Effect.provide(resumedMigrations(file, log, true, ids.length)))
    })), 60_000)
})

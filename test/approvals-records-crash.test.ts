/**
 * Approvals as records outlive their process (issue 39, "must show"): a child
 * (fixtures/approvals-records-child.ts) starts sessions on a SQLite file, each waiting on the
 * approval of an `rm` call, and is killed with SIGKILL once the store's log lists them all; this
 * process, with fresh layers on the same file, finds the requests in the log and answers them by id
 * through the `Approvals` service, which starts each session from the store. Each call runs once,
 * here (the tool's log file); the audit says who answered; a second answer is refused. A deadline
 * holds across the kill: started after it, the session reads that its request expired, and the call
 * never ran.
 */
import { Approval, ApprovalLog, Approvals, type ApprovalRecord, Model, Sandbox, Sessions } from "@condukt/core"
import { SqliteSessionStore } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schedule } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { storeWriter } from "../packages/node/test/sessionStore/processes.ts"
import { guardedAgent, sessionIds } from "./fixtures/approvals-records-agent.ts"
import { root } from "./support/exec.ts"

const fixture = path.join(root, "test/fixtures/approvals-records-child.ts")

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "condukt-approval-records-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A SQLite file and an empty tool log in a temp dir, and the child killed with SIGKILL once its `count` sessions wait. */
const killedWaiting = (count: number, ...rest: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const file = path.join(dir, "sessions.db")
    const log = path.join(dir, "rm.log")
    fs.writeFileSync(log, "")
    const child = yield* storeWriter([file, log, String(count), ...rest], fixture)
    assert.strictEqual(yield* child.next, "waiting")
    yield* child.kill
    assert.match(yield* child.next, /^exited null: /)
    // No call ran in the killed process.
    assert.strictEqual(fs.readFileSync(log, "utf8"), "")
    return { file, log }
  })

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

describe("approval records across a SIGKILL, on the SQLite store", () => {
  it.live("100 sessions each wait on an approval, their process killed: a new one lists all 100, approves each by id; each call ran once, here; the audit says who; a second answer is refused", () =>
    Effect.scoped(Effect.gen(function*() {
      const ids = sessionIds(100)
      const { file, log } = yield* killedWaiting(ids.length)
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
        assert.deepStrictEqual(fs.readFileSync(log, "utf8").split("\n").slice(0, -1).sort(), ids.map((id) => `${id} c_rm`))
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
      const { file, log } = yield* killedWaiting(2, "2 seconds")
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
})

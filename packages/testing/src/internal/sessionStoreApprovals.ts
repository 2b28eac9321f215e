/**
 * What every store's approval log must do (`SessionStore.Service.approvals`), as one suite each
 * backend's test file runs, the memory store's included: a save indexes its batch's records, and
 * `put` records no save carries; `get` and `list` find them oldest first in pages with a cursor,
 * filtered by status, session, agent prefix, tool, answerer, time and shadow; `answer` records once
 * and refuses by reason; neither a save nor a put reopens an answered record; an id the logs do not
 * keep is refused by both and unknown to `get` and `answer`; retention drops old answers; a hostile
 * answerer or tool name is data; 10,000 open records page through whole.
 */
import { assert, it, type Vitest } from "@effect/vitest"
import { Clock, Effect, Option, type Scope } from "effect"
import type * as ApprovalLog from "@condukt/core/ApprovalLog"
import type * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import type * as SessionStore from "@condukt/core/SessionStore"
import { snapshot } from "./sessionStoreFixtures.ts"

/** Record `n`: its id sorts as `n` does; session s1, agent main, tool rm, requested at 1,000 + n. */
export const record = (n: number, fields: Partial<ApprovalRecord.ApprovalRecord> = {}): ApprovalRecord.ApprovalRecord => ({
  id: `01900000-0000-7000-8000-${String(n).padStart(12, "0")}`,
  sessionId: "s1",
  agent: "main",
  callId: `c${n}`,
  tool: "rm",
  input: { path: `/tmp/${n}` },
  rule: "ask: rm",
  requestedAt: 1_000 + n,
  ...fields
})

/** A snapshot of `sessionId` whose batch holds `records`. */
export const waiting = (sessionId: string, records: ReadonlyArray<ApprovalRecord.ApprovalRecord>) =>
  snapshot(sessionId, 1, {
    batch: { waiting: records.map((r) => ({ callId: r.callId, tool: r.tool, input: r.input })), results: [], started: [], approvals: records }
  })

const HOSTILE = "'; DROP TABLE condukt_approvals; --"

/** The store's log (the suite's stores all keep one). */
const logOf = (store: SessionStore.Service): ApprovalLog.Service<SessionStore.SessionStoreError> => {
  assert.isDefined(store.approvals)
  return store.approvals!
}

const ids = (page: ApprovalLog.Page) => page.records.map((r) => r.callId)

/**
 * Runs the suite against the store `use` gives (a fresh one per test, with the options given), each
 * case with `test`: `it.live` by default, or the `it.effect` of a shared layer (a server).
 */
export const approvalConformance = <R = never>(
  use: <A, E>(
    f: (store: SessionStore.Service) => Effect.Effect<A, E>,
    options?: { readonly approvalRetention?: number }
  ) => Effect.Effect<A, E | SessionStore.SessionStoreError, R>,
  test: Vitest.Tester<R | Scope.Scope> = it.live as Vitest.Tester<R | Scope.Scope>
) => {
  test("a save indexes its batch's records: get finds each, list gives the open ones oldest first", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        assert.deepStrictEqual(yield* log.list(), { records: [] })
        yield* store.save(waiting("s1", [record(3), record(1), record(2)]))
        assert.deepStrictEqual(yield* log.list({ now: 2_000 }), { records: [record(1), record(2), record(3)] })
        assert.deepStrictEqual(yield* log.get(record(2).id), Option.some(record(2)))
        assert.isTrue(Option.isNone(yield* log.get(record(9).id)))
        // The snapshot loads back with its records.
        assert.deepStrictEqual(yield* store.load("s1"), Option.some(waiting("s1", [record(3), record(1), record(2)])))
      })
    ))

  test("answer records once; a second answer, an unknown id, a passed deadline and a shadow record are refused by reason", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        yield* store.save(waiting("s1", [record(1), record(2, { expiresAt: 1_100 }), record(3, { shadow: { policy: "p", decision: "allow" } })]))
        const done = yield* log.answer(record(1).id, "approved", 1_060, { by: "ana", reason: "fine" })
        assert.deepStrictEqual(done, { ...record(1), outcome: "approved", answeredAt: 1_060, by: "ana", reason: "fine" })
        assert.deepStrictEqual(yield* log.get(record(1).id), Option.some(done))
        const twice = yield* Effect.flip(log.answer(record(1).id, "denied", 1_070))
        assert.deepStrictEqual(
          [twice._tag, twice.reason, twice.message],
          ["ApprovalRefused", "answered", `approval ${record(1).id} was answered already: approved by "ana" at 1970-01-01T00:00:01.060Z`]
        )
        const refusals = yield* Effect.forEach(
          [
            log.answer(record(9).id, "approved", 1_070),
            log.answer(record(2).id, "approved", 1_100),
            log.answer(record(3).id, "approved", 1_070),
            log.answer("../../../etc/passwd", "approved", 1_070),
            log.answer(HOSTILE, "approved", 1_070)
          ],
          (answer) => Effect.map(Effect.flip(answer), (refused) => refused.reason)
        )
        assert.deepStrictEqual(refusals, ["unknown", "expired", "unknown", "unknown", "unknown"])
        assert.isTrue(Option.isNone(yield* log.get("../../../etc/passwd")))
        // Its expiry is still taken, once.
        assert.strictEqual((yield* log.answer(record(2).id, "expired", 1_100, { by: "expiry" })).outcome, "expired")
        assert.strictEqual((yield* Effect.flip(log.answer(record(2).id, "aborted", 1_200))).reason, "answered")
        assert.deepStrictEqual(yield* log.list({ now: 1_000 }), { records: [] })
      })
    ))

  test("a save that still has a record open never reopens it once answered; a save answering it records that", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        yield* store.save(waiting("s1", [record(1), record(2)]))
        const done = yield* log.answer(record(1).id, "denied", 1_010, { by: "bo" })
        yield* store.save(waiting("s1", [record(1), record(2)]), { appended: 0 })
        assert.deepStrictEqual(yield* log.get(record(1).id), Option.some(done))
        assert.deepStrictEqual(ids(yield* log.list({ now: 1_020 })), ["c2"])
        const answered = { ...record(2), outcome: "approved" as const, answeredAt: 1_030, by: "rules" }
        yield* store.save(waiting("s1", [record(1), answered]), { appended: 0 })
        assert.deepStrictEqual(yield* log.get(record(2).id), Option.some(answered))
        assert.deepStrictEqual(yield* log.list({ now: 1_040 }), { records: [] })
      })
    ))

  test("list gives the newest first when asked, its cursor paging on in that order, with the filters", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        yield* store.save(waiting("s1", [
          record(1),
          record(2, { outcome: "approved", answeredAt: 1_100, by: "ana" }),
          record(3),
          record(4, { outcome: "denied", answeredAt: 1_200, by: "bo" }),
          record(5)
        ]))
        const now = 1_300
        const first = yield* log.list({ order: "newest", status: "all", limit: 2, now })
        assert.deepStrictEqual([ids(first), first.next], [["c5", "c4"], record(4).id])
        const second = yield* log.list({ order: "newest", status: "all", limit: 2, cursor: first.next, now })
        assert.deepStrictEqual([ids(second), second.next], [["c3", "c2"], record(2).id])
        const last = yield* log.list({ order: "newest", status: "all", limit: 2, cursor: second.next, now })
        assert.deepStrictEqual([ids(last), last.next], [["c1"], undefined])
        assert.deepStrictEqual(ids(yield* log.list({ order: "newest", status: "answered", now })), ["c4", "c2"])
        assert.deepStrictEqual(ids(yield* log.list({ order: "newest", now })), ["c5", "c3", "c1"])
        assert.deepStrictEqual(ids(yield* log.list({ order: "oldest", now })), ["c1", "c3", "c5"])
      })
    ))

  test("list pages with a cursor and filters by status, session, agent prefix, tool, answerer, time and shadow", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        yield* store.save(waiting("s1", [
          record(1),
          record(2, { agent: "main/researcher", tool: "curl" }),
          record(3, { agent: "mainframe" }),
          record(4, { outcome: "approved", answeredAt: 2_000, by: "ana" }),
          record(5, { expiresAt: 1_500 }),
          record(6, { shadow: { policy: "trial", decision: "deny" }, outcome: "approved", answeredAt: 1_006, by: "rules" })
        ]))
        yield* store.save(waiting("s2", [record(7, { sessionId: "s2", agent: "main/researcher/deep" })]))
        const now = 1_600
        const first = yield* log.list({ limit: 2, now })
        assert.deepStrictEqual([ids(first), first.next], [["c1", "c2"], record(2).id])
        const second = yield* log.list({ limit: 2, cursor: first.next, now })
        // The last page, full or not, has no next.
        assert.deepStrictEqual([ids(second), second.next], [["c3", "c7"], undefined])
        assert.deepStrictEqual(ids(yield* log.list({ now: 1_400 })), ["c1", "c2", "c3", "c5", "c7"])
        assert.deepStrictEqual(ids(yield* log.list({ status: "all", now })), ["c1", "c2", "c3", "c4", "c5", "c7"])
        assert.deepStrictEqual(ids(yield* log.list({ status: "answered", now })), ["c4"])
        assert.deepStrictEqual(ids(yield* log.list({ sessionId: "s2", status: "all", now })), ["c7"])
        assert.deepStrictEqual(ids(yield* log.list({ agent: "main", now })), ["c1", "c2", "c7"])
        assert.deepStrictEqual(ids(yield* log.list({ agent: "main/researcher", now })), ["c2", "c7"])
        assert.deepStrictEqual(ids(yield* log.list({ agent: "main/res", now })), [])
        assert.deepStrictEqual(ids(yield* log.list({ tool: "curl", now })), ["c2"])
        assert.deepStrictEqual(ids(yield* log.list({ by: "ana", status: "all", now })), ["c4"])
        assert.deepStrictEqual(ids(yield* log.list({ since: 1_002, until: 1_005, status: "all", now })), ["c2", "c3", "c4"])
        assert.deepStrictEqual(ids(yield* log.list({ shadow: true, status: "all", now })), ["c6"])
        assert.deepStrictEqual(ids(yield* log.list({ shadow: true, now })), [])
        // A page size past the bounds is held to them.
        assert.deepStrictEqual(ids(yield* log.list({ limit: 0, status: "all", now })), ["c1"])
      })
    ))

  test("answered records older than the retention are dropped by a save; newer ones and open ones are kept", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        const now = yield* Clock.currentTimeMillis
        const old = record(1, { requestedAt: now - 200_000, outcome: "denied", answeredAt: now - 120_000, by: "bo" })
        const recent = record(2, { requestedAt: now - 2_000, outcome: "approved", answeredAt: now - 1_000, by: "ana" })
        const open = record(3, { requestedAt: now })
        yield* store.save(waiting("s1", [old, recent, open]))
        assert.deepStrictEqual(
          yield* Effect.forEach([old, recent, open], (r) => Effect.map(log.get(r.id), Option.isSome)),
          [false, true, true]
        )
      }), { approvalRetention: 60_000 }))

  test("a hostile answerer or tool name is stored, listed and matched as data", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        yield* store.save(waiting("s1", [record(1, { tool: HOSTILE, agent: `main/${HOSTILE}` }), record(2)]))
        const done = yield* log.answer(record(2).id, "approved", 1_100, { by: HOSTILE, reason: HOSTILE })
        assert.deepStrictEqual([done.by, done.reason], [HOSTILE, HOSTILE])
        assert.deepStrictEqual(ids(yield* log.list({ by: HOSTILE, status: "answered", now: 1_200 })), ["c2"])
        assert.deepStrictEqual(ids(yield* log.list({ tool: HOSTILE, now: 1_200 })), ["c1"])
        assert.deepStrictEqual(ids(yield* log.list({ agent: `main/${HOSTILE}`, now: 1_200 })), ["c1"])
        assert.deepStrictEqual(ids(yield* log.list({ sessionId: HOSTILE, status: "all", now: 1_200 })), [])
        assert.isTrue(Option.isNone(yield* log.get(HOSTILE)))
        // The table is still there: another save indexes, and both are listed.
        yield* store.save(waiting("s2", [record(3, { sessionId: "s2" })]))
        assert.deepStrictEqual(ids(yield* log.list({ status: "all", now: 1_200 })), ["c1", "c2", "c3"])
      })
    ))

  test("put indexes records no save carries: a shadow record is listed with shadow, never open; a sub-agent's request is open and answered", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        const shadow = record(1, { shadow: { policy: "trial", decision: "deny" }, outcome: "approved", answeredAt: 1_001, by: "rules" })
        const asked = record(2, { agent: "main/researcher" })
        yield* log.put([shadow, asked])
        assert.deepStrictEqual(yield* log.list({ shadow: true, status: "all", now: 1_100 }), { records: [shadow] })
        assert.deepStrictEqual(yield* log.list({ now: 1_100 }), { records: [asked] })
        assert.deepStrictEqual(yield* log.get(shadow.id), Option.some(shadow))
        assert.strictEqual((yield* Effect.flip(log.answer(shadow.id, "approved", 1_100))).reason, "unknown")
        const done = yield* log.answer(asked.id, "approved", 1_100, { by: "ana" })
        assert.deepStrictEqual(yield* log.get(asked.id), Option.some(done))
        // An empty put writes nothing and succeeds.
        yield* log.put([])
        assert.deepStrictEqual(ids(yield* log.list({ status: "all", now: 1_100 })), ["c2"])
      })
    ))

  test("put never reopens an answered record; a put answering it records that; of one id put twice, the last is kept", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        yield* store.save(waiting("s1", [record(1), record(2)]))
        const done = yield* log.answer(record(1).id, "denied", 1_010, { by: "bo" })
        yield* log.put([record(1), record(2, { tool: "first" }), record(2, { tool: "last" })])
        assert.deepStrictEqual(yield* log.get(record(1).id), Option.some(done))
        assert.deepStrictEqual(yield* log.get(record(2).id), Option.some(record(2, { tool: "last" })))
        assert.deepStrictEqual(ids(yield* log.list({ now: 1_020 })), ["c2"])
        const answered = record(2, { outcome: "expired", answeredAt: 1_030, by: "expiry" })
        yield* log.put([answered])
        assert.deepStrictEqual(yield* log.get(record(2).id), Option.some(answered))
        // A save that still has them open reopens neither.
        yield* store.save(waiting("s1", [record(1), record(2)]), { appended: 0 })
        assert.deepStrictEqual(yield* log.list({ now: 1_040 }), { records: [] })
      })
    ))

  test("an id the logs do not keep is refused by put and by save, nothing written, and unknown to get and answer", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        for (const id of ["../../etc/passwd", HOSTILE, "X", "", "-a", "a".repeat(129), `${record(1).id}/..`]) {
          const rule = `(its id ${JSON.stringify(id)} is not one a store keeps (1 to 128 lowercase letters, digits, - and _, a letter or a digit first))`
          const put = yield* Effect.flip(log.put([record(1), record(2, { id })]))
          assert.deepStrictEqual([put.method, put.reason._tag, put.message], ["put", "Corrupt", `SessionStore.put: at ${put.location}: not an approval record ${rule}`])
          const save = yield* Effect.flip(store.save(waiting("s1", [record(1), record(2, { id })])))
          assert.deepStrictEqual(
            [save.method, save.reason._tag, save.message],
            ["save", "Corrupt", `SessionStore.save: session s1 at ${save.location}: not an approval record ${rule}`]
          )
          assert.isTrue(Option.isNone(yield* log.get(id)))
          assert.strictEqual((yield* Effect.flip(log.answer(id, "approved", 1_100))).reason, "unknown")
        }
        assert.isTrue(Option.isNone(yield* store.load("s1")))
        assert.deepStrictEqual(yield* log.list({ status: "all", now: 1_100 }), { records: [] })
        // The longest id kept is kept.
        yield* log.put([record(1, { id: "a".repeat(128) })])
        assert.deepStrictEqual(ids(yield* log.list({ now: 1_000 })), ["c1"])
      })
    ))

  test("10,000 open records, saved by 100 sessions, are listed whole in pages of 1,000 and the first page of 100 has a next", () =>
    use((store) =>
      Effect.gen(function*() {
        const log = logOf(store)
        for (let s = 0; s < 100; s++) {
          const records = Array.from({ length: 100 }, (_, i) => record(s * 100 + i, { sessionId: `s${s}`, input: { n: s * 100 + i } }))
          yield* store.save(waiting(`s${s}`, records))
        }
        const first = yield* log.list({ limit: 100, now: 1_000 })
        assert.deepStrictEqual([first.records.length, first.next], [100, record(99).id])
        const seen: Array<string> = []
        let cursor: string | undefined
        do {
          const page = yield* log.list({ limit: 1_000, cursor, now: 1_000 })
          seen.push(...page.records.map((r) => r.id))
          cursor = page.next
        } while (cursor !== undefined)
        assert.deepStrictEqual(seen, Array.from({ length: 10_000 }, (_, n) => record(n).id))
      })
    ), 120_000)
}

import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as ApprovalLog from "../src/ApprovalLog.ts"
import * as ApprovalRecord from "../src/ApprovalRecord.ts"

const record = (n: number, fields: Partial<ApprovalRecord.ApprovalRecord> = {}): ApprovalRecord.ApprovalRecord => ({
  id: `0190000${String(n).padStart(5, "0")}`,
  sessionId: `s${n % 3}`,
  agent: n % 2 === 0 ? "main" : "main/researcher",
  callId: `c${n}`,
  tool: n % 2 === 0 ? "rm" : "curl",
  input: { n },
  rule: "ask: rm",
  requestedAt: 1_000 + n,
  ...fields
})

describe("ApprovalLog in memory", () => {
  it.effect("lists open records oldest first in pages, filtered by session, agent prefix, tool and time", () =>
    Effect.gen(function*() {
      const log = ApprovalLog.make()
      log.index([record(3), record(1), record(2), record(4, { outcome: "approved", answeredAt: 2_000, by: "ana" })], 1_500)
      const first = yield* log.list({ limit: 2, now: 1_500 })
      assert.deepStrictEqual(first.records.map((r) => r.callId), ["c1", "c2"])
      const second = yield* log.list({ limit: 2, cursor: first.next, now: 1_500 })
      assert.deepStrictEqual([second.records.map((r) => r.callId), second.next], [["c3"], undefined])
      assert.deepStrictEqual((yield* log.list({ agent: "main", status: "all", now: 1_500 })).records.length, 4)
      assert.deepStrictEqual((yield* log.list({ agent: "main/researcher", now: 1_500 })).records.map((r) => r.callId), ["c1", "c3"])
      assert.deepStrictEqual((yield* log.list({ tool: "rm", status: "answered", by: "ana", now: 1_500 })).records.map((r) => r.callId), ["c4"])
      assert.deepStrictEqual((yield* log.list({ since: 1_002, until: 1_004, status: "all", now: 1_500 })).records.map((r) => r.callId), ["c2", "c3"])
    }))

  it.effect("answers once: a second answer, an unknown id and a passed deadline are refused by name", () =>
    Effect.gen(function*() {
      const log = ApprovalLog.make()
      log.index([record(1), record(2, { expiresAt: 1_100 })], 1_050)
      const done = yield* log.answer(record(1).id, "approved", 1_060, { by: "ana", reason: "x".repeat(10_000) })
      assert.deepStrictEqual([done.outcome, done.by, done.answeredAt, done.reason?.length], ["approved", "ana", 1_060, ApprovalRecord.MAX_TEXT_CHARS])
      const twice = yield* Effect.flip(log.answer(record(1).id, "denied", 1_070))
      assert.deepStrictEqual([twice.reason, twice.message], ["answered", `approval ${record(1).id} was answered already: approved by "ana" at 1970-01-01T00:00:01.060Z`])
      assert.strictEqual((yield* Effect.flip(log.answer("nope", "approved", 1_070))).reason, "unknown")
      assert.strictEqual((yield* Effect.flip(log.answer(record(2).id, "approved", 1_100))).reason, "expired")
      // Its expiry is still taken.
      assert.strictEqual((yield* log.answer(record(2).id, "expired", 1_100, { by: "expiry" })).outcome, "expired")
      assert.deepStrictEqual((yield* log.list({ now: 1_000 })).records, [])
    }))

  it.effect("a save that still has a record open does not reopen it; retention drops answered records once old enough", () =>
    Effect.gen(function*() {
      const log = ApprovalLog.make({ retention: 1_000 })
      log.index([record(1), record(2)], 1_000)
      yield* log.answer(record(1).id, "denied", 1_010, { by: "bo" })
      log.index([record(1), record(2)], 1_020)
      assert.strictEqual(Option.getOrThrow(yield* log.get(record(1).id)).outcome, "denied")
      log.index([], 2_011)
      assert.isTrue(Option.isNone(yield* log.get(record(1).id)))
      assert.isTrue(Option.isSome(yield* log.get(record(2).id)))
    }))

  it.effect("put indexes as a save does, and refuses a record whose id no log keeps, indexing none of them", () =>
    Effect.gen(function*() {
      const log = ApprovalLog.make()
      const error = yield* Effect.flip(log.put([record(1), record(2, { id: "../x" })]))
      assert.strictEqual(
        error.message,
        `SessionStore.put: at memory: not an approval record (its id "../x" is not one a store keeps (1 to 128 lowercase letters, digits, - and _, a letter or a digit first))`
      )
      assert.deepStrictEqual((yield* log.list({ status: "all", now: 1_500 })).records, [])
      yield* log.put([record(1)])
      assert.deepStrictEqual((yield* log.list({ now: 1_500 })).records, [record(1)])
    }))

  it("an id is kept when it is 1 to 128 lowercase letters, digits, - and _, a letter or a digit first", () => {
    assert.deepStrictEqual(
      ["01900000-0000-7000-8000-000000000001", "a", "9_x-y", "a".repeat(128)].map(ApprovalLog.isKeptId),
      [true, true, true, true]
    )
    assert.deepStrictEqual(["", "-a", "_a", "A", "a.json", "a/b", "../a", "a\u0000", "a".repeat(129)].map(ApprovalLog.isKeptId), Array(9).fill(false))
  })

  it("a record keeps an input past its bound as a sentence saying so", () => {
    assert.deepStrictEqual(ApprovalRecord.boundedInput({ a: 1 }), { a: 1 })
    const kept = ApprovalRecord.boundedInput({ blob: "x".repeat(10 * 1024 * 1024) })
    assert.match(String(kept), /^\[input not kept: it holds .*; the session's history has the call\]$/)
  })
})

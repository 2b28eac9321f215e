import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SecureRandom } from "effect/crypto"
import { TestClock } from "effect/testing"
import * as uuid7 from "../src/Uuid7.ts"

describe("uuid7", () => {
  it.effect("makes RFC 9562 version 7 ids that sort by creation time", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 10, 22))
      const first = yield* uuid7.make
      yield* TestClock.adjust("1 millis")
      const second = yield* uuid7.make
      for (const id of [first, second]) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      assert.strictEqual(first.slice(0, 13).replace("-", ""), Date.UTC(2026, 10, 22).toString(16).padStart(12, "0"))
      assert.isTrue(first < second)
    }).pipe(
      // A generator of its own: the fallback is one per process and never goes back in time, so
      // after another file made an id at today's date its ids would carry that date, not the clock's.
      Effect.provideService(SecureRandom.SecureRandom, SecureRandom.make((size) => crypto.getRandomValues(new Uint8Array(size))))
    ))

  it.effect("ids made within one millisecond still sort by creation, past the 4,096 the counter holds", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 10, 22))
      const ids: Array<string> = []
      for (let i = 0; i < 10_000; i++) ids.push(yield* uuid7.make)
      assert.deepStrictEqual([...ids].sort(), ids)
      assert.strictEqual(new Set(ids).size, 10_000)
      for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    }))

  it.effect("the process's own generator stamps the Clock's time, and never goes back when the clock does", () =>
    Effect.gen(function*() {
      // The real time, not one ahead of it: the generator is the process's (unit files share a
      // worker), and a later date would stamp every id made after this test.
      const later = Date.now()
      yield* TestClock.setTime(later)
      const first = yield* uuid7.make
      assert.strictEqual(first.slice(0, 13).replace("-", ""), later.toString(16).padStart(12, "0"))
      yield* TestClock.setTime(later - 60_000)
      const second = yield* uuid7.make
      assert.isTrue(first < second)
      assert.strictEqual(second.slice(0, 13).replace("-", ""), later.toString(16).padStart(12, "0"))
    }))
})

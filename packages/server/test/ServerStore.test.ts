/**
 * The memory store's window in characters: a model's huge tool inputs cannot grow the process — the
 * oldest events go past `windowBytes` as past `window`, and the newest stays however large; a long
 * session's window, moved past thousands of events, reads as the last ones written.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import { ServerStore } from "../src/index.ts"

const call = (i: number, size: number): SessionEvent.SessionEvent => ({
  _tag: "ToolCall",
  sessionId: "s",
  runId: "r",
  seq: i,
  callId: `c${i}`,
  name: "write",
  input: { content: "x".repeat(size) }
})

describe("ServerStore.makeMemory", () => {
  it.effect("keeps no more than windowBytes of a session's events: the oldest go, the newest stays however large", () =>
    Effect.gen(function*() {
      const store = ServerStore.makeMemory({ windowBytes: 10_000 })
      yield* store.claim({ id: "s", principal: "p", agent: "a", now: 0 })
      yield* store.append("s", Array.from({ length: 50 }, (_, i) => call(i, 1_000)), 0)
      const kept = yield* store.read("s", 0, 100)
      assert.deepStrictEqual([kept.last, kept.oldest, kept.entries.length], [50, 43, 8])
      assert.deepStrictEqual(kept.entries.map((entry) => entry.id), Array.from({ length: 8 }, (_, i) => 43 + i))
      yield* store.append("s", [call(50, 100_000)], 0)
      const huge = yield* store.read("s", 0, 100)
      assert.deepStrictEqual([huge.oldest, huge.last, huge.entries.length], [51, 51, 1])
    }))

  it.effect("a window moved past thousands of events one write at a time reads as the last events written", () =>
    Effect.gen(function*() {
      const store = ServerStore.makeMemory({ window: 3 })
      yield* store.claim({ id: "s", principal: "p", agent: "a", now: 0 })
      for (let i = 0; i < 5_000; i++) yield* store.append("s", [call(i, 10)], 0)
      const kept = yield* store.read("s", 0, 10)
      assert.deepStrictEqual([kept.oldest, kept.last, kept.entries.map((entry) => entry.id)], [4_998, 5_000, [4_998, 4_999, 5_000]])
      const after = yield* store.read("s", 4_998, 10)
      assert.deepStrictEqual(after.entries.map((entry) => [entry.id, entry.event.seq]), [[4_999, 4_998], [5_000, 4_999]])
    }))
})

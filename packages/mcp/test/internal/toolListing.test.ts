import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import type { ListToolsResult } from "@modelcontextprotocol/client"
import { list, MAX_LIST_CHARS } from "../../src/internal/toolListing.ts"
import { ConnectFailed } from "../../src/McpError.ts"

const tool = (name: string, description = "") => ({ name, description, inputSchema: { type: "object" as const } })

/** Pages of `size` tools each, numbered by cursor; `last` is the final page's number (none: endless). */
const pages = (size: number, last?: number, description = "") => (cursor: string | undefined): Effect.Effect<ListToolsResult, ConnectFailed> => {
  const n = Number(cursor ?? "0")
  const tools = Array.from({ length: size }, (_, i) => tool(`t${n}_${i}`, description))
  return Effect.succeed(n === last ? { tools } : { tools, nextCursor: String(n + 1) })
}

const bounds = { maxPages: 100, maxTools: 10_000, timeoutMs: 30_000 }

describe("toolListing.list", () => {
  it.effect("follows the cursor to the last page", () =>
    Effect.gen(function*() {
      const tools = yield* list(pages(2, 2), bounds)
      assert.deepStrictEqual(tools.map((t) => t.name), ["t0_0", "t0_1", "t1_0", "t1_1", "t2_0", "t2_1"])
    }))

  it.effect("fails after maxPages pages that do not end", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(list(pages(1), { ...bounds, maxPages: 3 }))
      assert.deepStrictEqual(error, new ConnectFailed({ description: "tools/list did not end after 3 pages (maxToolPages)" }))
    }))

  it.effect("fails past maxTools", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(list(pages(4, 10), { ...bounds, maxTools: 10 }))
      assert.deepStrictEqual(error, new ConnectFailed({ description: "the server lists more than 10 tools (maxTools)" }))
    }))

  it.effect("fails past MAX_LIST_CHARS of definitions", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(list(pages(1, 99, "d".repeat(MAX_LIST_CHARS / 4)), bounds))
      assert.deepStrictEqual(error, new ConnectFailed({ description: `the server's tools take more than ${MAX_LIST_CHARS} characters as JSON` }))
    }))

  it.effect("fails when the whole listing outlasts its deadline", () =>
    Effect.gen(function*() {
      const slow = (cursor: string | undefined) => Effect.andThen(Effect.sleep("10 seconds"), pages(1)(cursor))
      const fiber = yield* Effect.forkChild(Effect.flip(list(slow, { ...bounds, timeoutMs: 25_000 })))
      yield* TestClock.adjust("25 seconds")
      assert.deepStrictEqual(yield* Fiber.join(fiber), new ConnectFailed({ description: "tools/list did not finish within 25000ms (listTimeout)" }))
    }))
})

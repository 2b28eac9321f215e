/**
 * Connect → call → server crash → restart (`permanent`) → call → close, over stdio and Streamable
 * HTTP (test/cycles.ts): nothing is left, no server process and no file descriptor. The suite runs
 * `CYCLES` of each; bench/mcp-cycles.ts runs 1,000 (issue 29).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Cycles from "./cycles.ts"

const CYCLES = 25

describe("crash cycles", () => {
  for (const transport of ["stdio", "http"] as const) {
    it.live(`${CYCLES} cycles over ${transport}: no server process and no file descriptor left`, () =>
      Effect.gen(function*() {
        const outcome = yield* Cycles.run(transport, CYCLES)
        assert.deepStrictEqual({ alive: outcome.alive, fds: outcome.fdsAfter }, { alive: [], fds: outcome.fdsBefore })
      }), { timeout: 300_000 })
  }
})

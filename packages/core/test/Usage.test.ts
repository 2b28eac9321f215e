/** Usage: the one shape of a reply's, a run's and a session's tokens, and their cost at a price. */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Usage from "../src/Usage.ts"

describe("Usage", () => {
  it("costs each kind of token at its price per million", () => {
    const price = { inputPerMillion: 3, outputPerMillion: 15, cacheReadPerMillion: 0.5, cacheWritePerMillion: 4 }
    const usage = { inputTokens: 1_000_000, outputTokens: 200_000, cacheReadTokens: 2_000_000, cacheWriteTokens: 500_000 }
    assert.strictEqual(Usage.cost(usage, price), 3 + 3 + 1 + 2)
  })

  it("prices cache reads and writes as input when the price names none", () => {
    const price = { inputPerMillion: 2, outputPerMillion: 8 }
    assert.strictEqual(Usage.cost({ inputTokens: 500_000, outputTokens: 0, cacheReadTokens: 500_000, cacheWriteTokens: 1_000_000 }, price), 4)
  })

  it("decodes the shape TurnEnd events and run results share, cache counts optional", () => {
    assert.deepStrictEqual(Schema.decodeUnknownSync(Usage.Usage)({ inputTokens: 10, outputTokens: 5 }), { inputTokens: 10, outputTokens: 5 })
    assert.isTrue(Schema.is(Usage.Usage)({ inputTokens: 10, outputTokens: 5, cacheReadTokens: 40 }))
    assert.isFalse(Schema.is(Usage.Usage)({ inputTokens: 1.5, outputTokens: 5 }))
  })
})

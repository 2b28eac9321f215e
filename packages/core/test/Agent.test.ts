import { assert, describe, it } from "@effect/vitest"
import * as Agent from "../src/Agent.ts"
import * as Tools from "../src/Tools.ts"

describe("Agent", () => {
  it("is an inert description with the defaults left to the session", () => {
    const agent = Agent.make({ name: "coder", model: "anthropic:claude-sonnet-4-6", tools: Tools.coding })
    assert.deepStrictEqual(agent, {
      _tag: "Agent",
      name: "coder",
      model: "anthropic:claude-sonnet-4-6",
      system: undefined,
      tools: Tools.coding,
      sandbox: undefined,
      maxTurns: undefined,
      toolTimeout: undefined,
      toolConcurrency: undefined
    })
  })
})

import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Tools from "../src/Tools.ts"

describe("Agent", () => {
  it("is an inert description with the defaults left to the session", () => {
    const agent = Agent.make({ name: "coder", model: "anthropic:claude-sonnet-4-6", tools: Tools.coding })
    const { executor, specs, ...rest } = agent
    assert.deepStrictEqual(rest, {
      _tag: "Agent",
      name: "coder",
      model: "anthropic:claude-sonnet-4-6",
      system: undefined,
      tools: Tools.coding,
      sandbox: undefined,
      maxTurns: undefined,
      toolTimeout: undefined,
      toolConcurrency: undefined,
      modelOptions: undefined,
      secrets: {},
      mcpServers: [],
      approvals: undefined
    })
    assert.isTrue(Result.isSuccess(executor))
    assert.deepStrictEqual(specs.map((s) => s.name), ["Read", "Bash", "Edit", "Write", "Glob", "Grep"])
  })

  it("compiles its tools once; two tools with one name are refused when a session starts", () => {
    const agent = Agent.make({ name: "twice", model: "test:x", tools: [...Tools.readOnly, Tools.Read] })
    assert.isTrue(Result.isFailure(agent.executor))
    assert.strictEqual(
      Result.isFailure(agent.executor) && agent.executor.failure.message,
      "Two tools are named Read: tool names must be unique (rename one, or give a prefix)"
    )
  })
})

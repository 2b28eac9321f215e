import { Sandbox, Tool } from "@condukt/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted, Schema } from "effect"
import * as ToolCall from "../src/ToolCall.ts"

const sandbox = Sandbox.makeNoop({ cwd: "/work" })

const Divide = Tool.make("divide", {
  description: "Divides",
  parameters: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  call: ({ a, b }, { assigns }) => (b === 0 ? Effect.fail(`cannot divide ${a} by zero (${assigns.who})`) : Effect.succeed(a / b))
})

describe("ToolCall", () => {
  it("builds the context a session would pass", () => {
    const secret = Redacted.make("s3cr3t")
    const { approve: _approve, redact, ...context } = ToolCall.context(sandbox, { secrets: { TOKEN: secret }, assigns: { who: "ada" } })
    assert.deepStrictEqual(context, {
      sessionId: "test",
      agent: "test",
      sandbox,
      cwd: "/work",
      secrets: { TOKEN: secret },
      assigns: { who: "ada" },
      callId: "call_1"
    })
    assert.strictEqual(redact("token=s3cr3t;"), "token=[REDACTED:TOKEN];")
  })

  it.effect("decodes the input before calling, and gives the failure text the model would read", () =>
    Effect.gen(function*() {
      const context = ToolCall.context(sandbox, { assigns: { who: "ada" } })
      assert.strictEqual(yield* ToolCall.run(Divide, { a: 6, b: 3 }, context), 2)
      assert.strictEqual(yield* ToolCall.failure(Divide, { a: 6, b: 0 }, context), "cannot divide 6 by zero (ada)")
      assert.strictEqual(
        yield* ToolCall.failure(Divide, { a: "6" }, context),
        "Invalid arguments for tool divide: a: Expected number; b: Missing key"
      )
    }))
})

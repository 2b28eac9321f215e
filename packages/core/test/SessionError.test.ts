import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Session from "../src/Session.ts"

const failWith = (reason: Session.Reason) => new Session.SessionError({ sessionId: "s1", reason })

describe("SessionError", () => {
  it("says what it said when each reason was an error of its own", () => {
    assert.deepStrictEqual(
      [
        failWith(new Session.MaxTurnsExceeded({ maxTurns: 3 })),
        failWith(new Session.RunAborted()),
        failWith(new Session.SessionStopped()),
        failWith(new Session.SandboxInitFailed({ agent: "a", description: "no sandbox" })),
        failWith(new Session.McpStartFailed({ server: "fs", description: "could not reach it" })),
        failWith(new Session.SessionCrashed({ cause: new Error("adapter bug") })),
        failWith(new Session.SessionCrashed({ cause: "a string" }))
      ].map((error) => error.message),
      [
        "Session s1: the run needed more than 3 model requests (raise maxTurns or simplify the task)",
        "Session s1: the run was aborted",
        "Session s1 is stopped",
        "Agent a: the sandbox could not be built: no sandbox",
        "MCP server fs could not be started: could not reach it",
        "Session s1 crashed: adapter bug",
        "Session s1 crashed: a string"
      ]
    )
  })

  it.effect("one reason is caught by Effect.catchReason; the others pass", () =>
    Effect.gen(function*() {
      const caught = yield* Effect.fail(failWith(new Session.MaxTurnsExceeded({ maxTurns: 3 }))).pipe(
        Effect.catchReason("SessionError", "MaxTurnsExceeded", (reason) => Effect.succeed(reason.maxTurns))
      )
      assert.strictEqual(caught, 3)
      const passed = yield* Effect.flip(
        Effect.fail(failWith(new Session.RunAborted())).pipe(
          Effect.catchReason("SessionError", "MaxTurnsExceeded", (reason) => Effect.succeed(reason.maxTurns))
        )
      )
      assert.deepStrictEqual(passed, failWith(new Session.RunAborted()))
    }))
})

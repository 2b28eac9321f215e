import { Approval } from "@condukt/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Approve from "../src/Approve.ts"

const request = { agent: "notes", callId: "call-1", tool: "Bash", input: { command: "rm -rf build" } }

describe("Approve", () => {
  it("a typed line: y or yes approves; n, no or nothing denies; other text denies with that reason", () => {
    assert.deepStrictEqual(
      ["y", "YES", "", "  ", "n", "No", "  not today  "].map(Approve.parse),
      [Approval.approved, Approval.approved, Approval.denied(), Approval.denied(), Approval.denied(), Approval.denied(), Approval.denied("not today")]
    )
  })

  it("the question names the step, the tool and the input, on one line", () => {
    assert.strictEqual(Approve.question(request), `    notes: allow Bash {"command":"rm -rf build"}? [y/n/reason]`)
  })

  it.effect("--approve all approves and --approve none denies without asking; neither without a terminal fails naming the tool and the flag", () =>
    Effect.gen(function*() {
      const asked: Array<string> = []
      const ask = (question: string) => Effect.sync(() => asked.push(question)).pipe(Effect.as("y"))
      assert.deepStrictEqual(yield* Approve.answerer("all", ask)(request), Approval.approved)
      assert.deepStrictEqual(yield* Approve.answerer("none", ask)(request), Approval.denied(Approve.DENIED_BY_FLAG))
      assert.deepStrictEqual(asked, [])
      const error = yield* Effect.flip(Approve.answerer(undefined, undefined)(request))
      assert.strictEqual(
        error.message,
        "Bash (call call-1) needs approval and there is no terminal to ask on; run with --approve all or --approve none"
      )
      assert.deepStrictEqual(yield* Approve.answerer(undefined, ask)(request), Approval.approved)
      assert.deepStrictEqual(asked, [Approve.question(request)])
    }))
})

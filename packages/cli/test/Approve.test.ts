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
    assert.strictEqual(Approve.question(request, 0), `    notes: allow Bash {"command":"rm -rf build"}? [y/n/reason]`)
  })

  it("a request with a record: a line before the question names its id, its rule and its deadline (local time, and how far off)", () => {
    const now = Date.UTC(2026, 10, 29, 13, 6, 30)
    const expiresAt = now + 59 * 60_000 + 30_000
    const local = new Date(expiresAt)
    const two = (n: number) => String(n).padStart(2, "0")
    const at = `${local.getFullYear()}-${two(local.getMonth() + 1)}-${two(local.getDate())} ${two(local.getHours())}:${two(local.getMinutes())}`
    assert.strictEqual(
      Approve.question({ ...request, id: "0190-a", rule: "ask: Bash", expiresAt }, now),
      `    notes: approval 0190-a, rule ask: Bash, expires ${at} (in 59m)\n    notes: allow Bash {"command":"rm -rf build"}? [y/n/reason]`
    )
    assert.strictEqual(
      Approve.question({ ...request, id: "0190-a", rule: "needsApproval" }, now),
      `    notes: approval 0190-a, rule needsApproval\n    notes: allow Bash {"command":"rm -rf build"}? [y/n/reason]`
    )
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
      assert.deepStrictEqual(asked, [Approve.question(request, 0)])
    }))
})

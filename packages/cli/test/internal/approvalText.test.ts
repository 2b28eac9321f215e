import * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import { assert, describe, it } from "@effect/vitest"
import { instant } from "../../src/internal/approvalCommands.ts"
import * as ApprovalText from "../../src/internal/approvalText.ts"

const NOW = Date.UTC(2026, 10, 29, 12, 0, 0)

const record: ApprovalRecord.ApprovalRecord = {
  id: "0190-a",
  sessionId: "s1",
  agent: "main",
  callId: "call-1",
  tool: "Bash",
  input: { command: "ls" },
  rule: "ask: Bash",
  requestedAt: NOW - 90_000
}

describe("approvalText", () => {
  it("a span reads in the largest unit that fits, floored: seconds, minutes, hours up to two days, then days", () => {
    assert.deepStrictEqual(
      [0, 59_999, 60_000, 3_599_999, 3_600_000, 47 * 3_600_000, 48 * 3_600_000, -5].map(ApprovalText.span),
      ["0s", "59s", "1m", "59m", "1h", "47h", "2d", "0s"]
    )
    assert.deepStrictEqual([ApprovalText.relative(NOW - 90_000, NOW), ApprovalText.relative(NOW + 3_599_000, NOW)], ["1m ago", "in 59m"])
  })

  it("text from outside stays on its line: control characters, line separators and bidi controls are escaped", () => {
    assert.strictEqual(ApprovalText.oneLine("a\nb\u001b[31m\u2028\u202ec\u0085"), "a\\u000ab\\u001b[31m\\u2028\\u202ec\\u0085")
    const hostile = { ...record, agent: "main\nforged line", outcome: "denied" as const, by: "eve\u001b[2J" }
    assert.strictEqual(
      ApprovalText.line(hostile, NOW),
      `0190-a  1m ago  main\\u000aforged line  Bash {"command":"ls"}  ask: Bash  denied by "eve\\u001b[2J"`
    )
  })

  it("status: open, open with its deadline, expired once past it, an outcome with its answerer, a shadow's would-be decision", () => {
    assert.deepStrictEqual(
      [
        ApprovalText.status(record, NOW),
        ApprovalText.status({ ...record, expiresAt: NOW + 7_200_000 }, NOW),
        ApprovalText.status({ ...record, expiresAt: NOW }, NOW),
        ApprovalText.status({ ...record, outcome: "expired", by: "expiry" }, NOW),
        ApprovalText.status({ ...record, outcome: "approved" }, NOW),
        ApprovalText.status({ ...record, shadow: { policy: "strict", decision: "deny" } }, NOW)
      ],
      ["open", "open, expires in 2h", "expired", `expired by "expiry"`, "approved", "shadow: strict would deny"]
    )
  })
})

describe("approvalCommands.instant", () => {
  it("an ISO time, a date, or a span back from now; anything else is undefined", () => {
    assert.deepStrictEqual(
      ["2026-11-29T11:00:00Z", "2026-11-29T13:00:00+02:00", "2026-11-29", "90s", "30m", "1h", "2d", "1w"].map((text) => instant(text, NOW)),
      [NOW - 3_600_000, NOW - 3_600_000, NOW - 12 * 3_600_000, NOW - 90_000, NOW - 1_800_000, NOW - 3_600_000, NOW - 2 * 86_400_000, NOW - 7 * 86_400_000]
    )
    assert.deepStrictEqual(["yesterday", "1", "March 7", "1h30m", "-1h", "", "2026-13-45"].map((text) => instant(text, NOW)), [
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined
    ])
  })
})

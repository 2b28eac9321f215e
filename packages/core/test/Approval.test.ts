import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as Approval from "../src/Approval.ts"

const policyOf = (agent: Approval.Rules | undefined, start?: Approval.Rules) => {
  const compiled = Approval.policy(agent, start)
  if (Result.isFailure(compiled)) throw compiled.failure
  return compiled.success
}

describe("Approval", () => {
  it("decides deny > ask > allow > the tool's own flag, by glob over tool names", () => {
    const policy = policyOf(
      { allow: ["github.*", "Read"], ask: ["Bash", "github.create_*"] },
      { deny: ["*.delete_*", "Bash"] }
    )
    const verdicts = ["Bash", "github.delete_repo", "github.create_issue", "github.list_issues", "Read", "Write", "gitlab.delete_x"]
      .map((tool) => [tool, Approval.verdict(policy, tool)])
    assert.deepStrictEqual(verdicts, [
      ["Bash", { _tag: "Deny", pattern: "Bash" }],
      ["github.delete_repo", { _tag: "Deny", pattern: "*.delete_*" }],
      ["github.create_issue", { _tag: "Ask", pattern: "github.create_*" }],
      ["github.list_issues", { _tag: "Allow", pattern: "github.*" }],
      ["Read", { _tag: "Allow", pattern: "Read" }],
      ["Write", { _tag: "Tool" }],
      ["gitlab.delete_x", { _tag: "Deny", pattern: "*.delete_*" }]
    ])
  })

  it("has no policy without rules, so a session without them checks nothing; the start's timeout wins", () => {
    assert.isUndefined(policyOf(undefined, undefined))
    assert.isUndefined(policyOf({}, { allow: [] }))
    assert.deepStrictEqual(Approval.verdict(undefined, "Bash"), { _tag: "Tool" })
    assert.strictEqual(policyOf({ timeout: "1 minute" })?.timeoutMs, 60_000)
    assert.strictEqual(policyOf({ timeout: "1 minute" }, { timeout: "2 seconds" })?.timeoutMs, 2_000)
    assert.isUndefined(policyOf({ ask: ["x"] })?.timeoutMs)
    // A deadline alone is a policy too: every request it makes expires.
    assert.strictEqual(policyOf({ expires: "1 hour" })?.expiresMs, 3_600_000)
    assert.strictEqual(policyOf({ expires: "1 hour" }, { expires: "5 minutes" })?.expiresMs, 300_000)
  })

  it("refuses a pattern the glob dialect refuses", () => {
    const compiled = Approval.policy({ deny: ["ok", "[z-a]"] })
    assert.isTrue(Result.isFailure(compiled))
    if (Result.isFailure(compiled)) {
      assert.strictEqual(compiled.failure._tag, "InvalidApprovalRule")
      assert.strictEqual(compiled.failure.pattern, "[z-a]")
    }
  })

  it("words what the model reads for each denial", () => {
    assert.strictEqual(Approval.render(Approval.approved), undefined)
    assert.strictEqual(Approval.render(Approval.denied("not on main")), "Denied by the user: not on main")
    assert.strictEqual(Approval.render(Approval.denied()), "Denied by the user")
    assert.strictEqual(Approval.render({ _tag: "Expired", timeoutMs: 5000 }), "Denied: nobody approved this call within 5000ms")
    assert.strictEqual(Approval.deniedByRule("rm", "r*"), "Denied by a rule: rm matches \"r*\"")
    assert.strictEqual(
      new Approval.NotPending({ sessionId: "s", callId: "c" }).message,
      "Session s: no call c is waiting for approval (unknown, or already answered)"
    )
  })
})

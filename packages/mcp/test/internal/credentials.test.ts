import { assert, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import { Credentials, oneLine } from "../../src/internal/credentials.ts"

describe("credentials", () => {
  it("a server text becomes one line of at most 1,000 code points, with … when cut", () => {
    assert.strictEqual(oneLine("  first\n\tsecond  "), "first second")
    assert.strictEqual(oneLine("é".repeat(1000)), "é".repeat(1000))
    assert.strictEqual(oneLine("é".repeat(1001)), `${"é".repeat(999)}…`)
    assert.strictEqual(oneLine(`${"a".repeat(10)}${" ".repeat(5000)}b`), `${"a".repeat(10)}…`)
  })

  it("redacts its values, labelled by server, then with the session's redaction; a second value of one kind is numbered", () => {
    const credentials = new Credentials("gh", (text) => text.replaceAll("session-secret", "[REDACTED:S]"))
    credentials.add("access_token", "token-one")
    credentials.add("access_token", "token-two")
    credentials.add("access_token", "token-one")
    assert.deepStrictEqual(
      Object.fromEntries(Object.entries(credentials.secrets()).map(([label, value]) => [label, Redacted.value(value)])),
      { "gh.access_token": "token-one", "gh.access_token_2": "token-two" }
    )
    assert.strictEqual(
      credentials.reason("token-one\ntoken-two session-secret"),
      "[REDACTED:gh.access_token] [REDACTED:gh.access_token_2] [REDACTED:S]"
    )
    assert.strictEqual(credentials.redactOwn("token-two session-secret"), "[REDACTED:gh.access_token_2] session-secret")
  })
})

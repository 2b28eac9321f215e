import { assert, describe, it } from "@effect/vitest"
import { Cause, Duration, Redacted } from "effect"
import * as ModelError from "../src/ModelError.ts"
import * as Redactor from "../src/Redactor.ts"

const secrets = (values: Record<string, string>) =>
  Redactor.secrets(Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Redacted.make(v)])))

describe("Redactor", () => {
  it("replaces every occurrence of each secret value by its name", () => {
    const r = secrets({ TOKEN: "s3cr3t-value", OTHER: "hunter22" })
    assert.strictEqual(
      r.redact("a s3cr3t-value b hunter22 c s3cr3t-value"),
      "a [REDACTED:TOKEN] b [REDACTED:OTHER] c [REDACTED:TOKEN]"
    )
  })

  it("replaces a value embedded in a longer token, keeping what surrounds it", () => {
    assert.strictEqual(secrets({ KEY: "abcd1234" }).redact("Bearer=xxabcd1234yy;"), "Bearer=xx[REDACTED:KEY]yy;")
  })

  it("redacts the longer of two overlapping values first, wherever they start", () => {
    const r = secrets({ SHORT: "abcd", LONG: "abcdefgh", MIDDLE: "cdefgh-x" })
    assert.strictEqual(r.redact("abcdefgh abcd abcdefgh-x"), "[REDACTED:LONG] [REDACTED:SHORT] [REDACTED:LONG]-x")
    assert.strictEqual(r.redact("xxcdefgh-x"), "xx[REDACTED:MIDDLE]")
  })

  it("leaves values shorter than 4 bytes alone: they would match ordinary text", () => {
    const r = secrets({ PIN: "123", EURO: "€€" })
    assert.strictEqual(r.redact("123 and €€"), "123 and [REDACTED:EURO]")
  })

  it("never matches a value inside a replacement it made", () => {
    const r = secrets({ A: "REDACTED", B: "token-1234" })
    assert.strictEqual(r.redact("token-1234 REDACTED"), "[REDACTED:B] [REDACTED:A]")
  })

  it("matches several records in one pass: a name two give different values redacts both, a value inside another is never cut out of it", () => {
    const made = (values: Record<string, string>) => Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Redacted.make(v)]))
    const r = Redactor.secrets(made({ TOKEN: "child-token", INNER: "secret" }), made({ TOKEN: "parent-token", OUTER: "my-secret-key" }))
    assert.strictEqual(
      r.redact("child-token parent-token my-secret-key secret"),
      "[REDACTED:TOKEN] [REDACTED:TOKEN] [REDACTED:OUTER] [REDACTED:INNER]"
    )
    // The same value in two records is matched once, under its first name.
    assert.strictEqual(Redactor.secrets(made({ A: "same-value" }), made({ B: "same-value" })).redact("same-value"), "[REDACTED:A]")
    assert.strictEqual(Redactor.secrets({}, {}), Redactor.none)
  })

  it("returns the text itself when nothing matches", () => {
    const text = "nothing to see"
    assert.strictEqual(secrets({ T: "s3cr3t" }).redact(text), text)
    assert.strictEqual(Redactor.secrets({}), Redactor.none)
  })

  it("the default patterns label what they find", () => {
    const r = Redactor.regex()
    const pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
    const cases: ReadonlyArray<readonly [string, string]> = [
      [`key:\n${pem}\ndone`, "key:\n[REDACTED:PRIVATE_KEY]\ndone"],
      ["jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl end", "jwt [REDACTED:JWT] end"],
      ["sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "[REDACTED:ANTHROPIC_KEY]"],
      ["OPENAI=sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI=[REDACTED:API_KEY]"],
      ["ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED:GITHUB_TOKEN]"],
      ["xoxb-1234567890-abcdefghij", "[REDACTED:SLACK_TOKEN]"],
      ["AIzaSyA-abcdefghijklmnopqrstuvwxyz12345", "[REDACTED:GOOGLE_API_KEY]"],
      ["id AKIAIOSFODNN7EXAMPLE", "id [REDACTED:AWS_ACCESS_KEY]"],
      ["mail ada@example.com now", "mail [REDACTED:EMAIL] now"],
      ["sk-short and plain text", "sk-short and plain text"]
    ]
    for (const [text, expected] of cases) assert.strictEqual(r.redact(text), expected)
  })

  it("patterns can be replaced or extended", () => {
    const only = Redactor.regex({ patterns: [{ pattern: "order-[0-9]+", label: "ORDER" }] })
    assert.strictEqual(only.redact("order-42 by ada@example.com"), "[REDACTED:ORDER] by ada@example.com")
    const more = Redactor.regex({ extraPatterns: [{ pattern: "order-[0-9]+", label: "ORDER" }] })
    assert.strictEqual(more.redact("order-42 by ada@example.com"), "[REDACTED:ORDER] by [REDACTED:EMAIL]")
  })

  it("stays linear on text built to make backtracking patterns explode", () => {
    // V8's backtracking engine needs quadratic time for the JWT and email patterns on these.
    const hostile = `${"eyJ".repeat(200_000)}\n${"a".repeat(300_000)}@`
    const redacted = Redactor.regex().redact(hostile)
    assert.strictEqual(redacted, hostile)
  })

  it("compose applies redactors in order", () => {
    const r = Redactor.compose(secrets({ MAIL: "ada@example.com" }), Redactor.regex())
    assert.strictEqual(r.redact("to ada@example.com and bob@example.org"), "to [REDACTED:MAIL] and [REDACTED:EMAIL]")
    assert.strictEqual(Redactor.compose(Redactor.none, Redactor.none), Redactor.none)
  })

  it("redactValue redacts every string of a JSON value, keys included, and keeps the rest", () => {
    const r = secrets({ TOKEN: "s3cr3t-value" }).redact
    const kept = Redacted.make("s3cr3t-value")
    assert.deepStrictEqual<unknown>(
      Redactor.redactValue(r, { "s3cr3t-value": 1, list: ["x s3cr3t-value", 2, null, true], kept }),
      { "[REDACTED:TOKEN]": 1, list: ["x [REDACTED:TOKEN]", 2, null, true], kept }
    )
    const value = { a: "s3cr3t-value" }
    assert.strictEqual(Redactor.redactValue(Redactor.none.redact, value), value)
  })

  it("redactValue copies an error with its class, its reason and its computed message redacted", () => {
    const r = secrets({ KEY: "sk-echoed-1234" }).redact
    const error = new ModelError.ModelError({
      model: "acme:m",
      reason: new ModelError.RateLimited({ provider: "acme", status: 429, description: "slow down, sk-echoed-1234", retryAfter: Duration.seconds(2) })
    })
    const redacted = Redactor.redactValue(r, error)
    assert.instanceOf(redacted, ModelError.ModelError)
    assert.instanceOf(redacted.reason, ModelError.RateLimited)
    assert.strictEqual(redacted.message, "acme: rate limited (HTTP 429): slow down, [REDACTED:KEY]; retry after 2s")
    assert.isTrue(redacted.isRetryable)
    const plain = Redactor.redactValue(r, new Error("refused sk-echoed-1234"))
    assert.strictEqual(plain.message, "refused [REDACTED:KEY]")
    assert.include(plain.stack, "Error: refused [REDACTED:KEY]")
    assert.notInclude(plain.stack, "sk-echoed-1234")
  })

  it("redactCause redacts failures and defects, and keeps interruptions", () => {
    const r = secrets({ KEY: "sk-echoed-1234" }).redact
    const cause = Cause.fromReasons<Error>([
      Cause.makeFailReason(new Error("fail sk-echoed-1234")),
      Cause.makeDieReason(new Error("die sk-echoed-1234")),
      Cause.makeInterruptReason(7)
    ])
    const pretty = Cause.pretty(Redactor.redactCause(r, cause))
    assert.include(pretty, "fail [REDACTED:KEY]")
    assert.include(pretty, "die [REDACTED:KEY]")
    assert.notInclude(pretty, "sk-echoed-1234")
    assert.isTrue(Cause.hasInterrupts(Redactor.redactCause(r, cause)))
  })

  it("chunks replaces a value split across chunks whole, holding back only what could begin one", () => {
    const stream = Redactor.chunks(secrets({ KEY: "sk-echoed-1234" }))
    const shown = ["key: sk-", "ech", "oed-12", "34, sk-x", " done sk-e"].map(stream.next)
    assert.deepStrictEqual(shown, ["key: ", "", "", "[REDACTED:KEY], sk-x", " done "])
    assert.strictEqual(stream.end(), "sk-e")
    assert.strictEqual(stream.end(), "")
    assert.strictEqual(secrets({ KEY: "sk-echoed-1234" }).pending?.("plain text"), 0)
    assert.isUndefined(Redactor.regex().pending)
  })

  it("redactValue keeps a key named __proto__ as a key, and marks what is nested too deep instead of dropping it", () => {
    const r = secrets({ TOKEN: "s3cr3t-value" }).redact
    const hostile = JSON.parse(`{"__proto__":{"polluted":"s3cr3t-value"}}`)
    const redacted = Redactor.redactValue(r, hostile) as Record<string, unknown>
    assert.deepStrictEqual(Object.keys(redacted), ["__proto__"])
    assert.strictEqual(Object.getPrototypeOf(redacted), Object.prototype)
    assert.strictEqual(JSON.stringify(redacted), `{"__proto__":{"polluted":"[REDACTED:TOKEN]"}}`)
    let nested: unknown = "s3cr3t-value"
    for (let i = 0; i < 100; i++) nested = [nested]
    const text = JSON.stringify(Redactor.redactValue(r, nested))
    assert.include(text, Redactor.TOO_DEEP)
    assert.notInclude(text, "s3cr3t-value")
  })
})

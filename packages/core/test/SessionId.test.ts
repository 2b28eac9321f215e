/**
 * SessionId: the one rule over the hostile-id corpus (`HostileSessionIds` of @condukt/testing),
 * its whole message, how a refused id is shown in a message, and `Session.start` refusing before
 * it builds or stores anything.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as SessionId from "../src/SessionId.ts"
import * as SessionStore from "../src/SessionStore.ts"
import * as Sessions from "../src/Sessions.ts"
import { HostileSessionIds } from "@condukt/testing"

describe("SessionId", () => {
  it("refuses each refused id of the corpus saying why, and takes each accepted one", () => {
    assert.deepStrictEqual(
      HostileSessionIds.refused.map(({ id }) => [SessionId.show(id), SessionId.check(id)?.description]),
      HostileSessionIds.refused.map(({ description, id }) => [SessionId.show(id), description])
    )
    assert.deepStrictEqual(HostileSessionIds.accepted.filter((id) => SessionId.check(id) !== undefined), [])
  })

  it("says what an id is, whole", () => {
    assert.strictEqual(
      SessionId.check("alice\u0000x")?.message,
      "invalid session id (it holds the control character U+0000 at index 5): an id is 1 to 255 characters of visible text on one line, without control characters, line separators, bidirectional controls or lone surrogates"
    )
  })

  it("shows an id it takes as written, and a refused one quoted, escaped and cut: no NUL, line break or bidirectional control reaches a message", () => {
    assert.deepStrictEqual(
      ["ticket-42", "../a \"b\"", "alice\u0000x", "a\nb", "invoice\u202Efdp.exe", "\uD800", "say \"hi\"\u0007", "", "x".repeat(10240)].map(SessionId.show),
      [
        "ticket-42",
        "../a \"b\"",
        "\"alice\\u0000x\"",
        "\"a\\u000ab\"",
        "\"invoice\\u202efdp.exe\"",
        "\"\\ud800\"",
        "\"say \\\"hi\\\"\\u0007\"",
        "\"\"",
        `"${"x".repeat(64)}"… (10240 characters)`
      ]
    )
  })

  it("InvalidSessionId is one error: the reason of a store's, a session's and a by-id call's, and it survives their Schemas", () => {
    const reason = SessionId.check("alice\u0000x")!
    const store = new SessionStore.SessionStoreError({ method: "save", sessionId: "alice\u0000x", location: "memory", reason })
    const session = new Session.SessionError({ sessionId: "alice\u0000x", reason })
    const byId = new Sessions.SessionsError({ sessionId: "alice\u0000x", reason })
    assert.deepStrictEqual([store.message, session.message, byId.message], [
      `SessionStore.save: session "alice\\u0000x" at memory: ${reason.message}`,
      `Session "alice\\u0000x" cannot start: ${reason.message}`,
      `Sessions: session "alice\\u0000x": ${reason.message}`
    ])
    const empty = SessionId.check("")!
    assert.strictEqual(
      new SessionStore.SessionStoreError({ method: "load", sessionId: "", location: "memory", reason: empty }).message,
      `SessionStore.load: session "" at memory: ${empty.message}`
    )
    const tripped = Schema.decodeUnknownSync(Sessions.SessionsError)(Schema.encodeSync(Sessions.SessionsError)(byId))
    assert.isTrue(tripped.reason instanceof SessionId.InvalidSessionId)
    assert.strictEqual(tripped.message, byId.message)
  })

  it.effect("Session.start refuses an id the rule refuses before it loads, builds or saves anything, with a store or without", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      const agent = Agent.make({ name: "coder", model: "test:unused", sandbox: Sandbox.layerNoop() })
      const refusals = yield* Effect.forEach([{ store }, {}], (options) =>
        Effect.scoped(Effect.flip(Session.start(agent, { id: "alice\u0000x", ...options }))))
      assert.deepStrictEqual(
        refusals.map((error) => [error._tag, error._tag === "SessionError" ? error.reason._tag : undefined, error.message]),
        [0, 1].map(() => ["SessionError", "InvalidSessionId", `Session "alice\\u0000x" cannot start: ${SessionId.check("alice\u0000x")!.message}`])
      )
      assert.isTrue(Option.isNone(yield* store.load("alice")))
    }))
})

/** SessionsError: what each reason says, whole, and that it survives a trip through its Schema (it crosses processes). */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Session from "../src/Session.ts"
import * as Sessions from "../src/Sessions.ts"

const reasons: ReadonlyArray<readonly [Sessions.SessionsError["reason"], string]> = [
  [new Sessions.NotFound(), "Sessions: session s1: no such session is running (start it first)"],
  [new Sessions.UnknownAgent({ agent: "coder" }), "Sessions: session s1: no agent is named coder here"],
  [new Sessions.AlreadyStarted(), "Sessions: session s1: the session is already running"],
  [new Sessions.Failed({ description: "the run was aborted" }), "Sessions: session s1: the run was aborted"],
  [new Sessions.Interrupted({ description: "its runner stopped" }), "Sessions: session s1: the run was interrupted: its runner stopped"],
  [new Sessions.Unavailable({ description: "database is locked" }), "Sessions: session s1: the session could not be reached: database is locked"],
  [
    new Sessions.ApprovalNotPending({ callId: "c1" }),
    "Sessions: session s1: no call c1 is waiting for approval (unknown, or already answered): pending lists the calls that are"
  ],
  [new Sessions.ElicitationNotPending({ id: "q1" }), "Sessions: session s1: no question q1 is waiting for an answer (unknown, or already answered)"],
  [
    new Sessions.ElicitationInvalidAnswer({ id: "q1", description: "age: expected a number" }),
    "Sessions: session s1: the answer to question q1 does not fit its form (age: expected a number); the question still waits for one that does"
  ]
]

describe("SessionsError", () => {
  it("names the session and says what happened, for each reason", () => {
    assert.deepStrictEqual(
      reasons.map(([reason]) => new Sessions.SessionsError({ sessionId: "s1", reason }).message),
      reasons.map(([, message]) => message)
    )
  })

  it("failed: a session's error says what happened once, naming the session once; another session's, or another error, whole", () => {
    const aborted = new Session.SessionError({ sessionId: "s1", reason: new Session.RunAborted() })
    const stopped = new Session.SessionError({ sessionId: "s1", reason: new Session.SessionStopped() })
    assert.deepStrictEqual(
      [aborted, stopped, new Session.SessionError({ sessionId: "s2", reason: new Session.RunAborted() }), new Error("anthropic: overloaded")].map((error) =>
        Sessions.failed("s1", error).message
      ),
      [
        "Sessions: session s1: the run was aborted",
        "Sessions: session s1: the session is stopped",
        "Sessions: session s1: Session s2: the run was aborted",
        "Sessions: session s1: anthropic: overloaded"
      ]
    )
  })

  it("encodes to JSON and decodes back to the same error, each reason", () => {
    const codec = Schema.toCodecJson(Sessions.SessionsError)
    for (const [reason, message] of reasons) {
      const error = new Sessions.SessionsError({ sessionId: "s1", reason })
      const decoded = Schema.decodeUnknownSync(codec)(JSON.parse(JSON.stringify(Schema.encodeSync(codec)(error))))
      assert.deepStrictEqual([decoded.reason._tag, decoded.message], [reason._tag, message])
    }
  })
})

import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Elicitation from "../src/Elicitation.ts"

describe("Elicitation", () => {
  it("answers are plain values: accept with the form's values, decline, cancel", () => {
    assert.deepStrictEqual(
      [Elicitation.accept({ name: "Ada", tags: ["x"] }), Elicitation.decline, Elicitation.cancel],
      [{ action: "accept", content: { name: "Ada", tags: ["x"] } }, { action: "decline" }, { action: "cancel" }]
    )
  })

  it("says what went wrong, whole", () => {
    assert.deepStrictEqual(
      [
        new Elicitation.NotPending({ sessionId: "s", id: "q1" }).message,
        new Elicitation.InvalidAnswer({ sessionId: "s", id: "q1", description: "name: a string is required" }).message,
        new Elicitation.Unanswerable({ description: Elicitation.NOBODY_TO_ASK }).message,
        Elicitation.handlerMisfit("name: a string is required")
      ],
      [
        "Session s: no question q1 is waiting for an answer (unknown, or already answered)",
        "Session s: the answer to question q1 does not fit its form: name: a string is required",
        "nobody can answer: the session has no elicitation handler and nobody reads its events " +
        "(give Session.start an elicitation handler, or read ElicitationRequested events and answer with session.respond)",
        "the session's elicitation handler answered values the form does not take: name: a string is required"
      ]
    )
  })

  it("a form's schema decodes from what a server sends, and refuses what is not an object form", () => {
    const decode = Schema.decodeUnknownOption(Elicitation.FormSchema)
    assert.deepStrictEqual(decode({ type: "object", properties: { name: { type: "string" } }, required: ["name"] })._tag, "Some")
    assert.deepStrictEqual(decode({ type: "string" })._tag, "None")
  })
})

import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as SessionEvent from "../src/SessionEvent.ts"

describe("SessionEvent", () => {
  it("encodes events to JSON and decodes them back, Error events included", () => {
    const base = { sessionId: "s", runId: "r" }
    const events: ReadonlyArray<SessionEvent.SessionEvent> = [
      { _tag: "AgentStart", ...base, seq: 0, prompt: "hi" },
      { _tag: "ToolResult", ...base, seq: 1, callId: "c", name: "Read", content: "x", isError: false, data: { n: 1 } },
      { _tag: "Error", ...base, seq: 2, message: "the model is overloaded" },
      { _tag: "AgentEnd", ...base, seq: 3, outcome: "failed" }
    ]
    const codec = Schema.toCodecJson(Schema.Array(SessionEvent.SessionEvent))
    const json = JSON.parse(JSON.stringify(Schema.encodeSync(codec)(events)))
    assert.deepStrictEqual(Schema.decodeUnknownSync(codec)(json), events)
  })
})

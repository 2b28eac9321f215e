import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Message from "../src/Message.ts"

const history: ReadonlyArray<Message.Message> = [
  Message.user("read a"),
  Message.assistant([Message.textPart("Reading"), Message.toolCallPart({ id: "c1", name: "Read", input: { path: "a" } })]),
  Message.toolResult({ callId: "c1", name: "Read", content: "hello", isError: false }),
  Message.assistant([Message.textPart("It says "), Message.textPart("hello")]),
  Message.user("and this?", [Message.imagePart("image/png", "iVBORw0KGgo=")]),
  Message.toolResult({ callId: "c2", name: "Read", content: "b.png", isError: false, images: [Message.imagePart("image/gif", "R0lGOD==")] })
]

describe("Message", () => {
  it("gives an assistant message's text and tool calls in order", () => {
    assert.strictEqual(Message.text(history[3] as Message.AssistantMessage), "It says hello")
    assert.deepStrictEqual(Message.toolCalls(history[1] as Message.AssistantMessage).map((c) => c.id), ["c1"])
  })

  it("keeps images only when there are some", () => {
    assert.deepStrictEqual(Message.user("hi", []), { _tag: "UserMessage", content: "hi" })
    assert.deepStrictEqual(
      Message.toolResult({ callId: "c", name: "Read", content: "x", isError: false, images: [] }),
      { _tag: "ToolResultMessage", callId: "c", name: "Read", content: "x", isError: false }
    )
  })

  it("encodes a history to JSON and decodes it back unchanged", () => {
    const codec = Schema.toCodecJson(Schema.Array(Message.Message))
    const json = JSON.parse(JSON.stringify(Schema.encodeSync(codec)(history)))
    assert.deepStrictEqual(Schema.decodeUnknownSync(codec)(json), history)
  })
})

/**
 * A call's arguments holding a secret's value (a model can write one it read where it should not
 * have: a gateway, the system prompt, a caller's prompt): the tool receives them as the model
 * wrote them; everything that leaves the runtime holds the name — the model's next request, the
 * run's messages and the history, the ToolCall event, a call waiting for approval (its
 * ApprovalRequested event, `pending`), the spans with TraceContent on, a store
 * (so a restarted session's model reads the same history as before). Values JSON would escape
 * (a quote, a backslash) are redacted too. Sub-agents: Agent.asTool.test.ts and
 * test/secret-leak-hunt.test.ts.
 */
import { Spans, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema, Stream, Tracer } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Message from "../src/Message.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Secret from "../src/Secret.ts"
import * as Session from "../src/Session.ts"
import * as SessionStore from "../src/SessionStore.ts"
import * as Tool from "../src/Tool.ts"
import * as TraceContent from "../src/TraceContent.ts"

const PLAIN = "tok-8c1f3e9a27"
/** JSON writes it as `pw\"with\\slash-61`: a redaction of the JSON text would miss it. */
const QUOTED = `pw"with\\slash-61`
const WRITTEN = `${PLAIN} and ${QUOTED}`
const SHOWN = "[REDACTED:PLAIN] and [REDACTED:QUOTED]"

/** What the `echo` tool received, call by call. */
const makeEcho = (received: Array<string>) =>
  Tool.make("echo", {
    description: "Echoes the length of a text",
    parameters: Schema.Struct({ text: Schema.String }),
    call: ({ text }) =>
      Effect.sync(() => {
        received.push(text)
        return `${text.length} characters`
      })
  })

const agentWith = (received: Array<string>) =>
  Agent.make({
    name: "writer",
    model: "test:x",
    tools: [makeEcho(received)],
    secrets: { PLAIN: Secret.static(PLAIN), QUOTED: Secret.static(QUOTED) }
  })

/** The message of the call as a reader may see it. */
const shownCall = Message.assistant([Message.toolCallPart({ id: "call_1", name: "echo", input: { text: SHOWN } })])

/** `seen` holds no value, neither as written nor as JSON writes it. */
const clean = (seen: string) => {
  for (const value of [PLAIN, QUOTED, JSON.stringify(QUOTED).slice(1, -1)]) assert.notInclude(seen, value)
}

describe("Session: a call's arguments", () => {
  it.effect("holding secrets: the tool receives them as written; the next request, the history, the ToolCall event and the spans hold the names", () =>
    Effect.gen(function*() {
      const received: Array<string> = []
      const recorder = yield* Spans.make
      const { events, history } = yield* Effect.gen(function*() {
        const session = yield* Session.start(agentWith(received), { sandbox: Sandbox.layerNoop(), projectInstructions: false })
        const events = Array.from(yield* Stream.runCollect(session.stream("go")))
        return { events, history: yield* session.history }
      }).pipe(Effect.scoped, Effect.provideService(Tracer.Tracer, recorder.tracer), Effect.provide(TraceContent.layer))
      const requests = yield* (yield* TestModel.TestModel).requests
      assert.deepStrictEqual(received, [WRITTEN])
      assert.deepStrictEqual(requests[1]!.messages[1], shownCall)
      assert.deepStrictEqual(history[1], shownCall)
      assert.deepStrictEqual(events.flatMap((e) => (e._tag === "ToolCall" ? [e.input] : [])), [{ text: SHOWN }])
      const attributes = recorder.spans.map((span) => [span.name, Object.fromEntries(span.attributes)] as const)
      const tool = attributes.find(([name]) => name === "execute_tool echo")![1]
      assert.strictEqual(tool["gen_ai.tool.call.arguments"], JSON.stringify({ text: SHOWN }))
      const chats = attributes.filter(([name]) => name.startsWith("chat "))
      assert.strictEqual(
        chats[0]![1]["gen_ai.output.messages"],
        JSON.stringify([{ role: "assistant", parts: [{ type: "tool_call", id: "call_1", name: "echo", arguments: JSON.stringify({ text: SHOWN }) }], finish_reason: "tool-calls" }])
      )
      clean(JSON.stringify({ events, history, requests, attributes }))
    }).pipe(Effect.provide(TestModel.layer([TestModel.toolCall("echo", { text: WRITTEN }), TestModel.text("done")]))))

  it.effect("waiting for approval: ApprovalRequested and pending show them redacted; approved, the tool receives them as written", () =>
    Effect.gen(function*() {
      const received: Array<string> = []
      const session = yield* Session.start(agentWith(received), { sandbox: Sandbox.layerNoop(), projectInstructions: false, approvals: { ask: ["echo"] } })
      const shown: Array<unknown> = []
      const events = yield* Effect.scoped(Stream.runCollect(Stream.tap(session.stream("go"), (event) =>
        event._tag !== "ApprovalRequested"
          ? Effect.void
          : Effect.gen(function*() {
            shown.push(event.input, (yield* session.pending).map((pending) => pending.input))
            yield* Effect.forkScoped(session.approve(event.callId))
          }))))
      assert.deepStrictEqual(shown, [{ text: SHOWN }, [{ text: SHOWN }]])
      assert.deepStrictEqual(received, [WRITTEN])
      clean(JSON.stringify(Array.from(events)))
    }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.toolCall("echo", { text: WRITTEN }), TestModel.text("done")]))))

  it.effect("a session restarted from its store: its model reads the call as it read it before the restart", () =>
    Effect.gen(function*() {
      const received: Array<string> = []
      const start = Session.start(agentWith(received), { id: "s1", sandbox: Sandbox.layerNoop(), projectInstructions: false })
      yield* Effect.scoped(Effect.flatMap(start, (session) => session.run("go")))
      const restarted = yield* Effect.scoped(Effect.flatMap(start, (session) => session.run("again")))
      assert.strictEqual(restarted.text, "still here")
      const requests = yield* (yield* TestModel.TestModel).requests
      // Before the restart (its second request) and after (the third): the same call, redacted.
      assert.deepStrictEqual(requests[1]!.messages[1], shownCall)
      assert.deepStrictEqual(requests[2]!.messages.slice(0, 4), requests[1]!.messages.concat([Message.assistant([Message.textPart("done")])]))
      assert.deepStrictEqual(received, [WRITTEN])
      clean(JSON.stringify(requests))
    }).pipe(Effect.provide(Layer.merge(
      TestModel.layer([TestModel.toolCall("echo", { text: WRITTEN }), TestModel.text("done"), TestModel.text("still here")]),
      SessionStore.layerMemory
    ))))
})

/**
 * TraceContent: a program that opts in gets what was said on the GenAI spans (the conventions'
 * `gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`,
 * `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`), every text redacted and cut; without
 * the opt-in, none of them (the whole span tree: test/genai-spans.test.ts).
 */
import { Spans, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted, Schema, Tracer } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Secret from "../src/Secret.ts"
import * as Session from "../src/Session.ts"
import * as Tool from "../src/Tool.ts"
import * as TraceContent from "../src/TraceContent.ts"

const SECRET = "tok-5d0a93e1c7"

/** Its result quotes the session's secret, and is long enough to be cut. */
const lookup = Tool.make("lookup", {
  description: "Looks a key up",
  parameters: Schema.Struct({ key: Schema.String }),
  call: ({ key }, { secrets }) => Effect.succeed(`${key} via ${Redacted.value(secrets["TOKEN"]!)} ${"x".repeat(TraceContent.MAX_TEXT)}`)
})

const agent = Agent.make({
  name: "looker",
  model: "test:scripted",
  system: `You look things up. Never print ${SECRET}.`,
  tools: [lookup],
  secrets: { TOKEN: Secret.static(SECRET) }
})

const replies = [TestModel.toolCall("lookup", { key: `k-${SECRET}` }, "call_1"), TestModel.text(`found it with ${SECRET}`)]

/** The attributes of every span the run made, by span name, in order. */
const traced = (content: boolean) =>
  Effect.gen(function*() {
    const recorder = yield* Spans.make
    const run = Effect.gen(function*() {
      const session = yield* Session.start(agent, { sandbox: Sandbox.layerNoop(), projectInstructions: false })
      yield* session.run(`Look up k-${SECRET}`)
    }).pipe(Effect.scoped, Effect.provideService(Tracer.Tracer, recorder.tracer))
    yield* content ? Effect.provide(run, TraceContent.layer) : run
    return recorder.spans.map((span) => [span.name, Object.fromEntries(span.attributes)] as const)
  }).pipe(Effect.provide(TestModel.layer(replies)))

const CONTENT_KEYS = ["gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"]

describe("TraceContent", () => {
  it.effect("opted in: the chat spans hold the messages sent and the reply, the tool span its arguments and result, redacted and cut", () =>
    Effect.gen(function*() {
      const spans = yield* traced(true)
      const chats = spans.filter(([name]) => name.startsWith("chat "))
      const tool = spans.find(([name]) => name === "execute_tool lookup")![1]
      const redacted = "[REDACTED:TOKEN]"
      assert.strictEqual(chats.length, 2)
      assert.strictEqual(chats[0]![1]["gen_ai.system_instructions"], JSON.stringify([{ type: "text", content: `You look things up. Never print ${redacted}.` }]))
      assert.strictEqual(chats[0]![1]["gen_ai.input.messages"], JSON.stringify([{ role: "user", parts: [{ type: "text", content: `Look up k-${redacted}` }] }]))
      assert.strictEqual(
        chats[0]![1]["gen_ai.output.messages"],
        JSON.stringify([{ role: "assistant", parts: [{ type: "tool_call", id: "call_1", name: "lookup", arguments: `{"key":"k-${redacted}"}` }], finish_reason: "tool-calls" }])
      )
      assert.strictEqual(tool["gen_ai.tool.call.arguments"], `{"key":"k-${redacted}"}`)
      // Redacted first, then cut: the cut says how much of the redacted text was left out.
      const result = `k-${redacted} via ${redacted} ${"x".repeat(TraceContent.MAX_TEXT)}`
      assert.strictEqual(
        tool["gen_ai.tool.call.result"],
        `${result.slice(0, TraceContent.MAX_TEXT)}… [${result.length - TraceContent.MAX_TEXT} more characters]`
      )
      const second = JSON.parse(String(chats[1]![1]["gen_ai.input.messages"])) as Array<{ role: string }>
      assert.deepStrictEqual(second.map((m) => m.role), ["user", "assistant", "tool"])
      assert.strictEqual(
        chats[1]![1]["gen_ai.output.messages"],
        JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: `found it with ${redacted}` }], finish_reason: "stop" }])
      )
      assert.notInclude(JSON.stringify(spans), SECRET)
    }))

  it.effect("not opted in (the default): no span holds any content attribute", () =>
    Effect.gen(function*() {
      const spans = yield* traced(false)
      assert.isAbove(spans.length, 3)
      for (const [, attributes] of spans) for (const key of CONTENT_KEYS) assert.notProperty(attributes, key)
      assert.notInclude(JSON.stringify(spans), SECRET)
      assert.notInclude(JSON.stringify(spans), "Look up")
    }))
})

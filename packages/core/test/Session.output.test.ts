/**
 * Typed answers (`run(prompt, { output })`): on a model without a native mechanism (TestModel) the
 * answer is a `submit` tool call, after any other tool calls of the run; on a native one the final
 * text is the answer's JSON. An answer that does not decode is sent back with the Schema's error,
 * up to the bound, then the run fails with `OutputInvalid` carrying the last reply.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Message from "../src/Message.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as Tool from "../src/Tool.ts"

const Echo = Tool.make("echo", {
  description: "Echoes",
  parameters: Schema.Struct({ text: Schema.String }),
  call: ({ text }) => Effect.succeed(text)
})

const agent = Agent.make({ name: "a", model: "test:x", tools: [Echo] })

const Answer = Schema.Struct({ city: Schema.String, population: Schema.Int })

const scripted = (replies: ReadonlyArray<TestModel.Reply>) => Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop())

/** The TestModel's script, on a model that says it honours `Request.output` natively. */
const native = (replies: ReadonlyArray<TestModel.Reply>) => Layer.mergeAll(TestModel.layer(replies, { nativeOutput: true }), Sandbox.layerNoop())

const toolResults = (requests: ReadonlyArray<TestModel.RecordedRequest>) =>
  requests.at(-1)!.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [[m.name, m.content, m.isError] as const] : []))

/** Why a reply that is not JSON does not decode. */
const notJson = "The reply is not JSON: reply with only the JSON of the answer."

const populationError = "Your answer does not match the required schema:\nExpected number\n  at [\"population\"]\nAnswer again."

describe("Session typed answers", () => {
  it.effect("on the submit path, a tool call then the answer as a submit call: value is decoded and typed", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const result = yield* session.run("Where?", { output: Answer })
      const typed: { readonly city: string; readonly population: number } = result.value
      assert.deepStrictEqual(typed, { city: "Lyon", population: 522_000 })
      assert.strictEqual(result.turns, 2)
      const requests = yield* (yield* TestModel.TestModel).requests
      assert.deepStrictEqual(requests[0]!.tools.map((t) => t.name), ["echo", "submit"])
      assert.strictEqual(requests[0]!.output, undefined)
      const history = yield* session.history
      assert.deepStrictEqual(
        history.flatMap((m) => (m._tag === "ToolResultMessage" ? [[m.name, m.content, m.isError]] : [])),
        [["echo", "hi", false], ["submit", "Answer received.", false]]
      )
      // The session goes on: a run without output is a plain run again.
      assert.strictEqual((yield* session.run("Thanks")).text, "bye")
      assert.deepStrictEqual((yield* (yield* TestModel.TestModel).requests)[2]!.tools.map((t) => t.name), ["echo"])
    }).pipe(Effect.provide(scripted([
      TestModel.toolCall("echo", { text: "hi" }),
      TestModel.toolCall("submit", { city: "Lyon", population: 522_000 }),
      TestModel.text("bye")
    ]))))

  it.effect("a wrong answer is sent back once with the Schema's error, and the corrected one is the value", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const result = yield* session.run("Where?", { output: Answer })
      assert.deepStrictEqual(result.value, { city: "Lyon", population: 522_000 })
      assert.strictEqual(result.turns, 2)
      const requests = yield* (yield* TestModel.TestModel).requests
      assert.deepStrictEqual(toolResults(requests), [["submit", populationError, true]])
    }).pipe(Effect.provide(scripted([
      TestModel.toolCall("submit", { city: "Lyon", population: "many" }),
      TestModel.toolCall("submit", { city: "Lyon", population: 522_000 })
    ]))))

  it.effect("a text reply on the submit path is told to call submit", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const result = yield* session.run("Where?", { output: Answer })
      assert.deepStrictEqual(result.value, { city: "Lyon", population: 1 })
      const requests = yield* (yield* TestModel.TestModel).requests
      const last = requests[1]!.messages.at(-1)!
      assert.deepStrictEqual(last._tag === "UserMessage" ? last.content : last._tag, "No answer was submitted: call the submit tool with your answer.")
    }).pipe(Effect.provide(scripted([TestModel.text("Lyon"), TestModel.toolCall("submit", { city: "Lyon", population: 1 })]))))

  it.effect("past the bound, the run fails with OutputInvalid carrying the last reply", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const error = yield* Effect.flip(session.run("Where?", { output: Answer, outputRetries: 1 }))
      assert.strictEqual(error._tag, "SessionError")
      assert.deepStrictEqual(error._tag === "SessionError" ? error.reason : undefined, new Session.OutputInvalid({
        reply: "{\"city\":\"Lyon\",\"population\":\"lots\"}",
        error: "Expected number\n  at [\"population\"]",
        retries: 1
      }))
      // The history is one a provider accepts: every call has its result, and the session goes on.
      assert.strictEqual((yield* session.run("again")).text, "ok")
    }).pipe(Effect.provide(scripted([
      TestModel.toolCall("submit", { city: "Lyon", population: "many" }),
      TestModel.toolCall("submit", { city: "Lyon", population: "lots" }),
      TestModel.text("ok")
    ]))))

  it.effect("by default a reply that is not JSON is corrected twice, then the run fails with OutputInvalid: three model calls (issue 44)", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const error = yield* Effect.flip(session.run("Where?", { output: Answer }))
      assert.deepStrictEqual(error._tag === "SessionError" ? error.reason : error, new Session.OutputInvalid({
        reply: "still Lyon",
        error: notJson,
        retries: 2
      }))
      const requests = yield* (yield* TestModel.TestModel).requests
      // The first request, then one per correction, each ending with why the reply before it failed.
      assert.deepStrictEqual(requests.map((r) => r.messages.at(-1)), [
        Message.user("Where?"),
        Message.user(`Your answer does not match the required schema:\n${notJson}\nAnswer again.`),
        Message.user(`Your answer does not match the required schema:\n${notJson}\nAnswer again.`)
      ])
    }).pipe(Effect.provide(native([
      TestModel.text("Lyon"),
      TestModel.text("Lyon, I said"),
      TestModel.text("still Lyon"),
      // A fourth answer would decode: a third correction would end the run with it.
      TestModel.text("{\"city\":\"Lyon\",\"population\":522000}")
    ]))))

  it.effect("on a native model, the request carries the answer's JSON Schema and the final text decodes; a wrong one is corrected", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const result = yield* session.run("Where?", { output: Answer })
      assert.deepStrictEqual(result.value, { city: "Lyon", population: 522_000 })
      assert.strictEqual(result.turns, 3)
      const requests = yield* (yield* TestModel.TestModel).requests
      assert.deepStrictEqual(requests[0]!.tools.map((t) => t.name), ["echo"])
      assert.deepStrictEqual(requests[0]!.output, {
        name: "answer",
        schema: {
          type: "object",
          properties: { city: { type: "string" }, population: { type: "integer" } },
          required: ["city", "population"],
          additionalProperties: false
        }
      })
      const last = requests[2]!.messages.at(-1)!
      assert.deepStrictEqual(last._tag === "UserMessage" ? last.content : last._tag, populationError)
    }).pipe(Effect.provide(native([
      TestModel.toolCall("echo", { text: "hi" }),
      TestModel.text("{\"city\":\"Lyon\",\"population\":\"many\"}"),
      TestModel.text("{\"city\":\"Lyon\",\"population\":522000}")
    ]))))
})

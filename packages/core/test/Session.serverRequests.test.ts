/**
 * What a session's tool sources ask of its user (runtime/serverRequests.ts), through a
 * hand-made source whose tools ask: a question answered with `respond` (checked by the source's
 * `validate`), an approval answered with `approve` / `deny`, the source's use of the session's
 * model counted in the run's usage. The MCP servers' side: packages/mcp/test/SessionRequests.test.ts.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Agent from "../src/Agent.ts"
import * as Approval from "../src/Approval.ts"
import * as Elicitation from "../src/Elicitation.ts"
import * as History from "../src/History.ts"
import * as Message from "../src/Message.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import type * as SessionEvent from "../src/SessionEvent.ts"
import * as Tool from "../src/Tool.ts"
import type * as ToolSource from "../src/ToolSource.ts"

const FORM: Elicitation.FormSchema = { type: "object", properties: { name: { type: "string" } }, required: ["name"] }

/** The source's check: `name` must be a string. */
const validate = (content: Elicitation.Content) => (typeof content["name"] === "string" ? undefined : "name: a string is required")

/** A source with two tools: `src.ask` asks the user its form, `src.sample` asks approval, then the session's model. */
const asking: ToolSource.ToolSource = {
  _tag: "ToolSource",
  name: "src",
  start: (context) =>
    Effect.succeed({
      tools: Effect.succeed([
        Tool.make("src.ask", {
          description: "Asks the user",
          parameters: Schema.Struct({}),
          call: () =>
            context.elicit!({ server: "src", message: "Your name?", schema: FORM, validate }).pipe(
              Effect.map((answer) => JSON.stringify(answer)),
              Effect.catch((refused) => Effect.succeed(`refused: ${refused.description}`))
            )
        }),
        Tool.make("src.sample", {
          description: "Samples the session's model",
          parameters: Schema.Struct({}),
          call: () =>
            Effect.flatMap(context.approve!({ tool: "sampling/createMessage", input: { prompt: "a colour?" } }), (answer) => {
              const refused = Approval.render(answer)
              if (refused !== undefined) return Effect.succeed(refused)
              const request = { system: undefined, messages: History.fromIterable([Message.user("a colour?")]), tools: [] }
              return Stream.runCollect(context.model!.stream(request)).pipe(
                Effect.map((parts) => Message.text(Model.toMessage(Array.from(parts)))),
                Effect.orDie
              )
            })
        })
      ])
    })
}

const agent = Agent.make({ name: "asked", model: "test:x", mcpServers: [asking] })
const env = (replies: ReadonlyArray<TestModel.Reply>) => Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop())
const results = (events: ReadonlyArray<SessionEvent.SessionEvent>) => events.flatMap((e) => (e._tag === "ToolResult" ? [e.content] : []))

describe("Session: what its sources ask", () => {
  it.effect("a question is an ElicitationRequested event; respond checks the answer, then gives it; a second respond fails", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent, { id: "s1" })
      const refusals: Array<string> = []
      const events = yield* session.stream("go").pipe(
        Stream.tap((event) =>
          event._tag !== "ElicitationRequested" ? Effect.void : Effect.gen(function*() {
            assert.deepStrictEqual({ server: event.server, message: event.message, schema: event.schema }, { server: "src", message: "Your name?", schema: FORM })
            refusals.push((yield* Effect.flip(session.respond(event.id, Elicitation.accept({ name: 7 })))).message)
            yield* session.respond(event.id, Elicitation.accept({ name: "Ada" }))
            refusals.push((yield* Effect.flip(session.respond(event.id, Elicitation.decline))).message)
          })
        ),
        Stream.runCollect
      )
      const id = Array.from(events).find((e) => e._tag === "ElicitationRequested")
      const asked = id?._tag === "ElicitationRequested" ? id.id : ""
      assert.deepStrictEqual(refusals, [
        `Session s1: the answer to question ${asked} does not fit its form: name: a string is required`,
        `Session s1: no question ${asked} is waiting for an answer (unknown, or already answered)`
      ])
      assert.deepStrictEqual(results(Array.from(events)), [JSON.stringify({ action: "accept", content: { name: "Ada" } })])
    }).pipe(Effect.provide(env([TestModel.toolCall("src.ask", {}), TestModel.text("done")]))))

  it.effect("a question nobody can answer (no handler, nobody reading) is refused with the reason", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const result = yield* session.run("go")
      assert.deepStrictEqual(result.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])), [`refused: ${Elicitation.NOBODY_TO_ASK}`])
    }).pipe(Effect.provide(env([TestModel.toolCall("src.ask", {}), TestModel.text("done")]))))

  it.effect("a handler's answer the form does not take is refused with the reason", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent, { elicitation: { handler: () => Effect.succeed(Elicitation.accept({})) } })
      const result = yield* session.run("go")
      assert.deepStrictEqual(result.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])), [
        `refused: ${Elicitation.handlerMisfit("name: a string is required")}`
      ])
    }).pipe(Effect.provide(env([TestModel.toolCall("src.ask", {}), TestModel.text("done")]))))

  it.effect("a source's approval is pending until approved or denied; the model it then uses counts in the run's usage and the session's", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const pending: Array<ReadonlyArray<Approval.Pending>> = []
      yield* Effect.forkChild(
        session.events.pipe(
          Stream.runForEach((event) =>
            event._tag !== "ApprovalRequested" ? Effect.void : Effect.gen(function*() {
              pending.push(yield* session.pending)
              yield* pending.length === 1 ? session.approve(event.callId) : session.deny(event.callId, "not now")
            })
          )
        ),
        { startImmediately: true }
      )
      const approved = yield* session.run("go")
      const denied = yield* session.run("again")
      const read = (result: Session.RunResult) => result.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))
      assert.deepStrictEqual(read(approved), ["teal"])
      assert.deepStrictEqual(read(denied), ["Denied by the user: not now"])
      assert.deepStrictEqual(pending.map((list) => list.map((p) => ({ tool: p.tool, input: p.input }))), [
        [{ tool: "sampling/createMessage", input: { prompt: "a colour?" } }],
        [{ tool: "sampling/createMessage", input: { prompt: "a colour?" } }]
      ])
      assert.deepStrictEqual(yield* session.pending, [])
      // 10 in and 5 out a request: the first run's two turns and the request its source sampled; the second's two turns.
      assert.deepStrictEqual([approved.usage, denied.usage], [{ inputTokens: 30, outputTokens: 15 }, { inputTokens: 20, outputTokens: 10 }])
      assert.deepStrictEqual(yield* session.usage, { inputTokens: 50, outputTokens: 25 })
    }).pipe(Effect.provide(env([
      TestModel.toolCall("src.sample", {}),
      TestModel.text("teal"),
      TestModel.text("done"),
      TestModel.toolCall("src.sample", {}),
      TestModel.text("done again")
    ]))))

  it.effect("a source's approval nobody answers within the rules' timeout is a denial", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent, { approvals: { timeout: "1 second" } })
      const asked = yield* Deferred.make<void>()
      yield* Effect.forkChild(
        session.events.pipe(Stream.runForEach((event) => (event._tag === "ApprovalRequested" ? Deferred.succeed(asked, undefined) : Effect.void))),
        { startImmediately: true }
      )
      const running = yield* Effect.forkChild(session.run("go"), { startImmediately: true })
      yield* Deferred.await(asked)
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(running)
      assert.deepStrictEqual(result.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])), ["Denied: nobody approved this call within 1000ms"])
    }).pipe(Effect.provide(env([TestModel.toolCall("src.sample", {}), TestModel.text("done")]))))

  it.effect("an abort while a source's approval waits ends it: it is no longer pending", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent)
      const asked = yield* Deferred.make<string>()
      yield* Effect.forkChild(
        session.events.pipe(Stream.runForEach((event) => (event._tag === "ApprovalRequested" ? Deferred.succeed(asked, event.callId) : Effect.void))),
        { startImmediately: true }
      )
      const running = yield* Effect.forkChild(Effect.exit(session.run("go")), { startImmediately: true })
      const callId = yield* Deferred.await(asked)
      yield* session.abort
      yield* Fiber.join(running)
      assert.deepStrictEqual(yield* session.pending, [])
      const late = yield* Effect.flip(session.approve(callId))
      assert.strictEqual(late._tag, "ApprovalNotPending")
    }).pipe(Effect.provide(env([TestModel.toolCall("src.sample", {}), TestModel.text("done")]))))

  it.effect("a question asked between runs reaches the observers with an empty run id, and respond answers it", () =>
    Effect.gen(function*() {
      const lent = yield* Deferred.make<ToolSource.StartContext>()
      const idle: ToolSource.ToolSource = {
        _tag: "ToolSource",
        name: "idle",
        start: (context) => Effect.as(Deferred.succeed(lent, context), { tools: Effect.succeed([]) })
      }
      const session = yield* Session.start(Agent.make({ name: "asked", model: "test:x", mcpServers: [idle] }))
      const seen = yield* Deferred.make<string>()
      yield* Effect.forkChild(
        session.events.pipe(
          Stream.runForEach((event) =>
            event._tag !== "ElicitationRequested" ? Effect.void : Effect.andThen(
              Deferred.succeed(seen, event.runId),
              session.respond(event.id, Elicitation.accept({ name: "Ada" }))
            )
          )
        ),
        { startImmediately: true }
      )
      const context = yield* Deferred.await(lent)
      const answer = yield* context.elicit!({ server: "idle", message: "Your name?", schema: FORM, validate })
      assert.deepStrictEqual({ answer, runId: yield* Deferred.await(seen) }, { answer: Elicitation.accept({ name: "Ada" }), runId: "" })
    }).pipe(Effect.provide(env([]))))
})

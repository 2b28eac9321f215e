/**
 * A session given an `answerer`: each of its calls that asks is answered in-process, as `approve`
 * and `deny` would answer it; an answerer that cannot answer fails the run with the typed reason,
 * and closing the session interrupts an answerer still deciding. A scripted model.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Ref, Schema, Scope } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Approval from "../src/Approval.ts"
import type * as Message from "../src/Message.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as Tool from "../src/Tool.ts"

/** `rm`, which asks before every call and counts its runs in `ran`. */
const rmCounted = (ran: Ref.Ref<ReadonlyArray<string>>) =>
  Tool.make("rm", {
    description: "Removes a path",
    parameters: Schema.Struct({ path: Schema.String }),
    needsApproval: true,
    call: ({ path }) => Effect.as(Ref.update(ran, (all) => [...all, `rm ${path}`]), "rm ran")
  })

const env = Layer.mergeAll(TestModel.layer([TestModel.toolCall("rm", { path: "/" }, "c_1"), TestModel.text("done")]), Sandbox.layerNoop())

/** The tool results of the model's second request, as the model read them. */
const resultsRead = Effect.map(Effect.flatMap(Effect.service(TestModel.TestModel), (model) => model.requests), (requests) =>
  requests[1]!.messages.flatMap((m: Message.Message) => (m._tag === "ToolResultMessage" ? [{ callId: m.callId, content: m.content, isError: m.isError }] : [])))

const request: Approval.Request = { agent: "a", callId: "c_1", tool: "rm", input: { path: "/" } }

describe("Session answerer", () => {
  it.effect("an approval: the call runs once and the model reads its result; the answerer heard the call and the agent", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const asked: Array<Approval.Request> = []
      const agent = Agent.make({ name: "a", model: "test:x", tools: [rmCounted(ran)] })
      const session = yield* Session.start(agent, { answerer: (request) => Effect.as(Effect.sync(() => asked.push(request)), Approval.approved) })
      const result = yield* session.run("clean up")
      assert.strictEqual(result.text, "done")
      // The request is its record's too: its own id (a UUIDv7) and what asked.
      const [heard] = asked
      assert.match(heard!.id ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      assert.deepStrictEqual(asked, [{ ...request, id: heard!.id, rule: "needsApproval" }])
      assert.deepStrictEqual(yield* Ref.get(ran), ["rm /"])
      assert.deepStrictEqual(yield* resultsRead, [{ callId: "c_1", content: "rm ran", isError: false }])
      assert.deepStrictEqual(yield* session.pending, [])
    }).pipe(Effect.provide(env)))

  it.effect("a denial with a reason: nothing runs and the model reads the denial", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const agent = Agent.make({ name: "a", model: "test:x", tools: [rmCounted(ran)] })
      const session = yield* Session.start(agent, { answerer: () => Effect.succeed(Approval.denied("not on my machine")) })
      const result = yield* session.run("clean up")
      assert.strictEqual(result.text, "done")
      assert.deepStrictEqual(yield* Ref.get(ran), [])
      assert.deepStrictEqual(yield* resultsRead, [{ callId: "c_1", content: "Denied by the user: not on my machine", isError: true }])
    }).pipe(Effect.provide(env)))

  // Without a timeout the batch parks before the answerer decides; with one it cannot park, and the running batch fails.
  for (const approvals of [undefined, { timeout: "5 minutes" }] as const) {
    it.effect(`nobody can answer${approvals === undefined ? "" : " (a batch that cannot park)"}: the run fails with ApprovalUnanswered naming the tool and the call; nothing ran`, () =>
      Effect.gen(function*() {
        const ran = yield* Ref.make<ReadonlyArray<string>>([])
        const agent = Agent.make({ name: "a", model: "test:x", tools: [rmCounted(ran)] })
        const session = yield* Session.start(agent, { answerer: Approval.nobody, approvals })
        const error = yield* Effect.flip(session.run("clean up"))
        const description = "rm (call c_1) needs approval and nobody can answer: give the run an `approve` answerer"
        assert.deepStrictEqual(
          error,
          new Session.SessionError({
            sessionId: session.id,
            reason: new Approval.Unanswered({ agent: "a", callId: "c_1", tool: "rm", description })
          })
        )
        assert.strictEqual(error.message, `Session ${session.id}: ${description}`)
        // The caller tells it by its reason's tag.
        const told = yield* Effect.catchReason(session.run("again"), "SessionError", "ApprovalUnanswered", (reason) => Effect.succeed(reason.tool))
        assert.strictEqual(told, "rm")
        assert.deepStrictEqual(yield* Ref.get(ran), [])
        assert.deepStrictEqual(yield* session.pending, [])
      }).pipe(Effect.provide(Layer.mergeAll(
        TestModel.layer([TestModel.toolCall("rm", { path: "/" }, "c_1"), TestModel.toolCall("rm", { path: "/" }, "c_1")]),
        Sandbox.layerNoop()
      ))))
  }

  it.effect("the session closed while the answerer decides: its fiber is interrupted, and nothing runs", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const deciding = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const answerer: Approval.Answerer = () =>
        Effect.andThen(Deferred.succeed(deciding, undefined), Effect.never).pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)))
      const agent = Agent.make({ name: "a", model: "test:x", tools: [rmCounted(ran)] })
      const scope = yield* Scope.make()
      const session = yield* Scope.provide(Session.start(agent, { answerer }), scope)
      const run = yield* Effect.forkChild(session.run("clean up"))
      yield* Deferred.await(deciding)
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.await(interrupted)
      assert.deepStrictEqual(yield* Fiber.await(run), Exit.fail(new Session.SessionError({ sessionId: session.id, reason: new Session.SessionStopped() })))
      assert.deepStrictEqual(yield* Ref.get(ran), [])
    }).pipe(Effect.provide(env)))
})

/**
 * A sub-agent's call waiting for approval is answered through the session whose stream announced
 * it (`Agent.asTool`, docs/sub-agents.md): the child's ApprovalRequested reaches the parent's
 * stream tagged with its agent path, and the parent's `approve` or `deny` answers it, two levels
 * deep too; an id nothing waits on is still `ApprovalNotPending`.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Ref, Schema, Stream } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Approval from "../src/Approval.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import type * as SessionEvent from "../src/SessionEvent.ts"
import * as Tool from "../src/Tool.ts"

/** A `lookup` tool that records what it looked up. */
const lookup = (ran: Ref.Ref<ReadonlyArray<string>>) =>
  Tool.make("lookup", {
    description: "Looks a term up",
    parameters: Schema.Struct({ term: Schema.String }),
    call: ({ term }) => Effect.as(Ref.update(ran, (all) => [...all, term]), `found ${term}`)
  })

/** Each agent its own scripted model, through the provider registry. */
const models = (scripts: Readonly<Record<string, ReadonlyArray<TestModel.Reply>>>) =>
  Layer.unwrap(Effect.gen(function*() {
    const providers: Record<string, () => Effect.Effect<Model.Service>> = {}
    for (const [name, replies] of Object.entries(scripts)) {
      const made = yield* TestModel.make(replies, { name: `${name}:x` })
      providers[name] = () => Effect.succeed(made.model)
    }
    return Layer.mergeAll(Model.layerProviders(providers), Sandbox.layerNoop())
  }))

/** Streams `prompt`, answering each ApprovalRequested through `session` with `answer`; the events as short lines. */
const answering = (session: Session.Session, answer: (event: SessionEvent.ApprovalRequested) => Effect.Effect<void, Approval.NotPending>) =>
  Effect.scoped(Effect.gen(function*() {
    const lines: Array<string> = []
    yield* Stream.runForEach(session.stream("Find out"), (event) => {
      const who = event.agentPath === undefined ? "" : `${event.agentPath.join("/")} `
      if (event._tag === "ApprovalRequested") {
        lines.push(`${who}ApprovalRequested ${event.tool} ${event.callId}`)
        return Effect.asVoid(Effect.forkScoped(Effect.orDie(answer(event))))
      }
      if (event._tag === "ToolResult") lines.push(`${who}ToolResult ${event.name} ${event.content}`)
      return Effect.void
    })
    return lines
  }))

describe("a sub-agent's approvals", () => {
  it.effect("its ApprovalRequested reaches the parent's stream and the parent's approve lets the call run; the parent's run completes", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const researcher = Agent.make({ name: "researcher", model: "child:x", tools: [lookup(ran)], approvals: { ask: ["lookup"] } })
      const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [Agent.asTool(researcher, { description: "Researches" })] }))
      const lines = yield* answering(session, (event) => session.approve(event.callId))
      assert.deepStrictEqual(lines, [
        "main/researcher ApprovalRequested lookup c_lookup",
        "main/researcher ToolResult lookup found effect",
        "ToolResult researcher It is a library"
      ])
      assert.deepStrictEqual(yield* Ref.get(ran), ["effect"])
      assert.deepStrictEqual(yield* session.pending, [])
    }).pipe(Effect.scoped, Effect.provide(models({
      parent: [TestModel.toolCall("researcher", { prompt: "What is effect?" }, "c_research"), TestModel.text("Done")],
      child: [TestModel.toolCall("lookup", { term: "effect" }, "c_lookup"), TestModel.text("It is a library")]
    }))))

  it.effect("two levels down, the top session's deny is the grandchild's result; an id nothing waits on is ApprovalNotPending", () =>
    Effect.gen(function*() {
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const leaf = Agent.make({ name: "leaf", model: "leaf:x", tools: [lookup(ran)], approvals: { ask: ["lookup"] } })
      const middle = Agent.make({ name: "middle", model: "middle:x", tools: [Agent.asTool(leaf, { description: "Looks up" })] })
      const session = yield* Session.start(Agent.make({ name: "main", model: "parent:x", tools: [Agent.asTool(middle, { description: "Delegates" })] }))
      const unknown = yield* Effect.flip(session.approve("c_nothing"))
      assert.deepStrictEqual([unknown._tag, unknown.callId], ["ApprovalNotPending", "c_nothing"])
      const lines = yield* answering(session, (event) => session.deny(event.callId, "not now"))
      assert.deepStrictEqual(lines, [
        "main/middle/leaf ApprovalRequested lookup c_leaf",
        `main/middle/leaf ToolResult lookup ${Approval.deniedByUser("not now")}`,
        "main/middle ToolResult leaf Nothing found",
        "ToolResult middle Nothing came back"
      ])
      assert.deepStrictEqual(yield* Ref.get(ran), [])
    }).pipe(Effect.scoped, Effect.provide(models({
      parent: [TestModel.toolCall("middle", { prompt: "Delegate" }, "c_middle"), TestModel.text("Done")],
      middle: [TestModel.toolCall("leaf", { prompt: "Look it up" }, "c_leaf_call"), TestModel.text("Nothing came back")],
      leaf: [TestModel.toolCall("lookup", { term: "effect" }, "c_leaf"), TestModel.text("Nothing found")]
    }))))
})

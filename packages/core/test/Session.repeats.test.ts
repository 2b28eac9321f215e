/**
 * No silent repeats at every commit (issue 25 item 3): a scripted 10-turn run with tool calls is
 * run once with a store, keeping every snapshot it saved; then, for each save in turn, a process
 * that died right after it is played: a new session resumes from that snapshot alone, with a
 * model scripted with the replies not yet committed. Each resumed transcript equals the
 * uninterrupted one but for the calls cut off, which read that they were interrupted (a
 * `retrySafe` tool's run again instead); no committed model turn is asked for again; no call of
 * a tool that is not `retrySafe` runs twice across both processes.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Message from "../src/Message.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as SessionStore from "../src/SessionStore.ts"
import type * as Snapshot from "../src/Snapshot.ts"
import { cutOff } from "./fixtures/cutOff.ts"
import { look, note, rm } from "./fixtures/loggedTools.ts"

/** Two tools that log each run by call id: `note` may not run twice, `look` may. */
const agentLogging = (ran: Array<string>) =>
  Agent.make({
    name: "worker",
    model: "test:x",
    // `note` runs alone: the call after it in the same message starts (and commits) once it finished.
    tools: [note(ran, { concurrent: false }), look(ran)]
  })

const call = (tool: "note" | "look", id: string, n: number) => TestModel.toolCall(tool, { n }, id)

/** Nine turns of calls (one or two per message), then the answer. */
const script = [
  call("note", "c1", 1),
  call("look", "c2", 2),
  TestModel.reply(call("note", "c3a", 3), call("look", "c3b", 3)),
  call("note", "c4", 4),
  TestModel.reply(call("look", "c5a", 5), call("look", "c5b", 5)),
  call("note", "c6", 6),
  TestModel.reply(call("note", "c7a", 7), call("note", "c7b", 7)),
  call("look", "c8", 8),
  call("note", "c9", 9),
  TestModel.text("done")
]

const sandbox = Sandbox.layerNoop()

/** The uninterrupted run: every snapshot saved, with how many calls had run when it was. */
const uninterrupted = Effect.gen(function*() {
  const ran: Array<string> = []
  const memory = SessionStore.makeMemory()
  const saves: Array<{ readonly snapshot: Snapshot.Snapshot; readonly ran: number }> = []
  const store: SessionStore.Service = {
    ...memory,
    save: (snapshot, options) => Effect.andThen(Effect.sync(() => saves.push({ snapshot, ran: ran.length })), memory.save(snapshot, options))
  }
  const session = yield* Session.start(agentLogging(ran), { id: "w", store, sandbox, projectInstructions: false })
  assert.strictEqual((yield* session.run("work")).text, "done")
  return { saves, history: yield* session.history, ran }
}).pipe(Effect.scoped, Effect.provide(TestModel.layer(script)))

/** A process that died right after `snapshot` was saved, having run `before`: the session resumed from it alone. */
const resumedFrom = (snapshot: Snapshot.Snapshot, before: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const ran = [...before]
    const store = SessionStore.makeMemory()
    yield* store.save(snapshot)
    const committed = snapshot.messages.filter((m) => m._tag === "AssistantMessage").length
    const { model, recorder } = yield* TestModel.make([...script.slice(committed), TestModel.text("after done")])
    const session = yield* Session.start(agentLogging(ran), { id: "w", store, sandbox, projectInstructions: false }).pipe(
      Effect.provideService(Model.Model, model)
    )
    // Queued behind the run the session goes on with, if one was in flight.
    assert.strictEqual((yield* session.run("after")).text, "after done")
    return { history: yield* session.history, ran, remaining: yield* recorder.remaining, requests: (yield* recorder.requests).length, committed }
  }).pipe(Effect.scoped)

const INTERRUPTED =
  "Interrupted: the machine running this call failed before the call finished, and the call was not run again. Whatever it did before the failure may or may not have taken effect: check before relying on it."

describe("no silent repeats", () => {
  it.effect("a run killed right after each of its commits resumes to the uninterrupted transcript but for interrupted notices; no turn asked twice, no call run twice unless retrySafe", () =>
    Effect.gen(function*() {
      const reference = yield* uninterrupted
      // Every start of calls and every turn is a commit: 21 boundaries for 10 turns.
      assert.strictEqual(reference.saves.length, 21)
      for (const [i, { ran, snapshot }] of reference.saves.entries()) {
        const before = reference.ran.slice(0, ran)
        const resumed = yield* resumedFrom(snapshot, before)
        const cutOff = new Set(snapshot.batch?.started ?? [])
        const expected = reference.history.map((message): Message.Message => {
          if (message._tag !== "ToolResultMessage" || !cutOff.has(message.callId) || message.name === "look") return message
          return { ...message, content: INTERRUPTED, isError: true }
        })
        const at = `after save ${i + 1} of ${reference.saves.length}`
        assert.deepStrictEqual(resumed.history, [...expected, Message.user("after"), Message.assistant([Message.textPart("after done")])], at)
        // Every scripted reply asked for once: none of the committed ones again.
        assert.strictEqual(resumed.remaining, 0, at)
        assert.strictEqual(resumed.requests, script.length - resumed.committed + 1, at)
        const counts = new Map<string, number>()
        for (const id of resumed.ran) counts.set(id, (counts.get(id) ?? 0) + 1)
        for (const [id, count] of counts) {
          const retrySafe = reference.history.some((m) => m._tag === "ToolResultMessage" && m.callId === id && m.name === "look")
          assert.isAtMost(count, retrySafe ? 2 : 1, `${at}: ${id} ran ${count} times`)
        }
      }
    }))

  it.effect("a run that failed after its results were committed ends in the store too: the next process does not go on with it", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const store = SessionStore.makeMemory()
      const first = yield* Session.start(agentLogging(ran), { id: "w", store, sandbox, projectInstructions: false }).pipe(
        Effect.provide(TestModel.layer([call("note", "c1", 1), TestModel.error("the provider is down")]))
      )
      assert.strictEqual((yield* Effect.flip(first.run("work")))._tag, "ModelError")
      const saved = yield* store.load("w")
      assert.isTrue(saved._tag === "Some" && saved.value.batch === undefined && saved.value.messages.length === 3)
      const { model, recorder } = yield* TestModel.make([TestModel.text("again done")])
      const second = yield* Session.start(agentLogging(ran), { id: "w", store, sandbox, projectInstructions: false }).pipe(
        Effect.provideService(Model.Model, model)
      )
      assert.strictEqual((yield* second.run("again")).text, "again done")
      assert.deepStrictEqual((yield* recorder.requests).map((request) => request.messages.at(-1)), [Message.user("again")])
      assert.deepStrictEqual(ran, ["c1"])
    }).pipe(Effect.scoped))

  it.effect("a message with a call waiting for approval and one cut off: the answer continues it, the cut-off call reads that it was interrupted", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const careful = Agent.make({
        name: "worker",
        model: "test:x",
        tools: [...agentLogging(ran).tools, rm(ran)]
      })
      const store = yield* cutOff({
        id: "w",
        agent: "worker",
        prompt: "clean",
        calls: [
          Message.toolCallPart({ id: "c_rm", name: "rm", input: { path: "/tmp/x" } }),
          Message.toolCallPart({ id: "c_note", name: "note", input: { n: 1 } })
        ],
        batch: { waiting: [{ callId: "c_rm", tool: "rm", input: { path: "/tmp/x" } }], results: [], started: ["c_note"] }
      })
      const session = yield* Session.start(careful, { id: "w", store, sandbox, projectInstructions: false })
      assert.deepStrictEqual(yield* session.pending, [{ callId: "c_rm", tool: "rm", input: { path: "/tmp/x" } }])
      yield* session.approve("c_rm")
      // Queued behind the continued message.
      assert.strictEqual((yield* session.run("next")).text, "next done")
      assert.deepStrictEqual(ran, ["c_rm"])
      const results = (yield* session.history).flatMap((m) => (m._tag === "ToolResultMessage" ? [`${m.callId}: ${m.content}`] : []))
      assert.deepStrictEqual(results, ["c_rm: removed /tmp/x", `c_note: ${INTERRUPTED}`])
    }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.text("clean done"), TestModel.text("next done")]))))
})

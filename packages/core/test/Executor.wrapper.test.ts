/**
 * What wraps an executor (`Executor.Wrapper`, `Executor.compose`): the hooks in their order around
 * each call — `around` outermost first, `admit` after the arguments decode (the first refusal is
 * the call's result, and the call does not start), `started` before it runs, `settled` with every
 * result (an unknown tool's too); `batch` once, before any call of a batch of several runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import * as Executor from "../src/Executor.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Tool from "../src/Tool.ts"

const context = { sessionId: "s1", agent: "tester", sandbox: Sandbox.makeNoop(), cwd: "/", secrets: {} }

/** A wrapper that writes each hook it runs into `log`, named `name`; it refuses the calls `refuses` names. */
const recording = (name: string, log: Array<string>, refuses: ReadonlyArray<string> = []): Executor.Wrapper<never> => ({
  batch: (found) => Effect.sync(() => void log.push(`${name} batch ${found.map(({ call }) => call.id).join(",")}`)),
  around: (found, self) =>
    Effect.andThen(Effect.sync(() => void log.push(`${name} around> ${found.call.id}`)), Effect.tap(self, () => Effect.sync(() => void log.push(`${name} <around ${found.call.id}`)))),
  admit: (found) =>
    Effect.sync(() => {
      log.push(`${name} admit ${found.call.id}`)
      return refuses.includes(found.call.id) ? `${name} refuses ${found.call.id}` : undefined
    }),
  started: (call) => Effect.sync(() => void log.push(`${name} started ${call.id}`)),
  settled: (done) => Effect.sync(() => void log.push(`${name} settled ${done.result.callId} ${done.result.content}`))
})

describe("Executor.Wrapper", () => {
  it.effect("composed wrappers run in order around each call; the first refusal is the result and the call never starts", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const echo = Tool.make("echo", {
        description: "Echoes",
        parameters: Schema.Struct({ text: Schema.String }),
        call: ({ text }) => Effect.sync(() => {
          ran.push(text)
          return text
        })
      })
      const executor = Result.getOrThrow(Executor.make([echo], { concurrency: 1 }))
      const log: Array<string> = []
      const wrapper = Executor.compose(recording("outer", log), undefined, recording("inner", log, ["c2"]))
      const calls = [
        { id: "c1", name: "echo", input: { text: "one" } },
        { id: "c2", name: "echo", input: { text: "two" } },
        { id: "c3", name: "nope", input: {} }
      ]
      const outcome = yield* executor.run(calls, context, {}, wrapper)
      assert.deepStrictEqual(outcome.results.map((r) => [r.callId, r.content, r.isError]), [
        ["c1", "one", false],
        ["c2", "inner refuses c2", true],
        ["c3", "Unknown tool: nope", true]
      ])
      assert.deepStrictEqual(ran, ["one"])
      assert.deepStrictEqual(log, [
        "outer batch c1,c2",
        "inner batch c1,c2",
        "outer around> c1",
        "inner around> c1",
        "outer admit c1",
        "inner admit c1",
        "outer started c1",
        "inner started c1",
        "inner <around c1",
        "outer <around c1",
        "outer settled c1 one",
        "inner settled c1 one",
        "outer around> c2",
        "inner around> c2",
        "outer admit c2",
        "inner admit c2",
        "inner <around c2",
        "outer <around c2",
        "outer settled c2 inner refuses c2",
        "inner settled c2 inner refuses c2",
        "outer settled c3 Unknown tool: nope",
        "inner settled c3 Unknown tool: nope"
      ])
    }))

  it("compose of one wrapper is that wrapper; of none, no wrapper", () => {
    const one = recording("only", [])
    assert.strictEqual(Executor.compose(undefined, one), one)
    assert.strictEqual(Executor.compose(undefined, undefined), undefined)
  })
})

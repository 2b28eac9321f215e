import { Tool } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { type Expression, type RunJournal, Workflow, type WorkflowEvent } from "../src/index.ts"

const SOURCE = `
workflow "chain" {
  tool "first" {
    id = "echo"
    args = { text = "one" }
  }
  tool "second" {
    needs = ["first"]
    id = "echo"
    args = { text = "two after \${task.first.output}" }
  }
  tool "third" {
    needs = ["second"]
    id = "echo"
    args = { text = "three" }
  }
  output = [task.first.output, task.second.output, task.third.output]
}
`

/**
 * A journal in memory, as a durable run's store would hold it after a restart: `recorded` steps'
 * outputs, and the steps an earlier process had `started` without finishing.
 */
const memoryJournal = (recorded: Map<string, Expression.Value>, started: ReadonlySet<string>): RunJournal.RunJournal => ({
  step: (id, run) => {
    const known = recorded.get(id)
    if (known !== undefined) return Effect.succeed({ value: known, replayed: true })
    return Effect.map(run(started.has(id)), (value) => {
      recorded.set(id, value)
      return { value, replayed: false }
    })
  }
})

describe("RunEngine with a run journal", () => {
  it.live("a recorded step is not run and says it was resumed; a step started before runs again and says so; the others run as usual", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      const echo = Tool.make("echo", {
        description: "Echoes its text",
        parameters: Schema.Struct({ text: Schema.String }),
        call: ({ text }) => Effect.sync(() => (calls.push(text), text))
      })
      const events: Array<WorkflowEvent.WorkflowEvent> = []
      const recorded = new Map<string, Expression.Value>([["first", { ok: true, output: "uno" }]])
      const document = yield* Workflow.parse(SOURCE, "chain.hcl")
      const result = yield* Workflow.run(document, {
        sandbox: "virtual",
        tools: [echo],
        journal: memoryJournal(recorded, new Set(["second"])),
        onEvent: (event) => Effect.sync(() => void events.push(event))
      })
      assert.deepStrictEqual(result.output, ["uno", "two after uno", "three"])
      assert.deepStrictEqual(calls, ["two after uno", "three"])
      assert.deepStrictEqual(
        // Times left out: the steps' events, in order, with their flags.
        events.flatMap((event): ReadonlyArray<Record<string, unknown>> => {
          if (event._tag === "StepStarted") {
            const { at: _, ...rest } = event
            return [{ ...rest }]
          }
          if (event._tag === "StepFinished") {
            const { at: _, durationMs: __, ...rest } = event
            return [{ ...rest }]
          }
          return []
        }),
        [
          { _tag: "StepFinished", step: "first", resumed: true },
          { _tag: "StepStarted", step: "second", restarted: true },
          { _tag: "StepFinished", step: "second", resumed: false },
          { _tag: "StepStarted", step: "third" },
          { _tag: "StepFinished", step: "third", resumed: false }
        ]
      )
      assert.deepStrictEqual([...recorded.keys()], ["first", "second", "third"])
    }).pipe(Effect.provide(Condukt.layer)))
})

/**
 * The runs a server makes of workflows with a virtual sandbox share one pool of worker threads,
 * which lives as long as the server (issue 43, docs/decisions/0100): a pool per run would start a
 * worker for each run and end it with the run.
 */
import { Condukt } from "@condukt/node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { Workflow } from "@condukt/workflows"
import * as ServedWorkflows from "../src/ServedWorkflows.ts"

/** Worker threads alive in this process: each holds a message port open. */
const threads = () => process.getActiveResourcesInfo().filter((resource) => resource === "MessagePort").length

const source = `
workflow "greet" {
  runtime {
    sandbox = "virtual"
  }
  input "name" {
    type = "string"
  }
  cmd "hello" {
    argv = ["echo", "hello \${input.name}"]
  }
  output = task.hello.stdout
}
`

describe("ServedWorkflows", () => {
  it.live("the runs of workflows on a virtual sandbox share the server's pool of worker threads, which ends with the server", () =>
    Effect.gen(function*() {
      const document = yield* Workflow.parse(source, "greet.hcl")
      const before = threads()
      const outputs = yield* Effect.scoped(Effect.gen(function*() {
        const served = yield* ServedWorkflows.make({ workflows: [{ file: "greet.hcl", document, redact: (text) => text }] })
        const ran = yield* Effect.forEach(["ada", "bob", "cy"], (name) =>
          Effect.gen(function*() {
            const runId = yield* served.start("greet", { name }, "alice")
            return yield* served.get(runId).pipe(
              Effect.map(({ run }) => run),
              Effect.repeat({ until: (run) => run.outcome !== "running", schedule: Schedule.spaced("20 millis") })
            )
          }), { concurrency: "unbounded" })
        // The runs are over and their workers stay with the server's pool for its next runs.
        assert.isAbove(threads() - before, 0)
        return ran.map((run) => [run.outcome, run.output])
      }))
      assert.deepStrictEqual(outputs, [["succeeded", "hello ada\n"], ["succeeded", "hello bob\n"], ["succeeded", "hello cy\n"]])
      // Closing the server's scope ends its pool's workers.
      yield* Effect.repeat(Effect.sync(threads), { until: (count) => count === before, schedule: Schedule.spaced("20 millis"), times: 250 })
      assert.strictEqual(threads(), before)
    }).pipe(Effect.provide(Condukt.layer)), 30_000)
})

/** The `cmd` step's output limit: a cut output never passes for a whole one. */
import { Condukt } from "@condukt/node"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Workflow } from "../../src/index.ts"

const print = (bytes: number, attributes = "") => `
workflow "print" {
  cmd "big" {
    argv = ["sh", "-c", "yes 0123456789abcdef | head -c ${bytes}"]
    ${attributes}
  }
  output = task.big
}`

const run = (source: string) => Effect.flatMap(Workflow.parse(source, "print.hcl"), (document) => Workflow.run(document))
const failure = (source: string) => Effect.map(Effect.flip(run(source)), (error) => [error.reason, error.message] as const)

describe("Cmd step", () => {
  it.live("a 20 MB output fails the step at the default 10 MiB, naming the limit", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* failure(print(20_000_000)), [
        "OutputTooLarge",
        "step big: the output of sh passed 10485760 bytes (max_output_bytes); raise max_output_bytes on the step, or write the output to a file and read what you need"
      ])
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("max_output_bytes raises the limit (the run's sandbox collects that much) and lowers it", () =>
    Effect.gen(function*() {
      const whole = yield* run(print(20_000_000, "max_output_bytes = 25000000"))
      const output = whole.output as { readonly ok: boolean; readonly stdout: string }
      assert.strictEqual(output.ok, true)
      assert.strictEqual(output.stdout.length, 20_000_000)
      assert.deepStrictEqual(yield* failure(print(2000, "max_output_bytes = 1000")), [
        "OutputTooLarge",
        "step big: the output of sh passed 1000 bytes (max_output_bytes); raise max_output_bytes on the step, or write the output to a file and read what you need"
      ])
    }).pipe(Effect.provide(Condukt.layer)))
})

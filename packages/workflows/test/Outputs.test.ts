import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { Outputs, Workflow } from "../src/index.ts"

/** What `Outputs.check` says of a workflow body: ok, or the failure's step and message. */
const checked = (body: string) =>
  Effect.map(Workflow.parse(`workflow "w" {\n${body}\n}\n`, "w.hcl"), (document) =>
    Result.match(Outputs.check(document), {
      onSuccess: () => ["ok"] as const,
      onFailure: (error) => [error.reason, error.step, error.message] as const
    }))

const CMD = `  cmd "a" {\n    argv = ["true"]\n  }`

describe("Outputs", () => {
  it.effect("every member a step kind has passes, deeper members and index reads included", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(
        yield* checked(`${CMD}
  http "h" {
    method = "GET"
    url = "http://127.0.0.1:1/"
  }
  tool "t" {
    id = "Read"
  }
  input "xs" {
    type = "array"
  }
  map "m" {
    over = input.xs
    as = "x"
    cmd {
      argv = ["echo", x]
    }
  }
  output = [task.a.stdout, task.a["exit_code"], task.h.body.version, task.h.headers, task.t.error, task.m[0].ok]`),
        ["ok"]
      )
    }))

  it.effect("a member the step's kind does not have is refused, naming the step that reads it", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* checked(`${CMD}\n  cmd "b" {\n    needs = ["a"]\n    argv = ["echo", task.a.stdot]\n  }`), [
        "UnknownMember",
        "b",
        "step b: reads steps.a.stdot, but a cmd step's output has only ok, stdout, exit_code"
      ])
      assert.deepStrictEqual(yield* checked(`${CMD}\n  agent "b" {\n    needs = ["a"]\n    when = task.a.status == 0\n    input = "hi"\n  }`), [
        "UnknownMember",
        "b",
        "step b: reads steps.a.status, but a cmd step's output has only ok, stdout, exit_code"
      ])
    }))

  it.effect("a member read of a map's list, and a bad member in output, are refused", () =>
    Effect.gen(function*() {
      const map = `  input "xs" {\n    type = "array"\n  }\n  map "m" {\n    over = input.xs\n    as = "x"\n    agent {\n      input = x\n    }\n  }`
      assert.deepStrictEqual(yield* checked(`${map}\n  output = task.m.output`), [
        "UnknownMember",
        "",
        "output reads steps.m.output, but a map step's output is the list of its items' outputs; index it first (steps.m[0].output)"
      ])
      assert.deepStrictEqual(yield* checked(`${map}\n  output = task.m[0].text`), ["ok"])
      assert.deepStrictEqual(yield* checked(`${CMD}\n  output = task.a.exitcode`), [
        "UnknownMember",
        "",
        "output reads steps.a.exitcode, but a cmd step's output has only ok, stdout, exit_code"
      ])
    }))

  it.effect("an output reading a step that does not exist is refused, naming the nearest step", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* checked(`  cmd "deploy" {\n    argv = ["true"]\n  }\n  output = task.deploi.stdout`), [
        "UnknownMember",
        "",
        `output refers to task.deploi, which is not a step of this workflow; did you mean "deploy"?`
      ])
    }))
})

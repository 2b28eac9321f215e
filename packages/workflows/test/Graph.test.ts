/** The dependency graph's refusals: an unknown dependency with the nearest step named, a cycle with its members only. */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import type { Document } from "../src/index.ts"
import { Graph } from "../src/index.ts"

const cmd = (...needs: ReadonlyArray<string>): Document.Step => ({ kind: "cmd", argv: ["true"], ...(needs.length > 0 ? { needs } : {}) })

const refusal = (steps: Readonly<Record<string, Document.Step>>) =>
  Result.match(Graph.make(steps), { onSuccess: () => "ok", onFailure: (error) => `${error.reason}: ${error.message}` })

describe("Graph", () => {
  it("an unknown dependency names the nearest step when one is near, else asks for a fix", () => {
    assert.strictEqual(
      refusal({ deploy: cmd(), b: cmd("deploi") }),
      `UnknownDependency: step b: depends on deploi, which is not a step of this workflow; did you mean "deploy"?`
    )
    assert.strictEqual(
      refusal({ deploy: cmd(), b: cmd("zzz") }),
      "UnknownDependency: step b: depends on zzz, which is not a step of this workflow; fix the name or add the step"
    )
  })

  it("a cycle names the steps on it only: not a step between two cycles, nor one waiting behind them", () => {
    // a ⇄ b, then x (needing a), then c ⇄ d needing x, and w needing d.
    const steps = { a: cmd("b"), b: cmd("a"), x: cmd("a"), c: cmd("d", "x"), d: cmd("c"), w: cmd("d") }
    assert.strictEqual(refusal(steps), "Cycle: steps a, b, c, d depend on each other in a cycle; remove one of the dependencies")
    assert.strictEqual(refusal({ a: cmd("a"), b: cmd("a") }), "Cycle: step a depends on itself; remove it from its needs")
  })

  it("a cycle closing a chain of 20,000 steps is found without overflowing the stack, its first 20 steps named and the others counted", () => {
    const steps: Record<string, Document.Step> = { s0: cmd("s19999") }
    for (let i = 1; i < 20_000; i++) steps[`s${i}`] = cmd(`s${i - 1}`)
    const result = Graph.make(steps)
    const first = ["s0", "s1", "s10", "s100", "s1000", "s10000", "s10001", "s10002", "s10003", "s10004", "s10005", "s10006", "s10007", "s10008", "s10009", "s1001", "s10010", "s10011", "s10012", "s10013"]
    assert.deepStrictEqual(Result.isFailure(result) && [result.failure.reason, result.failure.description], [
      "Cycle",
      `steps ${first.join(", ")} and 19980 more depend on each other in a cycle; remove one of the dependencies`
    ])
  })
})

/**
 * bench/workflows — what the workflow run engine costs per step.
 *
 * A workflow of 1,000 trivial `tool` steps in a 10-wide dependency lattice (100 layers of 10;
 * each step needs every step of the layer before it and passes on its neighbour's output) against calling
 * the same tool 1,000 times in a loop through core's tool Executor (the path a `tool` step takes),
 * in the same process. Overhead per step = (workflow run − loop) / 1,000: scheduling, slots,
 * interpolation, events, permits. Parsing the file is timed apart and not counted. Goal: ≤ 1 ms
 * per step.
 *
 * Run: node_modules/.bin/node bench/workflows.ts
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Exit, Layer, Result, Schema, Scope } from "effect"
import * as Condukt from "../packages/node/src/Condukt.ts"
import * as ToolExecutor from "../packages/core/src/Executor.ts"
import * as Sandbox from "../packages/core/src/Sandbox.ts"
import * as LocalSandbox from "../packages/node/src/sandbox/Local.ts"
import * as Tool from "../packages/core/src/Tool.ts"
import * as Workflow from "../packages/workflows/src/Workflow.ts"
import { report } from "./report.ts"

const WIDTH = 10
const DEPTH = 100
const STEPS = WIDTH * DEPTH
const ROUNDS = 5

const noop = Tool.make("noop", {
  description: "Returns its argument.",
  parameters: Schema.Struct({ n: Schema.Number, prev: Schema.optionalKey(Schema.String) }),
  call: ({ n }) => Effect.succeed(String(n))
})

const id = (layer: number, column: number) => `s${layer}_${column}`

const source = (): string => {
  const steps: Array<string> = []
  for (let layer = 0; layer < DEPTH; layer++) {
    for (let column = 0; column < WIDTH; column++) {
      const needs = layer === 0 ? [] : Array.from({ length: WIDTH }, (_, c) => `"${id(layer - 1, c)}"`)
      const prev = layer === 0 ? "" : `, prev = task.${id(layer - 1, column)}.output`
      steps.push(`  tool "${id(layer, column)}" {
    needs = [${needs.join(", ")}]
    id = "noop"
    args = { n = ${layer}${prev} }
  }`)
    }
  }
  return `workflow "lattice" {\n${steps.join("\n")}\n  output = task.${id(DEPTH - 1, WIDTH - 1)}.output\n}\n`
}

const main = async () => {
  const cwd = mkdtempSync(join(tmpdir(), "condukt-bench-workflows-"))
  const scope = Scope.makeUnsafe()
  const services = await Effect.runPromise(Layer.buildWithScope(LocalSandbox.layer({ cwd }).pipe(Layer.provideMerge(Condukt.layer)), scope))
  const sandbox = Context.get(services, Sandbox.Sandbox)
  const executor = Result.getOrThrow(ToolExecutor.make([noop]))
  const context = { sessionId: "bench", agent: "bench", sandbox, cwd, secrets: {} }
  const loop = Effect.gen(function*() {
    for (let i = 0; i < STEPS; i++) yield* executor.run([{ id: `c${i}`, name: "noop", input: { n: i } }], context, {})
  })

  const parseStart = performance.now()
  const document = await Effect.runPromise(Workflow.parse(source(), "lattice.hcl"))
  const parseMs = performance.now() - parseStart
  const runWorkflow = Workflow.run(document, { tools: [noop], cwd }).pipe(Effect.provide(Condukt.layer))

  const timed = async (effect: Effect.Effect<unknown, unknown>) => {
    const start = performance.now()
    await Effect.runPromise(effect)
    return performance.now() - start
  }
  await timed(loop)
  const output = await Effect.runPromise(runWorkflow)
  if (output.output !== `${DEPTH - 1}`) throw new Error(`unexpected output ${JSON.stringify(output.output)}`)
  const loopTimes: Array<number> = []
  const runTimes: Array<number> = []
  for (let round = 0; round < ROUNDS; round++) {
    loopTimes.push(await timed(loop))
    runTimes.push(await timed(runWorkflow))
  }
  await Effect.runPromise(Scope.close(scope, Exit.void))
  rmSync(cwd, { recursive: true, force: true })

  const median = (times: Array<number>) => [...times].sort((a, b) => a - b)[times.length >> 1]!
  const loopMs = median(loopTimes)
  const runMs = median(runTimes)
  const perStep = (runMs - loopMs) / STEPS
  console.log(`parse + validate ${STEPS} steps: ${parseMs.toFixed(0)} ms (not counted)`)
  console.log(`tool called ${STEPS}× in a loop:     median ${loopMs.toFixed(1)} ms (${(loopMs / STEPS).toFixed(3)} ms a call)`)
  console.log(`workflow of ${STEPS} tool steps:      median ${runMs.toFixed(1)} ms (${(runMs / STEPS).toFixed(3)} ms a step)`)
  console.log(`overhead per step: ${perStep.toFixed(3)} ms; ratio ${(runMs / loopMs).toFixed(2)}×`)
  report({
    benchmark: "workflows: overhead per tool step (1,000 steps, 10-wide lattice)",
    ours: `${(runMs / STEPS).toFixed(3)} ms/step`,
    baseline: `${(loopMs / STEPS).toFixed(3)} ms/call`,
    ratio: runMs / loopMs,
    goal: "≤ 1 ms overhead/step",
    met: perStep <= 1
  })
}

await main()

/**
 * The Studio's workflows in a real headless Chromium, against a real server on loopback serving an
 * HCL workflow as `condukt serve --workflows` does (the CLI's `ServedWorkflows`): the list of
 * workflows, a workflow's "Start run" form built from its inputs (a string, an integer, a boolean
 * and an enum) filled by keyboard alone, the run's two shell steps reaching finished with their
 * outputs, and the workflow's runs listing it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Page } from "playwright-core"
import * as ServedWorkflows from "../../cli/src/ServedWorkflows.ts"
import { Condukt } from "../../node/src/index.ts"
import { Workflow } from "../../workflows/src/index.ts"
import { WorkflowRuns } from "../src/index.ts"
import { axeViolations, screenshot, start, type StudioServer } from "./fixtures/studio.ts"

const ALICE = "tok-alice"
const tokens = { [ALICE]: "alice" }

const RELEASE = `workflow "release" {
  input "name" {
    type        = "string"
    description = "What is released"
  }
  input "copies" {
    type    = "integer"
    default = 2
  }
  input "dry_run" {
    type    = "boolean"
    default = false
  }
  input "channel" {
    type    = "string"
    enum    = ["beta", "stable"]
    default = "beta"
  }

  cmd "build" {
    argv = ["echo", "built \${input.name} x\${input.copies}"]
  }

  cmd "publish" {
    needs = ["build"]
    argv  = ["sh", "-c", "echo published to \${input.channel}, dry run: \${input.dry_run}"]
  }

  output = task.publish.stdout
}
`

/** A step that waits until the file its input names exists, then one whose output passes its bound (a failure). */
const GATE = `workflow "gate" {
  input "marker" {
    type = "string"
  }

  cmd "wait" {
    argv = ["sh", "-c", "while [ ! -f \\"$0\\" ]; do sleep 0.05; done; echo opened", "\${input.marker}"]
  }

  cmd "broken" {
    needs            = ["wait"]
    max_output_bytes = 16
    argv             = ["echo", "more than sixteen bytes of output"]
  }
}
`

/** The server's `WorkflowRuns` over the two workflows, as `condukt serve --workflows` makes it. */
const workflowRuns = Layer.effect(
  WorkflowRuns.WorkflowRuns,
  Effect.gen(function*() {
    const workflows = yield* Effect.forEach([["release.hcl", RELEASE], ["gate.hcl", GATE]] as const, ([file, source]) =>
      Effect.map(Effect.orDie(Workflow.parse(source, file)), (document) => ({ file, document, redact: (text: string) => text })))
    return yield* ServedWorkflows.make({ workflows })
  })
).pipe(Layer.orDie, Layer.provide(Condukt.layer))

/** A run as the API answers it, as far as the test reads it. */
const Run = Schema.Struct({
  runId: Schema.String,
  inputs: Schema.Record(Schema.String, Schema.Unknown),
  startedAt: Schema.optional(Schema.Number),
  outcome: Schema.String,
  steps: Schema.Record(Schema.String, Schema.Struct({ state: Schema.String, output: Schema.optional(Schema.Unknown), error: Schema.optional(Schema.String) })),
  output: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.String)
})

/** The run `runId` of `workflow` as the API answers it. */
const runOf = (studio: StudioServer, workflow: string, runId: string | null) =>
  studio.request(ALICE, "GET", `/workflows/${workflow}/runs/${runId}`).pipe(
    Effect.flatMap(({ body }) => Schema.decodeUnknownEffect(Run)(body)),
    Effect.orDie
  )

/** A step as the run's page shows it. */
const StepRow = Schema.Struct({ name: Schema.String, state: Schema.String, output: Schema.NullOr(Schema.String), error: Schema.NullOr(Schema.String) })

/** The run page's steps, read from the DOM by their `data-testid`s. */
const steps = (tab: Page) =>
  Effect.promise(() =>
    tab.evaluate(`[...document.querySelectorAll('[data-testid="wf-step"]')].map((step) => ({
      name: step.querySelector('[data-testid="wf-step-name"]').textContent,
      state: step.querySelector('[data-testid="wf-step-state"]').textContent,
      output: step.querySelector('[data-testid="wf-step-output"]')?.textContent ?? null,
      error: step.querySelector('[data-testid="wf-step-error"]')?.textContent ?? null
    }))`)
  ).pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(StepRow))), Effect.orDie)

const press = (tab: Page, ...keys: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    for (const key of keys) await tab.keyboard.press(key)
  })

const pretty = (value: unknown) => JSON.stringify(value, null, 2)

describe("the Studio's workflows", () => {
  it.live("a person opens a served workflow, fills its start form by keyboard, sees the run's steps finish with their outputs, and finds the run in its runs", () =>
    Effect.gen(function*() {
      const studio = yield* start<never>({ agents: {}, tokens })
      const tab = yield* studio.open({ token: ALICE, hash: "/workflows" })

      yield* Effect.promise(() => tab.getByTestId("wf-list").waitFor())
      assert.deepStrictEqual(
        yield* Effect.promise(() => tab.evaluate(`[...document.querySelectorAll('[data-testid="wf-row"] td')].map((cell) => cell.textContent)`)),
        ["release", "channel, copies, dry_run, name", "build, publish", "gate", "marker", "broken, wait"]
      )
      assert.deepStrictEqual(yield* axeViolations(tab), { light: [], dark: [] })

      // To the workflow by keyboard: its link focused, Enter.
      yield* Effect.promise(() => tab.getByRole("link", { name: "release", exact: true }).focus())
      yield* press(tab, "Enter")
      yield* Effect.promise(() => tab.getByTestId("wf-start-form").waitFor())
      const defaults = yield* Effect.promise(() =>
        tab.evaluate(`[...document.querySelectorAll('[data-testid^="wf-input-"]')].map((field) => {
          return [field.dataset.testid.slice("wf-input-".length), field.type === "checkbox" ? field.checked : field.type === "select-one" ? field.selectedOptions[0].textContent : field.value, field.required]
        })`)
      )
      assert.deepStrictEqual(defaults, [["channel", "beta", false], ["copies", "2", false], ["dry_run", false, false], ["name", "", true]])
      assert.deepStrictEqual(yield* axeViolations(tab), { light: [], dark: [] })
      yield* screenshot(tab, "workflows")

      // The inputs by keyboard, in the form's order: the next channel, the copies replaced, the box ticked, the name typed; Enter on Start run.
      yield* Effect.promise(() => tab.getByTestId("wf-input-channel").focus())
      yield* press(tab, "ArrowDown", "Tab", "Control+A", "3", "Tab", "Space", "Tab")
      yield* Effect.promise(() => tab.keyboard.type("condukt"))
      yield* press(tab, "Tab", "Enter")

      yield* Effect.promise(() => tab.getByTestId("wf-run-outcome").filter({ hasText: /^succeeded$/ }).waitFor())
      const runId = yield* Effect.promise(() => tab.getByTestId("wf-run").getAttribute("data-run-id"))
      const run = yield* runOf(studio, "release", runId)
      assert.deepStrictEqual([run.outcome, run.inputs], ["succeeded", { name: "condukt", copies: 3, dry_run: true, channel: "stable" }])
      assert.deepStrictEqual(yield* steps(tab), [
        { name: "build", state: "finished", output: pretty(run.steps.build!.output), error: null },
        { name: "publish", state: "finished", output: pretty(run.steps.publish!.output), error: null }
      ])
      assert.deepStrictEqual([run.steps.build!.state, run.steps.publish!.state], ["finished", "finished"])
      assert.deepStrictEqual(
        yield* Effect.promise(() => tab.getByTestId("wf-run-output").textContent()),
        "published to stable, dry run: true\n"
      )
      assert.deepStrictEqual(yield* axeViolations(tab), { light: [], dark: [] })
      yield* screenshot(tab, "workflow-run")

      yield* Effect.promise(() => tab.getByRole("link", { name: "← release" }).click())
      yield* Effect.promise(() => tab.getByTestId("wf-run-row").waitFor())
      assert.deepStrictEqual(
        yield* Effect.promise(() => tab.evaluate(`[...document.querySelectorAll('[data-testid="wf-run-row"]')].map((row) => [row.dataset.runId, row.querySelector('[data-testid="wf-run-row-outcome"]').textContent, row.querySelector('[data-testid="wf-run-started"]').textContent !== "—"])`)),
        [[runId, "succeeded", true]]
      )
      assert.strictEqual(typeof run.startedAt, "number")
    }).pipe(Effect.provide(workflowRuns)))

  it.live("a run's page follows it while it runs: a step waiting on its gate shows running, then finished once the gate opens, and the next step's failure with its error", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "studio-gate-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      const marker = path.join(dir, "open")
      const studio = yield* start<never>({ agents: {}, tokens })
      const tab = yield* studio.open({ token: ALICE, hash: "/workflows/gate" })
      yield* Effect.promise(() => tab.getByTestId("wf-input-marker").focus())
      yield* Effect.promise(() => tab.keyboard.type(marker))
      yield* press(tab, "Enter")

      const stateOf = (step: string, state: string) =>
        Effect.promise(() => tab.getByTestId("wf-step").filter({ has: tab.getByTestId("wf-step-name").filter({ hasText: new RegExp(`^${step}$`) }) })
          .getByTestId("wf-step-state").filter({ hasText: new RegExp(`^${state}$`) }).waitFor())
      yield* stateOf("wait", "running")
      const runId = yield* Effect.promise(() => tab.getByTestId("wf-run").getAttribute("data-run-id"))
      const going = yield* runOf(studio, "gate", runId)
      assert.strictEqual(going.outcome, "running")
      assert.deepStrictEqual(yield* steps(tab), Object.entries(going.steps).map(([name, step]) => ({ name, state: step.state, output: null, error: null })))
      assert.strictEqual(yield* Effect.promise(() => tab.getByTestId("wf-run-outcome").textContent()), "running")

      fs.writeFileSync(marker, "")
      yield* Effect.promise(() => tab.getByTestId("wf-run-outcome").filter({ hasText: /^failed$/ }).waitFor())
      const failed = yield* runOf(studio, "gate", runId)
      assert.deepStrictEqual(
        { outcome: failed.outcome, wait: failed.steps.wait?.state, broken: failed.steps.broken?.state },
        { outcome: "failed", wait: "finished", broken: "failed" }
      )
      // A failed run has no outputs: the finished step shows none, the failed one its error.
      assert.deepStrictEqual(yield* steps(tab), Object.entries(failed.steps).map(([name, step]) => ({ name, state: step.state, output: null, error: step.error ?? null })))
      assert.isString(failed.steps.broken!.error)
      assert.strictEqual(yield* Effect.promise(() => tab.getByTestId("wf-run-failure").textContent()), failed.error)
      assert.deepStrictEqual(yield* axeViolations(tab), { light: [], dark: [] })
    }).pipe(Effect.provide(workflowRuns)))

  it.live("a server that serves no workflows says so", () =>
    Effect.gen(function*() {
      const studio = yield* start<never>({ agents: {}, tokens })
      const tab = yield* studio.open({ token: ALICE, hash: "/workflows" })
      assert.strictEqual(yield* Effect.promise(() => tab.getByTestId("wf-error").textContent()), "This server serves no workflows.")
    }))
})

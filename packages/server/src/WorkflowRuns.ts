/**
 * WorkflowRuns — the workflows a server runs as runs over HTTP (`POST /workflows/{name}/runs`),
 * as a service the program provides: the server knows their names, inputs and runs' states, never
 * how a workflow runs, so `@condukt/server` does not depend on `@condukt/workflows` (`condukt serve
 * --workflows <dir>` provides one over HCL workflows, durable with `--durable <db>`).
 *
 * A run belongs to the principal that started it: `get` gives the principal with the run and the
 * handlers answer another principal as if no such run existed. A server given no `WorkflowRuns`
 * answers every `/workflows` route 404.
 */
import { Context, type Effect, Schema } from "effect"
import * as Limits from "./Limits.ts"

/** The most inputs one run is given (a workflow declares a handful). */
export const MAX_INPUTS = 64

/**
 * An input a workflow declares: its JSON type, and its default (absent: the input is required).
 *
 * @since 0.1.0
 * @category models
 */
export const InputView = Schema.Struct({
  type: Schema.String,
  description: Schema.optionalKey(Schema.String),
  default: Schema.optionalKey(Schema.Json),
  enum: Schema.optionalKey(Schema.Array(Schema.Json))
})
export type InputView = typeof InputView.Type

/**
 * A workflow served: its name (what `/workflows/{name}/runs` names), its inputs and its steps.
 *
 * @since 0.1.0
 * @category models
 */
export const WorkflowView = Schema.Struct({
  name: Schema.String,
  inputs: Schema.Record(Schema.String, InputView),
  steps: Schema.Array(Schema.String)
})
export type WorkflowView = typeof WorkflowView.Type

/**
 * Where a step stands: not started, running, finished (`resumed` when a durable run's restart
 * took its recorded output instead of running it), skipped (`why`), failed (`error`). A finished
 * step's `output` is there once the run has finished.
 *
 * @since 0.1.0
 * @category models
 */
export const StepView = Schema.Struct({
  state: Schema.Literals(["pending", "running", "finished", "skipped", "failed"]),
  output: Schema.optionalKey(Schema.Json),
  resumed: Schema.optionalKey(Schema.Boolean),
  restarted: Schema.optionalKey(Schema.Boolean),
  why: Schema.optionalKey(Schema.String),
  error: Schema.optionalKey(Schema.String)
})
export type StepView = typeof StepView.Type

/**
 * A run: its workflow and inputs, each step's state, and once it ends its outcome, with the
 * workflow's output when it succeeded or the error when it failed.
 *
 * @since 0.1.0
 * @category models
 */
export const RunView = Schema.Struct({
  runId: Schema.String,
  workflow: Schema.String,
  inputs: Schema.Record(Schema.String, Schema.Json),
  /** Epoch ms the run was started, when the service knows it. */
  startedAt: Schema.optionalKey(Schema.Number),
  outcome: Schema.Literals(["running", "succeeded", "failed"]),
  steps: Schema.Record(Schema.String, StepView),
  output: Schema.optionalKey(Schema.Json),
  error: Schema.optionalKey(Schema.String),
  durable: Schema.Boolean
})
export type RunView = typeof RunView.Type

/**
 * What `POST /workflows/{name}/runs` takes: the run's inputs, by name (defaults fill the others).
 *
 * @since 0.1.0
 * @category models
 */
export const StartRun = Schema.Struct({
  inputs: Schema.optionalKey(
    Schema.Record(Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH)), Schema.Json).check(Schema.isMaxProperties(MAX_INPUTS))
  )
})
export type StartRun = typeof StartRun.Type

/**
 * Why a run was not started or cannot be read: no such workflow, inputs that do not fit its
 * declarations, no such run, too many runs at once, or the runs' store failed.
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkflowRunsError extends Schema.TaggedError<WorkflowRunsError>()("WorkflowRunsError", {
  reason: Schema.Literals(["UnknownWorkflow", "InvalidInputs", "UnknownRun", "Busy", "Unavailable"]),
  message: Schema.String
}) {}

/** @since 0.1.0 @category models */
export interface Owned {
  /** The principal that started the run. */
  readonly principal: string
  readonly run: RunView
}

/** @since 0.1.0 @category models */
export interface Service {
  /** The workflows served, by name. */
  readonly list: Effect.Effect<ReadonlyArray<WorkflowView>>
  /** Starts a run of `name` with `inputs` for `principal`: its id, once its inputs are checked and it is recorded. */
  readonly start: (name: string, inputs: Readonly<Record<string, Schema.Json>>, principal: string) => Effect.Effect<string, WorkflowRunsError>
  /** A run and its principal (`UnknownRun` when there is none). */
  readonly get: (runId: string) => Effect.Effect<Owned, WorkflowRunsError>
  /** `principal`'s runs of workflow `name`, newest first, at most `limit` (`UnknownWorkflow` when none is served by that name). */
  readonly runs: (name: string, principal: string, limit: number) => Effect.Effect<ReadonlyArray<RunView>, WorkflowRunsError>
}

/**
 * @since 0.1.0
 * @category services
 */
export class WorkflowRuns extends Context.Service<WorkflowRuns, Service>()("@condukt/server/WorkflowRuns") {}

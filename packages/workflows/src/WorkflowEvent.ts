/**
 * WorkflowEvent — what a run reports as it goes: a step started, finished, was skipped or
 * failed (in a durable run, whether it was done before a restart), each with the time (epoch milliseconds, from the Clock) and durations; inside an agent
 * step, each model turn as it starts and ends (with the tokens so far) and each tool call as it
 * starts and ends (and each call that waits for approval), named by the step. Map items report as `<map>[<i>]`. The CLI draws progress
 * from these, or prints them one JSON object per line.
 */
import { Schema } from "effect"

/** @since 0.1.0 @category models */
export class RunStarted extends Schema.TaggedClass<RunStarted>()("RunStarted", {
  workflow: Schema.String,
  steps: Schema.Array(Schema.String),
  at: Schema.Number
}) {}

/**
 * A step started; in a durable run, `restarted` when an earlier process of the run had started it
 * and died before it finished (it runs again from the start).
 *
 * @since 0.1.0
 * @category models
 */
export class StepStarted extends Schema.TaggedClass<StepStarted>()("StepStarted", {
  step: Schema.String,
  at: Schema.Number,
  restarted: Schema.optionalKey(Schema.Boolean)
}) {}

/**
 * A step finished. In a durable run `resumed` says whether its output is the one an earlier
 * process of the run recorded (the step did not run now, `durationMs` is 0); other runs omit it.
 *
 * @since 0.1.0
 * @category models
 */
export class StepFinished extends Schema.TaggedClass<StepFinished>()("StepFinished", {
  step: Schema.String,
  at: Schema.Number,
  durationMs: Schema.Number,
  resumed: Schema.optionalKey(Schema.Boolean)
}) {}

/** @since 0.1.0 @category models */
export class StepSkipped extends Schema.TaggedClass<StepSkipped>()("StepSkipped", {
  step: Schema.String,
  at: Schema.Number,
  /** `when` was false, or a dependency was skipped (named). */
  why: Schema.String
}) {}

/** @since 0.1.0 @category models */
export class StepFailed extends Schema.TaggedClass<StepFailed>()("StepFailed", {
  step: Schema.String,
  at: Schema.Number,
  durationMs: Schema.Number,
  error: Schema.String
}) {}

/**
 * An agent step sent its `turn`th model request (from 1).
 *
 * @since 0.1.0
 * @category models
 */
export class TurnStarted extends Schema.TaggedClass<TurnStarted>()("TurnStarted", {
  step: Schema.String,
  at: Schema.Number,
  turn: Schema.Int
}) {}

/**
 * An agent step's model answered its `turn`th request: that turn's tokens (input without the
 * prompt cache's, output) and the step's tokens so far (every turn's input, cached input and output).
 *
 * @since 0.1.0
 * @category models
 */
export class TurnFinished extends Schema.TaggedClass<TurnFinished>()("TurnFinished", {
  step: Schema.String,
  at: Schema.Number,
  turn: Schema.Int,
  inputTokens: Schema.Int,
  outputTokens: Schema.Int,
  tokensSoFar: Schema.Int
}) {}

/**
 * An agent step's model called `tool`; `callId` pairs it with its `ToolFinished`.
 *
 * @since 0.1.0
 * @category models
 */
export class ToolStarted extends Schema.TaggedClass<ToolStarted>()("ToolStarted", {
  step: Schema.String,
  at: Schema.Number,
  callId: Schema.String,
  tool: Schema.String
}) {}

/**
 * A tool call of an agent step has its result: `ok` is false when the result is an error the
 * model reads (the step goes on either way). `durationMs` runs from the call's `ToolStarted` to its
 * result; the session hands over one reply's results together, in call order, once the last has
 * finished, so calls that ran side by side all end with the slowest.
 *
 * @since 0.1.0
 * @category models
 */
export class ToolFinished extends Schema.TaggedClass<ToolFinished>()("ToolFinished", {
  step: Schema.String,
  at: Schema.Number,
  callId: Schema.String,
  tool: Schema.String,
  durationMs: Schema.Number,
  ok: Schema.Boolean
}) {}

/**
 * A tool call of an agent step waits for a person's answer (its rules or the tool ask for one):
 * the run's answerer is asked next; its `ToolFinished` follows the answer.
 *
 * @since 0.1.0
 * @category models
 */
export class ApprovalRequested extends Schema.TaggedClass<ApprovalRequested>()("ApprovalRequested", {
  step: Schema.String,
  at: Schema.Number,
  callId: Schema.String,
  tool: Schema.String,
  input: Schema.Unknown
}) {}

/** @since 0.1.0 @category models */
export class RunFinished extends Schema.TaggedClass<RunFinished>()("RunFinished", {
  at: Schema.Number,
  durationMs: Schema.Number,
  ok: Schema.Boolean
}) {}

/** @since 0.1.0 @category models */
export const WorkflowEvent = Schema.Union([
  RunStarted,
  StepStarted,
  TurnStarted,
  TurnFinished,
  ToolStarted,
  ToolFinished,
  ApprovalRequested,
  StepFinished,
  StepSkipped,
  StepFailed,
  RunFinished
])
export type WorkflowEvent = typeof WorkflowEvent.Type

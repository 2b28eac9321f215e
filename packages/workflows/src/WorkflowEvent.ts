/**
 * WorkflowEvent — what a run reports as it goes: a step started, finished, was skipped or
 * failed, each with the time (epoch milliseconds, from the Clock) and durations. Map items report
 * as `<map>[<i>]`. The CLI draws progress from these, or prints them one JSON object per line.
 */
import { Schema } from "effect"

/** @since 0.1.0 @category models */
export class RunStarted extends Schema.TaggedClass<RunStarted>()("RunStarted", {
  workflow: Schema.String,
  steps: Schema.Array(Schema.String),
  at: Schema.Number
}) {}

/** @since 0.1.0 @category models */
export class StepStarted extends Schema.TaggedClass<StepStarted>()("StepStarted", {
  step: Schema.String,
  at: Schema.Number
}) {}

/** @since 0.1.0 @category models */
export class StepFinished extends Schema.TaggedClass<StepFinished>()("StepFinished", {
  step: Schema.String,
  at: Schema.Number,
  durationMs: Schema.Number
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

/** @since 0.1.0 @category models */
export class RunFinished extends Schema.TaggedClass<RunFinished>()("RunFinished", {
  at: Schema.Number,
  durationMs: Schema.Number,
  ok: Schema.Boolean
}) {}

/** @since 0.1.0 @category models */
export const WorkflowEvent = Schema.Union([RunStarted, StepStarted, StepFinished, StepSkipped, StepFailed, RunFinished])
export type WorkflowEvent = typeof WorkflowEvent.Type

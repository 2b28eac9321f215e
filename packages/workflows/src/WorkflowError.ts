/**
 * WorkflowError — the two ways a workflow fails: it is not a valid workflow (`WorkflowInvalid`,
 * found before anything runs: parse, compile and validation), or its run failed (`WorkflowFailed`,
 * with the step at fault). Both carry a `reason` named as a fact, where it happened (`file:line:col`
 * for a parse error, the block path `workflow.steps.deploy.argv` for the rest) and a sentence that
 * says what would be right. The CLI prints `message` and exits 2 or 1 accordingly.
 */
import { Schema } from "effect"

/**
 * Why a workflow is not valid.
 *
 * @since 0.1.0
 * @category errors
 */
export const InvalidReasons = [
  // Reading and parsing
  "ReadFailed",
  "NotRegularFile",
  "FileTooLarge",
  "UnsupportedExtension",
  "NestingTooDeep",
  "ParseFailed",
  // HCL structure
  "MissingWorkflow",
  "MultipleWorkflows",
  "UnsupportedTopLevelStatement",
  "InvalidWorkflowLabels",
  "InvalidStepLabels",
  "UnknownAttributes",
  "BlocksNotAllowed",
  "MissingAttribute",
  "MissingMapStep",
  "MultipleMapSteps",
  "InvalidMapStep",
  "AnonymousStepHasLabels",
  "DuplicateStep",
  "DuplicateInput",
  "DuplicateMcpServer",
  "DuplicateRuntime",
  "DuplicateApproval",
  "DuplicateAttribute",
  "UnsupportedExpression",
  "MissingNeeds",
  // Document rules
  "UnknownKeys",
  "MissingKey",
  "EmptySteps",
  "UnknownStepKind",
  "EmptyList",
  "ExpectedString",
  "ExpectedType",
  "DuplicateValues",
  "InvalidName",
  "InvalidStepId",
  "InvalidMcpServerId",
  "InvalidValue",
  "ExpectedModel",
  "InvalidExpression",
  // What a run checks before its first step (`RunEngine.plan`)
  "UnknownDependency",
  "Cycle",
  "InvalidDefault",
  "InvalidMcpServer",
  "UnknownMember",
  "ModelUnavailable"
] as const

/** @since 0.1.0 @category errors */
export type InvalidReason = typeof InvalidReasons[number]

/**
 * The workflow cannot run as written.
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkflowInvalid extends Schema.TaggedError<WorkflowInvalid>()("WorkflowInvalid", {
  reason: Schema.Literals(InvalidReasons),
  /** `file:line:col` for parse errors; otherwise the file, when known, and the block path. */
  location: Schema.String,
  /** What is wrong and what would be right, one sentence. */
  description: Schema.String
}) {
  override get message() {
    return this.reason === "ReadFailed" ? `cannot read ${this.location}: ${this.description}` : `${this.location}: ${this.description}`
  }
}

/**
 * Why a run failed.
 *
 * @since 0.1.0
 * @category errors
 */
export const FailedReasons = [
  "InvalidInputs",
  "UnknownDependency",
  "Cycle",
  "UnknownMember",
  "WhenFailed",
  "InterpolateFailed",
  "OverMustBeList",
  "CmdFailed",
  "HttpFailed",
  "HttpUnexpectedStatus",
  "TimedOut",
  "OutputTooLarge",
  "UnknownTool",
  "AgentFailed",
  "McpFailed",
  "OutputFailed"
] as const

/** @since 0.1.0 @category errors */
export type FailedReason = typeof FailedReasons[number]

/**
 * The run stopped: the first step error, or a graph or input error before the first step.
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkflowFailed extends Schema.TaggedError<WorkflowFailed>()("WorkflowFailed", {
  reason: Schema.Literals(FailedReasons),
  /** The step at fault (`summaries[0]` inside a map), or "" for the run as a whole. */
  step: Schema.String,
  description: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return this.step === "" ? this.description : `step ${this.step}: ${this.description}`
  }
}

/**
 * Why a durable run could not start or resume: its database (`location`) holds no run `runId`
 * (`UnknownRun`), holds it for another version of the workflow (`WorkflowChanged`) or other inputs
 * (`InputsChanged`), holds it already when it was to start (`RunExists`), holds what it recorded
 * in a form it cannot read (`JournalCorrupted`), or cannot be used (`StoreUnavailable`); or
 * another live process runs it (`RunBusy`, with the `holder`), or took it over from this one
 * after this one's lease lapsed (`LeaseLost`: the run stopped mid-way).
 *
 * @since 0.1.0
 * @category errors
 */
export const DurableReasons = [
  "UnknownRun",
  "WorkflowChanged",
  "InputsChanged",
  "RunExists",
  "RunBusy",
  "LeaseLost",
  "JournalCorrupted",
  "StoreUnavailable"
] as const

/** @since 0.1.0 @category errors */
export type DurableReason = typeof DurableReasons[number]

/**
 * The process holding a durable run's lease, as the journal records it: its pid and host, when
 * it took the run (milliseconds since the epoch, the database's clock), and how long its lease
 * lasts unless renewed (what a process that died without a word keeps the run refused for).
 *
 * @since 0.1.0
 * @category models
 */
export class LeaseHolder extends Schema.Class<LeaseHolder>("LeaseHolder")({
  pid: Schema.Number,
  host: Schema.String,
  startedAt: Schema.Number,
  expiresInMillis: Schema.Number
}) {}

/**
 * A durable run refused before its first step (nothing ran, nothing was recorded), or stopped
 * because another process took it over (`LeaseLost`).
 *
 * @since 0.1.0
 * @category errors
 */
export class DurableFailed extends Schema.TaggedError<DurableFailed>()("DurableFailed", {
  reason: Schema.Literals(DurableReasons),
  runId: Schema.String,
  /** The database, as the user named it (a URL without its password). */
  location: Schema.String,
  /** `RunBusy` and `LeaseLost`: the process that runs the run. */
  holder: Schema.optional(LeaseHolder),
  /** What is wrong and what would be right, one sentence. */
  description: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return this.description
  }
}

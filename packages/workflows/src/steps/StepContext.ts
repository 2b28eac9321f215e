/**
 * StepContext — what a running step may use: the run's sandbox, its tool registry (built-ins, MCP
 * tools, the caller's) and the executor core runs them with, the default model, the workflow's
 * name for traces, and the run's event listener (an agent step reports its turns and tool calls). Built once per run by the run engine; steps only read it.
 */
import type { Approval, Executor, Sandbox, Tool } from "@condukt/core"
import type { Effect } from "effect"
import type * as Document from "../Document.ts"
import type * as Expression from "../Expression.ts"
import type * as WorkflowEvent from "../WorkflowEvent.ts"
import { WorkflowFailed, type FailedReason } from "../WorkflowError.ts"

/** @since 0.1.0 @category models */
export interface StepContext {
  readonly workflow: string
  readonly sandbox: Sandbox.Service
  readonly tools: ReadonlyMap<string, Tool.Tool>
  readonly toolExecutor: Executor.Executor<never>
  /** The model for agent steps that name none: the caller's option, else the runtime block's. */
  readonly model: string | undefined
  /** The output the run's sandbox collects per command; undefined for a caller's sandbox (its own cap). */
  readonly maxOutputBytes: number | undefined
  /** The caller's listener; undefined when nobody listens (an agent step then observes nothing). */
  readonly onEvent: ((event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) | undefined
  /** The workflow's `approval` block: rules for every agent step, joined with the step's own. */
  readonly approval: Document.ApprovalRules | undefined
  /** Answers an agent step's tool calls that wait for approval (`Approval.nobody` when the caller gave none). */
  readonly approve: Approval.Answerer
}

/** A step's fields after interpolation. */
export type Fields = Readonly<Record<string, Expression.Value>>

/** The step's failure with the step's id. */
export const failed = (reason: FailedReason, step: string, description: string, cause?: unknown) =>
  new WorkflowFailed({ reason, step, description, cause })

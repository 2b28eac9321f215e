/**
 * SessionError — the one error of the Session seam: which session, and why (`reason`) it did not
 * start or a run did not complete. Each reason is a fact with the fields a caller acts on
 * (`Effect.catchReason("SessionError", "MaxTurnsExceeded", …)`); `Session` re-exports them all,
 * except `ApprovalUnanswered`, which is `Approval.Unanswered` (the session's answerer could not answer).
 */
import { Schema } from "effect"
import * as Approval from "./Approval.ts"
import type * as Executor from "./Executor.ts"
import type * as ModelError from "./ModelError.ts"
import type * as Secret from "./Secret.ts"
import { InvalidSessionId, show } from "./SessionId.ts"
import type { SessionStoreError } from "./SessionStoreError.ts"

/** @since 0.1.0 @category errors */
export class MaxTurnsExceeded extends Schema.TaggedError<MaxTurnsExceeded>()("MaxTurnsExceeded", {
  maxTurns: Schema.Int
}) {
  override get message() {
    return `the run needed more than ${this.maxTurns} model requests (raise maxTurns or simplify the task)`
  }
}

/** @since 0.1.0 @category errors */
export class RunAborted extends Schema.TaggedError<RunAborted>()("RunAborted", {}) {
  override get message() {
    return "the run was aborted"
  }
}

/** @since 0.1.0 @category errors */
export class SessionStopped extends Schema.TaggedError<SessionStopped>()("SessionStopped", {}) {
  override get message() {
    return "the session is stopped"
  }
}

/** @since 0.1.0 @category errors */
export class SandboxInitFailed extends Schema.TaggedError<SandboxInitFailed>()("SandboxInitFailed", {
  agent: Schema.String,
  description: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `Agent ${this.agent}: the sandbox could not be built: ${this.description}`
  }
}

/**
 * One of the session's MCP servers could not be started (or its declaration is invalid); the
 * others were closed and nothing is left running. A `ToolSource` fails its `start` with it.
 *
 * @since 0.1.0
 * @category errors
 */
export class McpStartFailed extends Schema.TaggedError<McpStartFailed>()("McpStartFailed", {
  server: Schema.String,
  description: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `MCP server ${this.server} could not be started: ${this.description}`
  }
}

/**
 * The model's answer did not decode with the run's `output` Schema, even after being sent back
 * `retries` times with the Schema's error; `reply` is its last answer (JSON text).
 *
 * @since 0.1.0
 * @category errors
 */
export class OutputInvalid extends Schema.TaggedError<OutputInvalid>()("OutputInvalid", {
  reply: Schema.String,
  error: Schema.String,
  retries: Schema.Int
}) {
  override get message() {
    return `the model's answer did not match the output schema after ${this.retries} ${this.retries === 1 ? "retry" : "retries"}: ${this.error}`
  }
}

/** A defect escaped a run (a bug, not a tool failure): the session is dead, as an OTP process would be. */
export class SessionCrashed extends Schema.TaggedError<SessionCrashed>()("SessionCrashed", {
  cause: Schema.Defect()
}) {
  override get message() {
    const cause = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `the session crashed: ${cause}`
  }
}

/** @since 0.1.0 @category errors */
export const Reason = Schema.Union([
  MaxTurnsExceeded,
  Approval.Unanswered,
  OutputInvalid,
  RunAborted,
  SessionStopped,
  SandboxInitFailed,
  McpStartFailed,
  SessionCrashed,
  InvalidSessionId
])
export type Reason = typeof Reason.Type

/**
 * The one error of the seam: which session failed, and why (`reason`). Its `message` names the
 * session and says what happened, as a person (or a model) reads it.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionError extends Schema.TaggedError<SessionError>()("SessionError", {
  sessionId: Schema.String,
  reason: Reason
}) {
  override get message() {
    const reason = this.reason
    switch (reason._tag) {
      case "MaxTurnsExceeded":
      case "ApprovalUnanswered":
      case "OutputInvalid":
      case "RunAborted":
        return `Session ${this.sessionId}: ${reason.message}`
      case "InvalidSessionId":
        return `Session ${show(this.sessionId)} cannot start: ${reason.message}`
      case "SessionStopped":
        return `Session ${this.sessionId} is stopped`
      case "SessionCrashed":
        return `Session ${this.sessionId} crashed: ${reason.cause instanceof Error ? reason.cause.message : String(reason.cause)}`
      case "SandboxInitFailed":
      case "McpStartFailed":
        return reason.message
    }
  }

  /** What happened, without the session's id: for a caller that names the session itself (`Sessions.ById`). */
  get description(): string {
    return this.reason.message
  }
}

/** Why a run did not produce a final text. */
export type RunError = SessionError | ModelError.ModelError

/** Why a session did not start. */
export type StartError =
  | SessionError
  | ModelError.ModelError
  | Executor.DuplicateToolName
  | Approval.InvalidRule
  | Secret.SecretError
  | SessionStoreError

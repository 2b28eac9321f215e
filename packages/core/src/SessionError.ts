/**
 * SessionError — the ways a session fails to start or a run fails to complete.
 *
 * Each is a fact with the fields a caller acts on; `Session` re-exports them all.
 */
import { Schema } from "effect"
import type * as Executor from "./Executor.ts"
import type * as Model from "./Model.ts"
import type * as Secret from "./Secret.ts"
import type { SessionStoreError } from "./SessionStoreError.ts"

/** @since 0.1.0 @category errors */
export class MaxTurnsExceeded extends Schema.TaggedError<MaxTurnsExceeded>()("MaxTurnsExceeded", {
  sessionId: Schema.String,
  maxTurns: Schema.Int
}) {
  override get message() {
    return `Session ${this.sessionId}: the run needed more than ${this.maxTurns} model requests (raise maxTurns or simplify the task)`
  }
}

/** @since 0.1.0 @category errors */
export class RunAborted extends Schema.TaggedError<RunAborted>()("RunAborted", { sessionId: Schema.String }) {
  override get message() {
    return `Session ${this.sessionId}: the run was aborted`
  }
}

/** @since 0.1.0 @category errors */
export class SessionStopped extends Schema.TaggedError<SessionStopped>()("SessionStopped", { sessionId: Schema.String }) {
  override get message() {
    return `Session ${this.sessionId} is stopped`
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
 * others were closed and nothing is left running.
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

/** A defect escaped a run (a bug, not a tool failure): the session is dead, as an OTP process would be. */
export class SessionCrashed extends Schema.TaggedError<SessionCrashed>()("SessionCrashed", {
  sessionId: Schema.String,
  cause: Schema.Defect()
}) {
  override get message() {
    const cause = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `Session ${this.sessionId} crashed: ${cause}`
  }
}

/** Why a run did not produce a final text. */
export type RunError = MaxTurnsExceeded | RunAborted | SessionStopped | SessionCrashed | SandboxInitFailed | Model.ModelError

/** Why a session did not start. */
export type StartError =
  | SandboxInitFailed
  | Model.ModelError
  | Executor.DuplicateToolName
  | Secret.SecretError
  | McpStartFailed
  | SessionStoreError

/**
 * SessionsError — the one error of `Sessions.ById`: which session, and why (`reason`) a call by id
 * failed. Every reason is a Schema class, so the error crosses processes (a cluster's runners)
 * as data; `Sessions` re-exports them all (but `InvalidSessionId`, the one rule's error, which is `SessionId`'s).
 */
import * as ApprovalRecord from "./ApprovalRecord.ts"
import { Schema } from "effect"
import { InvalidSessionId, show } from "./SessionId.ts"

/**
 * No session of that id is running (never started, or stopped).
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {}) {
  override get message() {
    return "no such session is running (start it first)"
  }
}

/**
 * A start named an agent the process serving the session does not know.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownAgent extends Schema.TaggedError<UnknownAgent>()("UnknownAgent", { agent: Schema.String }) {
  override get message() {
    return `no agent is named ${this.agent} here`
  }
}

/**
 * A start named a session that is already running.
 *
 * @since 0.1.0
 * @category errors
 */
export class AlreadyStarted extends Schema.TaggedError<AlreadyStarted>()("AlreadyStarted", {}) {
  override get message() {
    return "the session is already running"
  }
}

/**
 * The session could not be started, or a run did not complete: `description` is the session's own
 * error message (`SessionError`, a store's error).
 *
 * @since 0.1.0
 * @category errors
 */
export class Failed extends Schema.TaggedError<Failed>()("Failed", { description: Schema.String }) {
  override get message() {
    return this.description
  }
}

/**
 * The process serving the run stopped (a crash, a killed machine) after part of the run was saved:
 * the session holds what was saved, and the run is not started again from its prompt.
 *
 * @since 0.1.0
 * @category errors
 */
export class Interrupted extends Schema.TaggedError<Interrupted>()("Interrupted", { description: Schema.String }) {
  override get message() {
    return `the run was interrupted: ${this.description}`
  }
}

/**
 * The call could not reach the process serving the session (a cluster's storage or transport
 * failed); `description` says what failed.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unavailable extends Schema.TaggedError<Unavailable>()("Unavailable", { description: Schema.String }) {
  override get message() {
    return `the session could not be reached: ${this.description}`
  }
}

/**
 * `approve` or `deny` named a call that is not waiting for a person's answer: no such call, or one
 * already answered (or ended by its timeout or an abort), or the session was stopping (`stopped`:
 * started again, it lists the calls its store kept waiting; docs/decisions/0080). `pending` lists
 * those waiting.
 *
 * @since 0.1.0
 * @category errors
 */
export class ApprovalNotPending extends Schema.TaggedError<ApprovalNotPending>()("ApprovalNotPending", {
  callId: Schema.String,
  stopped: Schema.optional(Schema.Boolean),
  /** The answer given first elsewhere (another process, the CLI), which the call took. */
  answered: Schema.optional(ApprovalRecord.ApprovalRecord)
}) {
  override get message() {
    if (this.stopped === true) {
      return `the session is stopped: call ${this.callId} waits for no answer in it; start it again: pending lists the calls its store kept waiting, answered there`
    }
    const first = this.answered
    return first === undefined
      ? `no call ${this.callId} is waiting for approval (unknown, or already answered): pending lists the calls that are`
      : `call ${this.callId} was answered already: ${first.outcome ?? "answered"}${first.by === undefined ? "" : ` by ${JSON.stringify(first.by)}`}`
  }
}

/**
 * `respond` named a question of an MCP server that is not waiting: no such id, or one already
 * answered (or ended by its timeout, its run's end or its server), or the session was stopping
 * (`stopped`: its questions ended with it).
 *
 * @since 0.1.0
 * @category errors
 */
export class ElicitationNotPending extends Schema.TaggedError<ElicitationNotPending>()("ElicitationNotPending", {
  id: Schema.String,
  stopped: Schema.optional(Schema.Boolean)
}) {
  override get message() {
    return this.stopped === true
      ? `the session is stopped: question ${this.id} waits for no answer in it (it ended with the session)`
      : `no question ${this.id} is waiting for an answer (unknown, or already answered)`
  }
}

/**
 * `respond` accepted a question with values its form does not take: the question still waits, for
 * an answer that fits.
 *
 * @since 0.1.0
 * @category errors
 */
export class ElicitationInvalidAnswer extends Schema.TaggedError<ElicitationInvalidAnswer>()("ElicitationInvalidAnswer", {
  id: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `the answer to question ${this.id} does not fit its form (${this.description}); the question still waits for one that does`
  }
}

/**
 * Why a by-id call failed, and on which session. It is data end to end, so it crosses processes.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionsError extends Schema.TaggedError<SessionsError>()("SessionsError", {
  sessionId: Schema.String,
  reason: Schema.Union([
    NotFound,
    UnknownAgent,
    AlreadyStarted,
    Failed,
    Interrupted,
    Unavailable,
    ApprovalNotPending,
    ElicitationNotPending,
    ElicitationInvalidAnswer,
    InvalidSessionId
  ])
}) {
  override get message() {
    return `Sessions: session ${show(this.sessionId)}: ${this.reason.message}`
  }
}

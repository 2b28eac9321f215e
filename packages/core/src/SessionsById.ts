/**
 * SessionsById — the registry spoken to by session id and agent name only, so that its sessions can
 * live anywhere (docs/decisions/0064): the `ById` service, the data its calls take and give, and
 * what every implementation shares (a session's errors and refusals as by-id data, the session-id
 * check in front of every call).
 *
 * `Sessions.layerById` serves it from this process's registry; `@condukt/cluster` from runners that
 * may be other machines. Nothing it takes or gives is a closure. `Sessions` re-exports all of this.
 */
import { Context, Effect, Schema, type Scope, Stream } from "effect"
import type { Agent } from "./Agent.ts"
import type * as Approval from "./Approval.ts"
import type * as ApprovalRecord from "./ApprovalRecord.ts"
import type * as Elicitation from "./Elicitation.ts"
import * as Message from "./Message.ts"
import type * as SessionEvent from "./SessionEvent.ts"
import * as Session from "./Session.ts"
import * as SessionId from "./SessionId.ts"
import { ApprovalNotPending, ElicitationInvalidAnswer, ElicitationNotPending, Failed, SessionsError } from "./SessionsError.ts"

/**
 * What a completed run gives a by-id caller: `Session.RunResult`'s data.
 *
 * @since 0.1.0
 * @category models
 */
export const RunReply = Schema.Struct({
  /** The final reply's text. */
  text: Schema.String,
  /** Model requests the run made. */
  turns: Schema.Int,
  /** What the run added to the history after the prompt. */
  messages: Schema.Array(Message.Message)
})
/** @since 0.1.0 @category models */
export type RunReply = typeof RunReply.Type

/**
 * A call waiting for a person's answer, as by-id `pending` lists it (`Approval.Pending` as data).
 *
 * @since 0.1.0
 * @category models
 */
export const Pending = Schema.Struct({ callId: Schema.String, tool: Schema.String, input: Schema.Unknown })
/** @since 0.1.0 @category models */
export type Pending = typeof Pending.Type

/**
 * An answer to an MCP server's question, as by-id `respond` takes it (`Elicitation.Answer` as data).
 *
 * @since 0.1.0
 * @category models
 */
export const ElicitationAnswer = Schema.Union([
  Schema.Struct({
    action: Schema.Literal("accept"),
    content: Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Number, Schema.Boolean, Schema.Array(Schema.String)]))
  }),
  Schema.Struct({ action: Schema.Literal("decline") }),
  Schema.Struct({ action: Schema.Literal("cancel") })
])

/** @since 0.1.0 @category models */
export interface ByIdService {
  /** Starts a session of the agent named `agent` (resumed from the store when it holds the id); its id. */
  readonly start: (agent: string, options?: { readonly id?: string | undefined }) => Effect.Effect<string, SessionsError>
  /** Runs `prompt` in the session and waits for its reply. */
  readonly run: (id: string, prompt: string) => Effect.Effect<RunReply, SessionsError>
  /** Runs `prompt` in the session and streams its events, AgentStart to AgentEnd, in order. */
  readonly stream: (id: string, prompt: string) => Stream.Stream<SessionEvent.SessionEvent, SessionsError>
  /**
   * The session's events, observed from the moment the effect completes until its scope closes or
   * the session stops, as `session.subscribe` gives them (a reader more than 1,024 events behind
   * loses the oldest): what a run continued by an answer publishes reaches a caller that did not
   * start it.
   */
  readonly events: (id: string) => Effect.Effect<Stream.Stream<SessionEvent.SessionEvent>, SessionsError, Scope.Scope>
  /** The session's history. */
  readonly history: (id: string) => Effect.Effect<ReadonlyArray<Message.Message>, SessionsError>
  /** Interrupts the session's running turn; queued runs still run. */
  readonly abort: (id: string) => Effect.Effect<void, SessionsError>
  /** Stops the session; what its store holds stays, and a new start resumes it. Unknown ids are ignored. */
  readonly stop: (id: string) => Effect.Effect<void, SessionsError>
  /** The session's calls waiting for a person's answer, in the order they asked (`ApprovalRequested`). */
  readonly pending: (id: string) => Effect.Effect<ReadonlyArray<Pending>, SessionsError>
  /** Lets a waiting call run; a call not waiting fails `ApprovalNotPending`. */
  readonly approve: (id: string, callId: string, by?: ApprovalRecord.By) => Effect.Effect<void, SessionsError>
  /** Refuses a waiting call: the model reads `Denied by the user: <reason>`; a call not waiting fails `ApprovalNotPending`. */
  readonly deny: (id: string, callId: string, reason?: string, by?: ApprovalRecord.By) => Effect.Effect<void, SessionsError>
  /**
   * Answers an MCP server's question (`ElicitationRequested`, its `id`): a question not waiting
   * fails `ElicitationNotPending`; accepted values its form does not take, `ElicitationInvalidAnswer`.
   */
  readonly respond: (id: string, requestId: string, answer: Elicitation.Answer) => Effect.Effect<void, SessionsError>
  /**
   * Where session `id` runs, as this process knows without asking the session (which would wake
   * it): a cluster's `runner <host:port>` when this runner holds its shard, `another runner`
   * otherwise. Absent where every session runs in this process.
   */
  readonly runner?: ((id: string) => Effect.Effect<string>) | undefined
}

/**
 * The registry by session id, wherever its sessions run.
 *
 * @since 0.1.0
 * @category services
 */
export class ById extends Context.Service<ById, ByIdService>()("@condukt/core/Sessions/ById") {}

/**
 * Agents by the name a start gives: what a process serving sessions by id can run.
 *
 * @since 0.1.0
 * @category models
 */
export type Agents<R = never> = Readonly<Record<string, Agent<R>>>

/**
 * A session's error as by-id data: `Failed` with what happened (a `SessionError` of that session
 * without its id, which the by-id error gives already).
 *
 * @since 0.1.0
 * @category constructors
 */
export const failed = (sessionId: string, error: { readonly message: string }): SessionsError =>
  new SessionsError({
    sessionId,
    reason: new Failed({ description: error instanceof Session.SessionError && error.sessionId === sessionId ? error.description : error.message })
  })

/**
 * A session's refusal of an answer (`approve`, `deny`, `respond`) as by-id data.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unanswered = (sessionId: string) => (error: Approval.NotPending | Elicitation.NotPending | Elicitation.InvalidAnswer): SessionsError =>
  new SessionsError({
    sessionId,
    reason: error._tag === "ApprovalNotPending"
      ? new ApprovalNotPending(
        error.stopped === true ? { callId: error.callId, stopped: true } : error.answered === undefined ? { callId: error.callId } : { callId: error.callId, answered: error.answered }
      )
      : error._tag === "ElicitationNotPending"
      ? new ElicitationNotPending(error.stopped === true ? { id: error.id, stopped: true } : { id: error.id })
      : new ElicitationInvalidAnswer({ id: error.id, description: error.description })
  })

/**
 * What a completed run gives a by-id caller.
 *
 * @since 0.1.0
 * @category constructors
 */
export const replyOf = (result: Session.RunResult): RunReply => ({ text: result.text, turns: result.turns, messages: result.messages })

/**
 * `service` with every call's session id held to the one rule first (`SessionId.check`): an id it
 * refuses fails `InvalidSessionId` and reaches nothing, not the registry, not a cluster's storage
 * (where a NUL ends SQL TEXT, and `alice\0x` would be alice). Every `ById` is made with it.
 *
 * @since 0.1.0
 * @category combinators
 */
export const checkingIds = (service: ByIdService): ByIdService => {
  const valid = <A, E, R>(id: string, use: () => Effect.Effect<A, E, R>): Effect.Effect<A, E | SessionsError, R> => {
    const invalid = SessionId.check(id)
    return invalid === undefined ? Effect.suspend(use) : Effect.fail(new SessionsError({ sessionId: id, reason: invalid }))
  }
  return ById.of({
    start: (agent, options = {}) => (options.id === undefined ? service.start(agent, options) : valid(options.id, () => service.start(agent, options))),
    run: (id, prompt) => valid(id, () => service.run(id, prompt)),
    stream: (id, prompt) => Stream.unwrap(valid(id, () => Effect.succeed(service.stream(id, prompt)))),
    events: (id) => valid(id, () => service.events(id)),
    history: (id) => valid(id, () => service.history(id)),
    abort: (id) => valid(id, () => service.abort(id)),
    stop: (id) => valid(id, () => service.stop(id)),
    pending: (id) => valid(id, () => service.pending(id)),
    approve: (id, callId, by) => valid(id, () => service.approve(id, callId, by)),
    deny: (id, callId, reason, by) => valid(id, () => service.deny(id, callId, reason, by)),
    respond: (id, requestId, answer) => valid(id, () => service.respond(id, requestId, answer)),
    ...(service.runner === undefined ? {} : { runner: service.runner })
  })
}

/**
 * Api — the server's HTTP API, schema first: every path, parameter, body, answer and error is a
 * Schema here, the handlers (`Server`) implement it, and `/openapi.json` is generated from it.
 *
 * Groups: `health` (no credentials), `account` (who is asking and what the server serves them;
 * their tokens by agent, day or session), `sessions` (start, list, get, stop; runs: run and wait, run
 * and stream, abort; the events stream that resumes; history; approvals and elicitations waiting;
 * usage and cost), `approvals` (the approval records across the principal's sessions, answered by
 * id) and `chat` (the AI SDK's UI message stream: `useChat`'s POST and its resume). Every group but
 * `health` needs credentials (`Auth`); a session another principal started answers 404.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import * as Message from "@condukt/core/Message"
import * as SessionsById from "@condukt/core/SessionsById"
import * as Usage from "@condukt/core/Usage"
import { Authentication } from "./Auth.ts"
import * as Limits from "./Limits.ts"
import { BadRequest, Conflict, Gone, NotFound, TooManyRequests, Unavailable } from "./ServerError.ts"
import { Owned } from "./ServerStore.ts"
import * as UiMessageStream from "./UiMessageStream.ts"
import { WorkflowsApi } from "./WorkflowsApi.ts"

const SessionIdParam = { id: Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH)) }

/** One event of a session's stream, as SSE sends it: `id` its number, `event` its tag, `data` its JSON. */
const EventsStream = HttpApiSchema.StreamSse({
  events: Schema.Struct({ id: Schema.optional(Schema.String), event: Schema.String, data: Schema.String })
})

/**
 * A session as the server shows it: its record, whether a run is running in it, and what its
 * tokens cost (absent when the server has no price for its agent).
 *
 * @since 0.1.0
 * @category models
 */
export const SessionRow = Schema.Struct({
  ...Owned.fields,
  running: Schema.Boolean,
  cost: Schema.optionalKey(Schema.Number),
  /** In front of a cluster: `runner <host:port>` when this server's runner holds the session, else `another runner`. */
  runner: Schema.optionalKey(Schema.String)
})
export type SessionRow = typeof SessionRow.Type

/** @since 0.1.0 @category models */
export const SessionView = SessionRow
export type SessionView = SessionRow

/** The characters of a search in the sessions' ids. */
export const MAX_QUERY_LENGTH = 256

/**
 * Who is asking, and what this server serves them: the agents a start may name (when the server
 * knows them; a cluster's are its runners'), and whether it serves workflows.
 *
 * @since 0.1.0
 * @category models
 */
export const Me = Schema.Struct({
  principal: Schema.String,
  agents: Schema.optionalKey(Schema.Array(Schema.String)),
  workflows: Schema.Boolean
})
export type Me = typeof Me.Type

/**
 * A principal's tokens added up: by agent, by UTC day (`YYYY-MM-DD`, the last `USAGE_DAYS` days,
 * oldest first) or by session (most tokens first), each sum with its cost when the server has a
 * price for every agent in it.
 *
 * @since 0.1.0
 * @category models
 */
export const UsageReport = Schema.Struct({
  by: Schema.Literals(["agent", "day", "session"]),
  rows: Schema.Array(Schema.Struct({ key: Schema.String, usage: Usage.Usage, cost: Schema.optionalKey(Schema.Number) }))
})
export type UsageReport = typeof UsageReport.Type

/** The days `GET /usage?by=day` goes back, today included. */
export const USAGE_DAYS = 90

/**
 * How a run ended, as `POST /sessions/{id}/runs` answers once it has: the final reply's text,
 * the model requests it made, the error's message when it failed, and the number of its last event.
 *
 * @since 0.1.0
 * @category models
 */
export const RunOutcome = Schema.Struct({
  runId: Schema.String,
  outcome: Schema.Literals(["completed", "failed", "aborted"]),
  text: Schema.String,
  turns: Schema.Int,
  error: Schema.optionalKey(Schema.String),
  lastEventId: Schema.Int
})
export type RunOutcome = typeof RunOutcome.Type

/** @since 0.1.0 @category models */
export const StartSession = Schema.Struct({
  /** The agent's name in the server's registry; the server's default agent when absent. */
  agent: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))),
  /** The session's id; a new UUIDv7 when absent. */
  id: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH)))
})

/** @since 0.1.0 @category models */
export const RunRequest = Schema.Struct({ prompt: Schema.String.check(Schema.isMaxLength(Limits.MAX_PROMPT_LENGTH)) })

/** An answer to a waiting call: run it, or refuse it (the model reads the reason). */
export const Answer = Schema.Struct({
  approved: Schema.Boolean,
  reason: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(ApprovalRecord.MAX_TEXT_CHARS)))
})

/** @since 0.1.0 @category models */
export const UsageView = Schema.Struct({ usage: Usage.Usage, cost: Schema.optionalKey(Schema.Number) })

/** What any call on a session may answer: not yours (or no such), malformed, not now, failed. */
const sessionErrors = [NotFound, BadRequest, Conflict, Unavailable]

/** @since 0.1.0 @category groups */
export class HealthApi extends HttpApiGroup.make("health")
  .add(HttpApiEndpoint.get("health", "/health", { success: Schema.Struct({ status: Schema.Literal("ok") }) }))
{}

/** @since 0.1.0 @category groups */
export class SessionsApi extends HttpApiGroup.make("sessions")
  .add(
    HttpApiEndpoint.post("start", "/", {
      payload: StartSession,
      success: Owned.pipe(HttpApiSchema.status(201)),
      error: sessionErrors
    }),
    HttpApiEndpoint.get("list", "/", {
      query: {
        limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Limits.MAX_PAGE }))),
        before: Schema.optional(Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))),
        /** The agent's sessions only. */
        agent: Schema.optional(Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))),
        /** The sessions whose id holds this text, as written (no wildcards). */
        q: Schema.optional(Schema.String.check(Schema.isMaxLength(MAX_QUERY_LENGTH)))
      },
      success: Schema.Struct({ sessions: Schema.Array(SessionRow) }),
      error: sessionErrors
    }),
    HttpApiEndpoint.get("get", "/:id", { params: SessionIdParam, success: SessionRow, error: sessionErrors }),
    HttpApiEndpoint.delete("stop", "/:id", { params: SessionIdParam, error: sessionErrors }),
    HttpApiEndpoint.post("run", "/:id/runs", { params: SessionIdParam, payload: RunRequest, success: RunOutcome, error: sessionErrors }),
    HttpApiEndpoint.post("stream", "/:id/runs/stream", { params: SessionIdParam, payload: RunRequest, success: EventsStream, error: [...sessionErrors, TooManyRequests] }),
    HttpApiEndpoint.post("abort", "/:id/abort", { params: SessionIdParam, error: sessionErrors }),
    HttpApiEndpoint.get("events", "/:id/events", {
      params: SessionIdParam,
      query: { after: Schema.optional(Schema.String.check(Schema.isMaxLength(32))) },
      headers: { "last-event-id": Schema.optional(Schema.String.check(Schema.isMaxLength(32))) },
      success: EventsStream,
      error: [...sessionErrors, Gone, TooManyRequests]
    }),
    HttpApiEndpoint.get("history", "/:id/history", { params: SessionIdParam, success: Schema.Array(Message.Message), error: sessionErrors }),
    HttpApiEndpoint.get("pending", "/:id/approvals", { params: SessionIdParam, success: Schema.Array(SessionsById.Pending), error: sessionErrors }),
    HttpApiEndpoint.post("answer", "/:id/approvals/:callId", {
      params: { ...SessionIdParam, callId: Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH)) },
      payload: Answer,
      error: sessionErrors
    }),
    HttpApiEndpoint.post("respond", "/:id/elicitations/:requestId", {
      params: { ...SessionIdParam, requestId: Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH)) },
      payload: SessionsById.ElicitationAnswer,
      error: sessionErrors
    }),
    HttpApiEndpoint.get("usage", "/:id/usage", { params: SessionIdParam, success: UsageView, error: [...sessionErrors, TooManyRequests] })
  )
  .middleware(Authentication)
  .prefix("/sessions")
{}

/** @since 0.1.0 @category groups */
export class AccountApi extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("me", "/me", { success: Me, error: sessionErrors }),
    HttpApiEndpoint.get("usage", "/usage", {
      query: {
        by: Schema.Literals(["agent", "day", "session"]),
        limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Limits.MAX_PAGE })))
      },
      success: UsageReport,
      error: sessionErrors
    })
  )
  .middleware(Authentication)
{}

/** @since 0.1.0 @category groups */
export class ApprovalsApi extends HttpApiGroup.make("approvals")
  .add(
    HttpApiEndpoint.get("list", "/", {
      query: {
        status: Schema.optional(Schema.Literals(["open", "answered", "all"])),
        tool: Schema.optional(Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))),
        /** The requests' order: `oldest` first (default) or `newest` first; a cursor pages on in it. */
        order: Schema.optional(Schema.Literals(["oldest", "newest"])),
        limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Limits.MAX_PAGE }))),
        cursor: Schema.optional(Schema.String.check(Schema.isMaxLength(256)))
      },
      success: Schema.Struct({ records: Schema.Array(ApprovalRecord.ApprovalRecord), next: Schema.optionalKey(Schema.String) }),
      error: sessionErrors
    }),
    HttpApiEndpoint.post("answer", "/:approvalId", {
      params: { approvalId: Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH)) },
      payload: Answer,
      success: ApprovalRecord.ApprovalRecord,
      error: sessionErrors
    })
  )
  .middleware(Authentication)
  .prefix("/approvals")
{}

/** The UI message stream: `useChat`'s answer. */
const UiStream = HttpApiSchema.StreamSse({ data: Schema.Unknown })

/** @since 0.1.0 @category groups */
export class ChatApi extends HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.post("send", "/", { payload: UiMessageStream.ChatRequest, success: UiStream, error: [...sessionErrors, TooManyRequests] }),
    HttpApiEndpoint.get("resume", "/:id/stream", {
      params: SessionIdParam,
      success: [UiStream, HttpApiSchema.NoContent],
      error: [...sessionErrors, TooManyRequests]
    })
  )
  .middleware(Authentication)
  .prefix("/chat")
{}

/**
 * The whole API.
 *
 * @since 0.1.0
 * @category api
 */
export class Api extends HttpApi.make("condukt")
  .add(HealthApi)
  .add(AccountApi)
  .add(SessionsApi)
  .add(ApprovalsApi)
  .add(ChatApi)
  .add(WorkflowsApi)
  .annotateMerge(OpenApi.annotations({
    title: "Condukt server",
    description: "Condukt sessions over HTTP: runs, resumable event streams, approvals, the AI SDK's UI message stream."
  }))
{}

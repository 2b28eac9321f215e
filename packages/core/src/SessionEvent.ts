/**
 * SessionEvent — what a session tells the world while it runs.
 *
 * Every event carries the session id, the run id and a sequence number that increases across the
 * session's whole life. A run's events come in this order: AgentStart, then per model request
 * TurnStart, a ModelRetry for each retry of the request, TextDelta / ThinkingDelta as they stream, TurnEnd, then (when the model called tools)
 * every ToolCall before any runs (then a SecretsUsed for each call that hands the session's secrets
 * to a process), an ApprovalRequested for each call that waits for a person's answer (when it
 * starts waiting), and the ToolResults in call order (when calls wait for an answer, the others'
 * are published once they all finished, the waiting ones' after their answers); an Error when the run fails;
 * ApprovalRequested and ElicitationRequested for what an MCP server asks while the run runs;
 * StillWaiting when a `run` caller has waited long on calls nobody answered;
 * AgentEnd last, always. The session's MCP servers report McpServerStarted / McpServerDown /
 * McpServerStopped inside the run that is running when it happens; what happens between runs
 * reaches observers at once with an empty run id, and the next run's own stream after its
 * AgentStart (so a `stream` reader of the first run sees the servers the session started); a
 * McpServerStopped with a `reason` says the session goes on without its servers. A
 * Compacted event follows a run's last TurnEnd when its compactor shortened the history (one
 * from `session.compact` reaches observers with an empty run id).
 *
 * A sub-agent's events (`Agent.asTool`) reach the stream of the run whose call started it, among
 * that run's own, each as the sub-agent's session numbered it (its own session id, run id and
 * `seq`) and tagged with `agentPath`, the agents from the top-level session's down to the one that
 * emitted it (`["main", "researcher"]`), and `parentCallId`, the call in the run of the agent above
 * it that started it (so a page can nest a sub-agent's run under its call, a grandchild's under its
 * parent's). A session's own events carry neither.
 *
 * Events are plain tagged objects (a run makes several per turn); the schemas encode and decode them.
 */
import { Schema } from "effect"
import { FormSchema } from "./Elicitation.ts"
import { Usage } from "./Usage.ts"

const base = {
  sessionId: Schema.String,
  runId: Schema.String,
  seq: Schema.Int,
  /** Set on a sub-agent's event only: the agents from the top-level session's down to the one that emitted it. */
  agentPath: Schema.optionalKey(Schema.Array(Schema.String)),
  /** Set with `agentPath`: the call, in the run of the agent above, that started the one that emitted it. */
  parentCallId: Schema.optionalKey(Schema.String)
}

/** @since 0.1.0 @category models */
export const AgentStart = Schema.TaggedStruct("AgentStart", { ...base, prompt: Schema.String })
export type AgentStart = typeof AgentStart.Type

/** @since 0.1.0 @category models */
export const TurnStart = Schema.TaggedStruct("TurnStart", { ...base, turn: Schema.Int })
export type TurnStart = typeof TurnStart.Type

/** @since 0.1.0 @category models */
export const TextDelta = Schema.TaggedStruct("TextDelta", { ...base, text: Schema.String })
export type TextDelta = typeof TextDelta.Type

/** @since 0.1.0 @category models */
export const ThinkingDelta = Schema.TaggedStruct("ThinkingDelta", { ...base, text: Schema.String })
export type ThinkingDelta = typeof ThinkingDelta.Type

/**
 * The model request failed in a way worth retrying and is tried again after `delay`: `attempt` is
 * the attempt about to start (2 for the first retry), `reason` the failure's one line.
 *
 * @since 0.1.0
 * @category models
 */
export const ModelRetry = Schema.TaggedStruct("ModelRetry", {
  ...base,
  attempt: Schema.Int,
  reason: Schema.String,
  delay: Schema.Duration
})
export type ModelRetry = typeof ModelRetry.Type

/** @since 0.1.0 @category models */
export const TurnEnd = Schema.TaggedStruct("TurnEnd", {
  ...base,
  turn: Schema.Int,
  /** The reply's tokens: the shape of `RunResult.usage` (a run's is the sum of its turns'). */
  usage: Usage
})
export type TurnEnd = typeof TurnEnd.Type

/** @since 0.1.0 @category models */
export const ToolCall = Schema.TaggedStruct("ToolCall", {
  ...base,
  callId: Schema.String,
  name: Schema.String,
  input: Schema.Unknown
})
export type ToolCall = typeof ToolCall.Type

/** @since 0.1.0 @category models */
export const ToolResult = Schema.TaggedStruct("ToolResult", {
  ...base,
  callId: Schema.String,
  name: Schema.String,
  content: Schema.String,
  isError: Schema.Boolean,
  data: Schema.optionalKey(Schema.Unknown)
})
export type ToolResult = typeof ToolResult.Type

/**
 * A tool call is about to hand the session's secrets to a process (its environment): the audit
 * names them, never their values. It follows the message's ToolCall events.
 */
export const SecretsUsed = Schema.TaggedStruct("SecretsUsed", {
  ...base,
  callId: Schema.String,
  name: Schema.String,
  secrets: Schema.Array(Schema.String)
})
export type SecretsUsed = typeof SecretsUsed.Type

/**
 * A call waits for a person's answer (`session.approve` / `session.deny`) before it runs: its
 * tool's flag or the session's rules ask for one (docs/approvals.md).
 */
export const ApprovalRequested = Schema.TaggedStruct("ApprovalRequested", {
  ...base,
  callId: Schema.String,
  tool: Schema.String,
  input: Schema.Unknown,
  /** A tool asking while it runs (`Tool.Context.approve`): what it is about to do, and more. */
  summary: Schema.optionalKey(Schema.String),
  details: Schema.optionalKey(Schema.String)
})
export type ApprovalRequested = typeof ApprovalRequested.Type

/**
 * The caller of `session.run` has waited `waitedMs` on calls nobody has answered
 * (`RunOptions.waitNotice`, default 30 s): `calls` are those `session.pending` lists. Published
 * again when the waiting calls change; a warning says the same in the log (docs/approvals.md).
 */
export const StillWaiting = Schema.TaggedStruct("StillWaiting", {
  ...base,
  calls: Schema.Array(Schema.Struct({ callId: Schema.String, tool: Schema.String })),
  waitedMs: Schema.Int
})
export type StillWaiting = typeof StillWaiting.Type

/**
 * A session's MCP server asks the user something (`elicitation/create`) and the session has no
 * handler for it: `session.respond(id, answer)` answers (docs/mcp.md, Server requests).
 */
export const ElicitationRequested = Schema.TaggedStruct("ElicitationRequested", {
  ...base,
  id: Schema.String,
  server: Schema.String,
  message: Schema.String,
  schema: FormSchema
})
export type ElicitationRequested = typeof ElicitationRequested.Type

/** An MCP server's connection is up (at session start, or brought back by its restart policy). */
export const McpServerStarted = Schema.TaggedStruct("McpServerStarted", {
  ...base,
  server: Schema.String,
  transport: Schema.Literals(["stdio", "sse", "http"]),
  tools: Schema.Int
})
export type McpServerStarted = typeof McpServerStarted.Type

/**
 * An MCP server's connection died (`description` says how); its tools answer `TransportDown` until
 * a restart brings it back.
 */
export const McpServerDown = Schema.TaggedStruct("McpServerDown", { ...base, server: Schema.String, description: Schema.String })
export type McpServerDown = typeof McpServerDown.Type

/**
 * Why the servers of a session were stopped while it goes on: its supervisor gave up, `server`
 * having needed more than `maxRestarts` restarts within `periodMs`. None of them comes back in this
 * session (ADR 0101).
 */
export const SupervisorGaveUp = Schema.TaggedStruct("SupervisorGaveUp", {
  server: Schema.String,
  maxRestarts: Schema.Int,
  periodMs: Schema.Finite
})
export type SupervisorGaveUp = typeof SupervisorGaveUp.Type

/**
 * An MCP server was stopped: without `reason`, the session closed its connection (it is
 * stopping); with one, the session's supervisor gave up, and the server will not come back.
 */
export const McpServerStopped = Schema.TaggedStruct("McpServerStopped", {
  ...base,
  server: Schema.String,
  reason: Schema.optionalKey(SupervisorGaveUp)
})
export type McpServerStopped = typeof McpServerStopped.Type

/**
 * The session's compactor shortened its history (after a run, or on `session.compact`): sizes in
 * messages, before and after.
 */
export const Compacted = Schema.TaggedStruct("Compacted", { ...base, before: Schema.Int, after: Schema.Int })
export type Compacted = typeof Compacted.Type

/** The run failed; `message` is the error's one line. */
export const RunFailed = Schema.TaggedStruct("Error", { ...base, message: Schema.String })
export type RunFailed = typeof RunFailed.Type

/** @since 0.1.0 @category models */
export const AgentEnd = Schema.TaggedStruct("AgentEnd", {
  ...base,
  outcome: Schema.Literals(["completed", "failed", "aborted"])
})
export type AgentEnd = typeof AgentEnd.Type

/** @since 0.1.0 @category models */
export const SessionEvent = Schema.Union([
  AgentStart,
  TurnStart,
  ModelRetry,
  TextDelta,
  ThinkingDelta,
  TurnEnd,
  ToolCall,
  ToolResult,
  SecretsUsed,
  ApprovalRequested,
  StillWaiting,
  ElicitationRequested,
  McpServerStarted,
  McpServerDown,
  McpServerStopped,
  Compacted,
  RunFailed,
  AgentEnd
])
export type SessionEvent = typeof SessionEvent.Type

/** The fields every event carries. */
export type Base = {
  readonly sessionId: string
  readonly runId: string
  readonly seq: number
  readonly agentPath?: ReadonlyArray<string>
  readonly parentCallId?: string
}

/** An event without its base fields: what the session fills in. */
export type Payload = SessionEvent extends infer E ? E extends SessionEvent ? Omit<E, keyof Base> : never : never

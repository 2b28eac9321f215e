/**
 * SessionEvent — what a session tells the world while it runs.
 *
 * Every event carries the session id, the run id and a sequence number that increases across the
 * session's whole life. A run's events come in this order: AgentStart, then per model request
 * TurnStart, TextDelta / ThinkingDelta as they stream, TurnEnd, then (when the model called tools)
 * every ToolCall before any runs and the ToolResults in call order; an Error when the run fails;
 * AgentEnd last, always.
 */
import { Schema } from "effect"

const base = {
  sessionId: Schema.String,
  runId: Schema.String,
  seq: Schema.Int
}

/** @since 0.1.0 @category models */
export class AgentStart extends Schema.TaggedClass<AgentStart>()("AgentStart", { ...base, prompt: Schema.String }) {}

/** @since 0.1.0 @category models */
export class TurnStart extends Schema.TaggedClass<TurnStart>()("TurnStart", { ...base, turn: Schema.Int }) {}

/** @since 0.1.0 @category models */
export class TextDelta extends Schema.TaggedClass<TextDelta>()("TextDelta", { ...base, text: Schema.String }) {}

/** @since 0.1.0 @category models */
export class ThinkingDelta extends Schema.TaggedClass<ThinkingDelta>()("ThinkingDelta", { ...base, text: Schema.String }) {}

/** @since 0.1.0 @category models */
export class TurnEnd extends Schema.TaggedClass<TurnEnd>()("TurnEnd", {
  ...base,
  turn: Schema.Int,
  inputTokens: Schema.Int,
  outputTokens: Schema.Int
}) {}

/** @since 0.1.0 @category models */
export class ToolCall extends Schema.TaggedClass<ToolCall>()("ToolCall", {
  ...base,
  callId: Schema.String,
  name: Schema.String,
  input: Schema.Unknown
}) {}

/** @since 0.1.0 @category models */
export class ToolResult extends Schema.TaggedClass<ToolResult>()("ToolResult", {
  ...base,
  callId: Schema.String,
  name: Schema.String,
  content: Schema.String,
  isError: Schema.Boolean,
  data: Schema.optionalKey(Schema.Unknown)
}) {}

/** The run failed; `message` is the error's one line. */
export class RunFailed extends Schema.TaggedClass<RunFailed>()("Error", { ...base, message: Schema.String }) {}

/** @since 0.1.0 @category models */
export class AgentEnd extends Schema.TaggedClass<AgentEnd>()("AgentEnd", {
  ...base,
  outcome: Schema.Literals(["completed", "failed", "aborted"])
}) {}

/** @since 0.1.0 @category models */
export const SessionEvent = Schema.Union([
  AgentStart,
  TurnStart,
  TextDelta,
  ThinkingDelta,
  TurnEnd,
  ToolCall,
  ToolResult,
  RunFailed,
  AgentEnd
])
export type SessionEvent = typeof SessionEvent.Type

/**
 * Message — the conversation as the session keeps it, independent of any provider's wire format.
 *
 * A user prompt, an assistant reply (ordered text, thinking and tool-call parts) and one message
 * per tool result. Providers translate these to and from their own JSON; nothing here knows one.
 * All are Schema classes so a history can be encoded, stored and decoded as is.
 */
import { Schema } from "effect"

/** @since 0.1.0 @category models */
export class TextPart extends Schema.TaggedClass<TextPart>()("Text", { text: Schema.String }) {}

/** @since 0.1.0 @category models */
export class ThinkingPart extends Schema.TaggedClass<ThinkingPart>()("Thinking", {
  text: Schema.String,
  /** Some providers sign thinking blocks and want the signature back. */
  signature: Schema.optionalKey(Schema.String)
}) {}

/** @since 0.1.0 @category models */
export class ToolCallPart extends Schema.TaggedClass<ToolCallPart>()("ToolCall", {
  id: Schema.String,
  name: Schema.String,
  input: Schema.Unknown
}) {}

/** @since 0.1.0 @category models */
export const AssistantPart = Schema.Union([TextPart, ThinkingPart, ToolCallPart])
export type AssistantPart = typeof AssistantPart.Type

/** @since 0.1.0 @category models */
export class UserMessage extends Schema.TaggedClass<UserMessage>()("UserMessage", { content: Schema.String }) {}

/** @since 0.1.0 @category models */
export class AssistantMessage extends Schema.TaggedClass<AssistantMessage>()("AssistantMessage", {
  parts: Schema.Array(AssistantPart)
}) {}

/** @since 0.1.0 @category models */
export class ToolResultMessage extends Schema.TaggedClass<ToolResultMessage>()("ToolResultMessage", {
  callId: Schema.String,
  name: Schema.String,
  content: Schema.String,
  isError: Schema.Boolean
}) {}

/** @since 0.1.0 @category models */
export const Message = Schema.Union([UserMessage, AssistantMessage, ToolResultMessage])
export type Message = typeof Message.Type

/**
 * The text of an assistant message: its text parts joined.
 *
 * @since 0.1.0
 * @category combinators
 */
export const text = (message: AssistantMessage): string =>
  message.parts.flatMap((part) => (part._tag === "Text" ? [part.text] : [])).join("")

/**
 * The tool calls of an assistant message, in the order the model made them.
 *
 * @since 0.1.0
 * @category combinators
 */
export const toolCalls = (message: AssistantMessage): ReadonlyArray<ToolCallPart> =>
  message.parts.filter((part): part is ToolCallPart => part._tag === "ToolCall")

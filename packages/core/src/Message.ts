/**
 * Message — the conversation as the session keeps it, independent of any provider's wire format.
 *
 * A user prompt, an assistant reply (ordered text, thinking and tool-call parts) and one message
 * per tool result; a prompt or a tool result may carry images (base64, as every vendor accepts). Providers translate these to and from their own JSON; nothing here knows one.
 * Values are plain tagged objects (they are made on every turn, so they must be cheap); the
 * schemas beside them encode and decode a history for storage.
 */
import { Schema } from "effect"

// ---------------------------------------------------------------------------------------------
// Schemas and models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export const TextPart = Schema.TaggedStruct("Text", { text: Schema.String })
export type TextPart = typeof TextPart.Type

/** @since 0.1.0 @category models */
export const ThinkingPart = Schema.TaggedStruct("Thinking", {
  text: Schema.String,
  /** Some providers sign thinking blocks and want the signature back. */
  signature: Schema.optionalKey(Schema.String),
  /** Thinking the provider encrypted (Anthropic's `redacted_thinking`): opaque, sent back as it came; `text` is empty. */
  redacted: Schema.optionalKey(Schema.String)
})
export type ThinkingPart = typeof ThinkingPart.Type

/** @since 0.1.0 @category models */
export const ToolCallPart = Schema.TaggedStruct("ToolCall", {
  id: Schema.String,
  name: Schema.String,
  input: Schema.Unknown,
  /** Who made the call when it was not the model directly: code the model runs (programmatic tool calling). */
  caller: Schema.optionalKey(Schema.Literals(["human", "code_execution"])),
  /** The provider's id of the code execution that made the call, sent back with the call. */
  callerId: Schema.optionalKey(Schema.String)
})
export type ToolCallPart = typeof ToolCallPart.Type

/**
 * A block only one provider understands (Anthropic's server tool use and its result, the
 * code-execution container), kept so that provider can send it back; every other provider drops it.
 */
export const ProviderPart = Schema.TaggedStruct("Provider", { provider: Schema.String, value: Schema.Unknown })
export type ProviderPart = typeof ProviderPart.Type

/**
 * An image for the model: base64 data and its media type (`image/png`, `image/jpeg`, `image/gif`,
 * `image/webp`). Providers send it as their image block; size limits are the vendors' own.
 *
 * @since 0.1.0
 * @category models
 */
export const ImagePart = Schema.TaggedStruct("Image", { mediaType: Schema.String, data: Schema.String })
export type ImagePart = typeof ImagePart.Type

/** @since 0.1.0 @category models */
export const AssistantPart = Schema.Union([TextPart, ThinkingPart, ToolCallPart, ProviderPart])
export type AssistantPart = typeof AssistantPart.Type

/** @since 0.1.0 @category models */
export const UserMessage = Schema.TaggedStruct("UserMessage", {
  content: Schema.String,
  images: Schema.optionalKey(Schema.Array(ImagePart))
})
export type UserMessage = typeof UserMessage.Type

/** @since 0.1.0 @category models */
export const AssistantMessage = Schema.TaggedStruct("AssistantMessage", { parts: Schema.Array(AssistantPart) })
export type AssistantMessage = typeof AssistantMessage.Type

/** @since 0.1.0 @category models */
export const ToolResultMessage = Schema.TaggedStruct("ToolResultMessage", {
  callId: Schema.String,
  name: Schema.String,
  content: Schema.String,
  isError: Schema.Boolean,
  /** Images the tool returned beside its text (a picture it read). */
  images: Schema.optionalKey(Schema.Array(ImagePart))
})
export type ToolResultMessage = typeof ToolResultMessage.Type

/** @since 0.1.0 @category models */
export const Message = Schema.Union([UserMessage, AssistantMessage, ToolResultMessage])
export type Message = typeof Message.Type

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category constructors */
export const user = (content: string, images?: ReadonlyArray<ImagePart>): UserMessage =>
  images === undefined || images.length === 0 ? { _tag: "UserMessage", content } : { _tag: "UserMessage", content, images }

/** @since 0.1.0 @category constructors */
export const assistant = (parts: ReadonlyArray<AssistantPart>): AssistantMessage => ({ _tag: "AssistantMessage", parts })

/** @since 0.1.0 @category constructors */
export const toolResult = (result: Omit<ToolResultMessage, "_tag">): ToolResultMessage => {
  const message: ToolResultMessage = {
    _tag: "ToolResultMessage",
    callId: result.callId,
    name: result.name,
    content: result.content,
    isError: result.isError
  }
  return result.images === undefined || result.images.length === 0 ? message : { ...message, images: result.images }
}

/** @since 0.1.0 @category constructors */
export const imagePart = (mediaType: string, data: string): ImagePart => ({ _tag: "Image", mediaType, data })

/** @since 0.1.0 @category constructors */
export const textPart = (text: string): TextPart => ({ _tag: "Text", text })

/** @since 0.1.0 @category constructors */
export const thinkingPart = (text: string): ThinkingPart => ({ _tag: "Thinking", text })

/** @since 0.1.0 @category constructors */
export const toolCallPart = (call: Omit<ToolCallPart, "_tag">): ToolCallPart => {
  const part: ToolCallPart = { _tag: "ToolCall", id: call.id, name: call.name, input: call.input }
  if (call.caller === undefined) return part
  return call.callerId === undefined ? { ...part, caller: call.caller } : { ...part, caller: call.caller, callerId: call.callerId }
}

// ---------------------------------------------------------------------------------------------
// Combinators
// ---------------------------------------------------------------------------------------------

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
export const toolCalls = (message: AssistantMessage): ReadonlyArray<ToolCallPart> => {
  // A reply of calls only (the usual one) is its own list: no copy held while the calls run.
  let calls = 0
  for (const part of message.parts) if (part._tag === "ToolCall") calls++
  return calls === message.parts.length
    ? message.parts as ReadonlyArray<ToolCallPart>
    : message.parts.filter((part): part is ToolCallPart => part._tag === "ToolCall")
}

/**
 * ModelReply — what a model streams, and what its parts make: the assistant message a session
 * keeps and the reply's usage.
 *
 * The parts are the whole vocabulary a provider answers in; folding them is pure (no Effect, no
 * services), so a session, a test double and a benchmark fold the same way. `Model` re-exports
 * every name here: a program imports them from either.
 */
import type { Duration } from "effect"
import * as JsonLimits from "./JsonLimits.ts"
import {
  assistant,
  type AssistantMessage,
  type AssistantPart,
  textPart,
  thinkingPart,
  type ToolCallPart,
  toolCallPart
} from "./Message.ts"
import type { Usage } from "./Usage.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export type FinishReason = "stop" | "tool-calls" | "length" | "content-filter" | "other"

/**
 * What a model streams. A tool call arrives whole, once its arguments are complete (arguments that
 * are not valid JSON arrive as their raw text, which the tool's decoding turns into an error result
 * for the model). `Usage` parts are increments: a reply's usage is the sum of its `Usage` parts (a
 * provider reporting input tokens first and output tokens at the end sends two).
 * `ThinkingSignature` closes the thinking before it; `RedactedThinking` and `ProviderData` are
 * blocks the provider wants back verbatim on the next request. `Retry` says the request failed
 * before any other part and is tried again after `delay` (`attempt` is the one about to start);
 * it is no part of the reply.
 */
export type Part =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ThinkingDelta"; readonly text: string }
  | { readonly _tag: "ThinkingSignature"; readonly signature: string }
  | { readonly _tag: "RedactedThinking"; readonly data: string }
  | {
    readonly _tag: "ToolCall"
    readonly id: string
    readonly name: string
    readonly input: unknown
    readonly caller?: Exclude<ToolCallPart["caller"], undefined>
    readonly callerId?: string
  }
  | { readonly _tag: "ProviderData"; readonly provider: string; readonly value: unknown }
  | {
    readonly _tag: "Usage"
    readonly inputTokens: number
    readonly outputTokens: number
    readonly cacheReadTokens?: number
    readonly cacheWriteTokens?: number
  }
  | { readonly _tag: "Finish"; readonly reason: FinishReason }
  | { readonly _tag: "Retry"; readonly attempt: number; readonly reason: string; readonly delay: Duration.Duration }

// ---------------------------------------------------------------------------------------------
// Combinators
// ---------------------------------------------------------------------------------------------

/**
 * Folds streamed parts into the assistant message they make: consecutive deltas of one kind join
 * into one part, tool calls keep their place. A call's arguments past `JsonLimits.defaults` are
 * replaced by `JsonLimits.standIn` (the tool then answers why, see `Tool`).
 *
 * @since 0.1.0
 * @category combinators
 */
export const toMessage = (parts: ReadonlyArray<Part>): AssistantMessage => {
  const out: Array<AssistantPart> = []
  for (const part of parts) {
    const last = out.at(-1)
    if (part._tag === "TextDelta") {
      if (last?._tag === "Text") out[out.length - 1] = textPart(last.text + part.text)
      else out.push(textPart(part.text))
    } else if (part._tag === "ThinkingDelta") {
      // A signed (closed) thinking block is never extended: the next delta starts a new block.
      if (last?._tag === "Thinking" && last.signature === undefined && last.redacted === undefined) {
        out[out.length - 1] = thinkingPart(last.text + part.text)
      } else out.push(thinkingPart(part.text))
    } else if (part._tag === "ThinkingSignature") {
      if (last?._tag === "Thinking" && last.signature === undefined && last.redacted === undefined) {
        out[out.length - 1] = { ...last, signature: part.signature }
      } else out.push({ ...thinkingPart(""), signature: part.signature })
    } else if (part._tag === "RedactedThinking") {
      out.push({ ...thinkingPart(""), redacted: part.data })
    } else if (part._tag === "ToolCall") {
      // Arguments past JsonLimits never enter the history (every save and request would carry
      // them): a stand-in says why, and the call's result repeats it to the model.
      const refused = JsonLimits.check(part.input)
      out.push(toolCallPart(refused === undefined ? part : { ...part, input: JsonLimits.standIn(refused) }))
    } else if (part._tag === "ProviderData") {
      out.push({ _tag: "Provider", provider: part.provider, value: part.value })
    }
  }
  // An array grown by push keeps spare capacity; the message lives as long as the session, so it
  // keeps an exact-size copy.
  return assistant(out.slice())
}

/**
 * No tokens.
 *
 * @since 0.1.0
 * @category constructors
 */
export const emptyUsage: Usage = { inputTokens: 0, outputTokens: 0 }

/**
 * Two usages summed; cache counts appear only when there were some (most providers and every test
 * double have none).
 *
 * @since 0.1.0
 * @category combinators
 */
export const addUsage = (a: Usage, b: Usage): Usage => {
  const cacheReadTokens = (a.cacheReadTokens ?? 0) + (b.cacheReadTokens ?? 0)
  const cacheWriteTokens = (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0)
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...(cacheReadTokens === 0 ? {} : { cacheReadTokens }),
    ...(cacheWriteTokens === 0 ? {} : { cacheWriteTokens })
  }
}

/**
 * The usage of a reply: the sum of its `Usage` parts.
 *
 * @since 0.1.0
 * @category combinators
 */
export const usageOf = (parts: ReadonlyArray<Part>): Usage => {
  let usage = emptyUsage
  for (const part of parts) {
    if (part._tag === "Usage") usage = addUsage(usage, part)
  }
  return usage
}

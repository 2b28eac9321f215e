/**
 * Compactor — how a session keeps a long history within what a model can read.
 *
 * A compactor takes the history and returns a shorter one; the session runs it after each
 * completed run and on `session.compact`, saves the result to its store, and records an event
 * with the sizes before and after. A failure is the compactor's own error; the session logs it
 * and keeps its history. Three layers: `layerSliding` keeps the last messages, `layerPruneToolResults`
 * elides old, large tool results, and `layerSummarize` has a model fold the older turns into one
 * message. None of them ever leaves a tool result without the call it answers, so every history
 * they return is one a provider accepts. The module refuses to guess at tokenisers: `layerSummarize`
 * estimates tokens as characters / 4.
 */
import { Context, Effect, Layer, Schema, Stream } from "effect"
import * as History from "./History.ts"
import { type Message, toolCalls, toolResult, type ToolResultMessage, user } from "./Message.ts"
import type * as Model from "./Model.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * The summarising model failed; `description` is its error's sentence, `cause` the error.
 *
 * @since 0.1.0
 * @category errors
 */
export class ModelFailed extends Schema.TaggedError<ModelFailed>()("ModelFailed", {
  description: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return this.description
  }
}

/** @since 0.1.0 @category errors */
export class EmptySummary extends Schema.TaggedError<EmptySummary>()("EmptySummary", {}) {
  override get message() {
    return "the model returned an empty summary"
  }
}

/** Anything else a compactor could not do; `description` is safe to show, `cause` is for logs. */
export class Failed extends Schema.TaggedError<Failed>()("Failed", {
  description: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return this.description
  }
}

/** @since 0.1.0 @category errors */
export const Reason = Schema.Union([ModelFailed, EmptySummary, Failed])
export type Reason = typeof Reason.Type

/**
 * The one error of the seam: a compaction did not complete (the summarising model failed, for
 * instance), and why (`reason`); the history is kept as it was.
 *
 * @since 0.1.0
 * @category errors
 */
export class CompactorError extends Schema.TaggedError<CompactorError>()("CompactorError", {
  reason: Reason
}) {
  override get message() {
    return `Compaction failed: ${this.reason.message}`
  }
}

/** @since 0.1.0 @category models */
export interface Service {
  /** A shorter history, or the same array when there is nothing to do. */
  readonly compact: (messages: ReadonlyArray<Message>) => Effect.Effect<ReadonlyArray<Message>, CompactorError>
}

/**
 * The compactor of sessions that are given none at start.
 *
 * @since 0.1.0
 * @category services
 */
export class Compactor extends Context.Service<Compactor, Service>()("@condukt/core/Compactor") {}

/** `layerSliding`'s default: how many messages it keeps (Condukt's). */
export const DEFAULT_KEEP = 20
/** `layerPruneToolResults`' defaults (Condukt's): the last 5 tool results stay whole, older ones over 4 KiB are elided. */
export const DEFAULT_KEEP_RECENT_RESULTS = 5
export const DEFAULT_MAX_RESULT_BYTES = 4096
/** `layerSummarize`'s defaults: fold once the history passes ~100k tokens, keeping the last 10 messages. */
export const DEFAULT_SUMMARY_THRESHOLD = 100_000
export const DEFAULT_SUMMARY_KEEP_RECENT = 10

/** What the summarising model is told it is doing. */
export const SUMMARY_SYSTEM =
  "You summarise a conversation between a user and an AI agent so the agent can go on with the work without the full history."

/** The request that ends the messages sent for a summary. */
export const SUMMARY_PROMPT =
  "Summarise the conversation so far for the agent that will continue it: the user's goals, what was done and found, the files, commands and decisions that matter, and what is still open. Be concise."

/** What the summary message starts with, in the compacted history. */
export const SUMMARY_PREFIX = "Summary of the earlier conversation:\n\n"

// ---------------------------------------------------------------------------------------------
// Pure compactions
// ---------------------------------------------------------------------------------------------

/**
 * The last `keep` messages, without the tool results whose call was dropped (Condukt's Sliding).
 */
const slide = (messages: ReadonlyArray<Message>, keep: number): ReadonlyArray<Message> => {
  if (messages.length <= keep) return messages
  const kept = messages.slice(messages.length - Math.max(0, keep))
  const calls = new Set<string>()
  const out: Array<Message> = []
  for (const message of kept) {
    if (message._tag === "AssistantMessage") for (const call of toolCalls(message)) calls.add(call.id)
    if (message._tag !== "ToolResultMessage" || calls.has(message.callId)) out.push(message)
  }
  return out
}

const encoder = new TextEncoder()

const sizeOf = (result: ToolResultMessage) =>
  encoder.encode(result.content).length + (result.images ?? []).reduce((total, image) => total + image.data.length, 0)

/** Tool results older than the last `keepRecent`, over `maxBytes`, become `<elided: N bytes>` (Condukt's ToolResultPrune). */
const prune = (messages: ReadonlyArray<Message>, keepRecent: number, maxBytes: number): ReadonlyArray<Message> => {
  let recent = 0
  let changed = false
  const out = [...messages]
  for (let i = out.length - 1; i >= 0; i--) {
    const message = out[i]!
    if (message._tag !== "ToolResultMessage") continue
    if (recent++ < keepRecent) continue
    const size = sizeOf(message)
    if (size <= maxBytes) continue
    out[i] = toolResult({ callId: message.callId, name: message.name, content: `<elided: ${size} bytes>`, isError: message.isError })
    changed = true
  }
  return changed ? out : messages
}

/** Characters / 4, over what a provider is sent of each message. */
const estimateTokens = (messages: ReadonlyArray<Message>): number => {
  let chars = 0
  for (const message of messages) {
    if (message._tag === "AssistantMessage") {
      for (const part of message.parts) {
        chars += part._tag === "Text" || part._tag === "Thinking" ? part.text.length : JSON.stringify(part).length
      }
    } else {
      chars += message.content.length
    }
  }
  return Math.ceil(chars / 4)
}

/**
 * Where the recent part starts: at least `keepRecent` messages from the end, moved back past tool
 * results so no kept result loses its call.
 */
const recentStart = (messages: ReadonlyArray<Message>, keepRecent: number): number => {
  let start = Math.max(0, messages.length - keepRecent)
  while (start > 0 && messages[start]!._tag === "ToolResultMessage") start--
  return start
}

// ---------------------------------------------------------------------------------------------
// Layers
// ---------------------------------------------------------------------------------------------

/**
 * Keeps the last `keep` messages (default 20), then drops any tool result whose call was dropped.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSliding = (options: { readonly keep?: number | undefined } = {}): Layer.Layer<Compactor> =>
  Layer.succeed(Compactor, { compact: (messages) => Effect.succeed(slide(messages, options.keep ?? DEFAULT_KEEP)) })

/**
 * Replaces the content of tool results older than the last `keepRecent` (default 5) and larger
 * than `maxBytes` (default 4,096; text and images together) by `<elided: N bytes>`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPruneToolResults = (
  options: { readonly keepRecent?: number | undefined; readonly maxBytes?: number | undefined } = {}
): Layer.Layer<Compactor> =>
  Layer.succeed(Compactor, {
    compact: (messages) =>
      Effect.succeed(prune(messages, options.keepRecent ?? DEFAULT_KEEP_RECENT_RESULTS, options.maxBytes ?? DEFAULT_MAX_RESULT_BYTES))
  })

/**
 * Once the history passes `threshold` estimated tokens (default 100,000), `model` folds the
 * messages before the last `keepRecent` (default 10) into one summary message; the recent ones
 * stay as they were.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSummarize = (options: {
  readonly model: Model.Service
  readonly keepRecent?: number | undefined
  readonly threshold?: number | undefined
}): Layer.Layer<Compactor> =>
  Layer.succeed(Compactor, {
    compact: Effect.fn("Compactor.summarize")(function*(messages: ReadonlyArray<Message>) {
      if (estimateTokens(messages) <= (options.threshold ?? DEFAULT_SUMMARY_THRESHOLD)) return messages
      const start = recentStart(messages, options.keepRecent ?? DEFAULT_SUMMARY_KEEP_RECENT)
      if (start === 0) return messages
      const request = {
        system: SUMMARY_SYSTEM,
        messages: History.fromIterable([...messages.slice(0, start), user(SUMMARY_PROMPT)]),
        tools: []
      }
      const summary = yield* options.model.stream(request).pipe(
        Stream.runFold(() => "", (text, part) => (part._tag === "TextDelta" ? text + part.text : text)),
        Effect.mapError((cause) => new CompactorError({ reason: new ModelFailed({ description: cause.message, cause }) }))
      )
      if (summary.trim() === "") return yield* new CompactorError({ reason: new EmptySummary() })
      return [user(`${SUMMARY_PREFIX}${summary.trim()}`), ...messages.slice(start)]
    })
  })

/**
 * Model — the seam between a session and a language model.
 *
 * A request (system prompt, messages, tool schemas, options) streams typed parts: text and thinking
 * deltas, complete tool calls, usage and the finish reason. Providers alone know a vendor's wire
 * format; `"provider:model"` strings resolve through the `Providers` registry, which later layers
 * fill. This module refuses to retry or translate: that is each provider's job.
 */
import { Context, Effect, type JsonSchema, Layer, Schema, Stream } from "effect"
import type { History } from "./History.ts"
import { assistant, type AssistantMessage, type AssistantPart, textPart, thinkingPart, toolCallPart } from "./Message.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** A tool as the model sees it. */
export interface ToolSpec {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema.JsonSchema
}

/** Settings of one request; a provider ignores those its vendor lacks. */
export interface Options {
  /** Most tokens the reply may have. */
  readonly maxTokens?: number | undefined
  readonly temperature?: number | undefined
  readonly topP?: number | undefined
  /** Texts that end the reply when the model writes them. */
  readonly stopSequences?: ReadonlyArray<string> | undefined
}

/** Tokens counted by the provider. */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
}

/** @since 0.1.0 @category models */
export interface Request {
  readonly system: string | undefined
  /** The whole conversation, an immutable view the session does not copy per request. */
  readonly messages: History
  readonly tools: ReadonlyArray<ToolSpec>
  readonly options?: Options | undefined
}

/** @since 0.1.0 @category models */
export type FinishReason = "stop" | "tool-calls" | "length" | "content-filter" | "other"

/**
 * What a model streams. A tool call arrives whole, once its arguments are complete. `Usage` parts
 * are increments: a reply's usage is the sum of its `Usage` parts (a provider reporting input
 * tokens first and output tokens at the end sends two).
 */
export type Part =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ThinkingDelta"; readonly text: string }
  | { readonly _tag: "ToolCall"; readonly id: string; readonly name: string; readonly input: unknown }
  | { readonly _tag: "Usage"; readonly inputTokens: number; readonly outputTokens: number }
  | { readonly _tag: "Finish"; readonly reason: FinishReason }

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category errors */
export class UnknownProvider extends Schema.TaggedError<UnknownProvider>()("UnknownProvider", {
  model: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message() {
    const known = this.known.length === 0 ? "none are registered" : `known providers: ${this.known.join(", ")}`
    return `No provider for model "${this.model}" (expected "provider:model"; ${known})`
  }
}

/** The provider answered, but not with something usable (bad status, malformed stream). */
export class ProviderFailed extends Schema.TaggedError<ProviderFailed>()("ProviderFailed", {
  description: Schema.String,
  retryable: Schema.Boolean,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return this.description
  }
}

/** @since 0.1.0 @category errors */
export class ModelError extends Schema.TaggedError<ModelError>()("ModelError", {
  model: Schema.String,
  reason: Schema.Union([UnknownProvider, ProviderFailed])
}) {
  override get message() {
    return this.reason.message
  }
}

// ---------------------------------------------------------------------------------------------
// Services
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface Service {
  /** The model's name, `provider:model` (for events and errors). */
  readonly name: string
  readonly stream: (request: Request) => Stream.Stream<Part, ModelError>
}

/**
 * The model a session talks to. When provided around a program (a test's TestModel), it wins
 * over the agent's `"provider:model"` string.
 *
 * @since 0.1.0
 * @category services
 */
export class Model extends Context.Service<Model, Service>()("@condukt/core/Model") {}

/** Makes a model for the part after `provider:`. */
export type Provider = (model: string) => Effect.Effect<Service, ModelError>

/**
 * Resolves `"provider:model"` strings. Empty by default; provider layers register themselves.
 *
 * @since 0.1.0
 * @category services
 */
export const Providers = Context.Reference<ReadonlyMap<string, Provider>>("@condukt/core/Model/Providers", {
  defaultValue: () => new Map()
})

/**
 * Adds providers to the registry, keyed by prefix (`{ anthropic: … }` serves `"anthropic:…"`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerProviders = (providers: Readonly<Record<string, Provider>>): Layer.Layer<never> =>
  Layer.effect(Providers, Effect.map(Providers, (existing) => new Map([...existing, ...Object.entries(providers)])))

/**
 * The model for a `"provider:model"` string.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolve = Effect.fn("Model.resolve")(function*(model: string) {
  const providers = yield* Providers
  const colon = model.indexOf(":")
  const provider = colon > 0 ? providers.get(model.slice(0, colon)) : undefined
  if (provider === undefined) {
    return yield* new ModelError({ model, reason: new UnknownProvider({ model, known: [...providers.keys()].sort() }) })
  }
  return yield* provider(model.slice(colon + 1))
})

// ---------------------------------------------------------------------------------------------
// Combinators
// ---------------------------------------------------------------------------------------------

/**
 * Folds streamed parts into the assistant message they make: consecutive deltas of one kind join
 * into one part, tool calls keep their place.
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
      if (last?._tag === "Thinking") out[out.length - 1] = thinkingPart(last.text + part.text)
      else out.push(thinkingPart(part.text))
    } else if (part._tag === "ToolCall") {
      out.push(toolCallPart(part))
    }
  }
  // An array grown by push keeps spare capacity; the message lives as long as the session, so it
  // keeps an exact-size copy.
  return assistant(out.slice())
}

/**
 * The usage of a reply: the sum of its `Usage` parts.
 *
 * @since 0.1.0
 * @category combinators
 */
export const usageOf = (parts: ReadonlyArray<Part>): Usage => {
  let inputTokens = 0
  let outputTokens = 0
  for (const part of parts) {
    if (part._tag === "Usage") {
      inputTokens += part.inputTokens
      outputTokens += part.outputTokens
    }
  }
  return { inputTokens, outputTokens }
}

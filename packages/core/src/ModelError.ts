/**
 * ModelError — why a model request failed: the reasons a provider's answer maps to (each with the
 * HTTP status and the provider's own message where there is one, and whether a retry may help),
 * gathered under one `ModelError`. This module is their one spelling (`Model` does not re-export
 * them), and the retry wrapper (`ModelRetry`) reads `isRetryable` and `retryAfter`, never the text.
 */
import { Duration, Schema } from "effect"


/**
 * No registered provider serves the model string's prefix; `known` are the registered prefixes.
 * With none, the program provides no provider layer at all, and the message says so. A `model` of
 * `""` is no model at all (none was given), and the message asks for one.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownProvider extends Schema.TaggedError<UnknownProvider>()("UnknownProvider", {
  model: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message() {
    if (this.model === "") {
      return this.known.length === 0
        ? `No model given: name one as "provider:model" (no provider is registered either: provide Condukt.layer, or a provider's layer such as Anthropic.layer)`
        : `No model given: name one as "provider:model" (registered providers: ${this.known.join(", ")})`
    }
    return this.known.length === 0
      ? `No provider for model "${this.model}": no provider is registered; the program lacks its provider layer (provide Condukt.layer, or a provider's layer such as Anthropic.layer)`
      : `No provider for model "${this.model}" (expected "provider:model"; registered providers: ${this.known.join(", ")})`
  }
  /** Never: asking again names the same provider, which no layer registers. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The provider answered, but not with something usable: a server error, a malformed stream, a 200
 * that is no event stream (an HTML page), a reply past one of its bounds (`maxReplyBytes`, `maxToolCalls`).
 */
export class ProviderFailed extends Schema.TaggedError<ProviderFailed>()("ProviderFailed", {
  description: Schema.String,
  retryable: Schema.Boolean,
  status: Schema.optional(Schema.Int),
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return this.status === undefined ? this.description : `HTTP ${this.status}: ${this.description}`
  }
  get isRetryable(): boolean {
    return this.retryable
  }
}

// The reasons a provider's answer maps to. Each keeps the HTTP status when there was one and the
// provider's own message (`description`); `isRetryable` is what the retry policy reads.
const wire = {
  provider: Schema.String,
  status: Schema.optional(Schema.Int),
  description: Schema.String
}

const said = (reason: { readonly provider: string; readonly status?: number | undefined; readonly description: string }, what: string) =>
  `${reason.provider}: ${what}${reason.status === undefined ? "" : ` (HTTP ${reason.status})`}: ${reason.description}`

const after = (retryAfter: Duration.Duration | undefined) =>
  retryAfter === undefined ? "" : `; retry after ${Duration.format(retryAfter)}`

/** @since 0.1.0 @category errors */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  ...wire,
  retryAfter: Schema.optional(Schema.Duration)
}) {
  override get message() {
    return said(this, "rate limited") + after(this.retryAfter)
  }
  get isRetryable(): boolean {
    return true
  }
}

/** @since 0.1.0 @category errors */
export class Overloaded extends Schema.TaggedError<Overloaded>()("Overloaded", {
  ...wire,
  retryAfter: Schema.optional(Schema.Duration)
}) {
  override get message() {
    return said(this, "overloaded") + after(this.retryAfter)
  }
  get isRetryable(): boolean {
    return true
  }
}

/** @since 0.1.0 @category errors */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", wire) {
  override get message() {
    return said(this, "the API key was refused")
  }
  get isRetryable(): boolean {
    return false
  }
}

/** @since 0.1.0 @category errors */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", wire) {
  override get message() {
    return said(this, "the request was refused")
  }
  get isRetryable(): boolean {
    return false
  }
}

/** The conversation no longer fits the model's context window. */
export class ContextOverflow extends Schema.TaggedError<ContextOverflow>()("ContextOverflow", wire) {
  override get message() {
    return said(this, "the conversation is longer than the model's context window")
  }
  get isRetryable(): boolean {
    return false
  }
}

/** The connection failed or was reset before the reply was complete. */
export class Network extends Schema.TaggedError<Network>()("Network", {
  provider: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `${this.provider}: network error: ${this.description}`
  }
  get isRetryable(): boolean {
    return true
  }
}

/** The provider said nothing for longer than the idle timeout, or the request passed the stream timeout (or HTTP 408). */
export class Timeout extends Schema.TaggedError<Timeout>()("Timeout", {
  provider: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `${this.provider}: timed out: ${this.description}`
  }
  get isRetryable(): boolean {
    return true
  }
}

/** No API key: neither the option nor the environment variable `variable` gave one. */
export class MissingApiKey extends Schema.TaggedError<MissingApiKey>()("MissingApiKey", {
  provider: Schema.String,
  variable: Schema.String
}) {
  override get message() {
    return `${this.provider}: no API key: set ${this.variable} or pass apiKey to the provider's layer`
  }
  get isRetryable(): boolean {
    return false
  }
}

/** @since 0.1.0 @category models */
export const ModelErrorReason = Schema.Union([
  UnknownProvider,
  ProviderFailed,
  RateLimited,
  Overloaded,
  Unauthorized,
  InvalidRequest,
  ContextOverflow,
  Network,
  Timeout,
  MissingApiKey
])
export type ModelErrorReason = typeof ModelErrorReason.Type

/** @since 0.1.0 @category errors */
export class ModelError extends Schema.TaggedError<ModelError>()("ModelError", {
  model: Schema.String,
  reason: ModelErrorReason
}) {
  override get message() {
    return this.reason.message
  }
  /** Whether trying the same request again may succeed (what retry policies read, never the text). */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
  /** How long the provider asked us to wait, when it said. */
  get retryAfter(): Duration.Duration | undefined {
    return this.reason._tag === "RateLimited" || this.reason._tag === "Overloaded" ? this.reason.retryAfter : undefined
  }
}

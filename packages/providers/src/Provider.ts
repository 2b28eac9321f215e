/**
 * Provider — what every model provider's layer takes: the API key, the base URL, the retry
 * policy, the bounds on one reply (idle and total time, bytes, tool calls) and extra headers.
 *
 * Each vendor module (`providers/Anthropic.ts`, `providers/OpenAi.ts`) reads these, falls back to
 * `<PROVIDER>_API_KEY` and `<PROVIDER>_BASE_URL` from the environment, and alone knows its wire
 * format. This module holds no vendor knowledge and runs nothing.
 */
import { Duration, type Redacted, Schedule } from "effect"
import * as ModelRetry from "@condukt/core/ModelRetry"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * When and how often a failed request is tried again: the settings of Condukt's policy
 * (`ModelRetry.policy`). Only retryable failures are (rate limits, overload, 408/425/5xx, resets,
 * idle timeouts), and a stream only before it produced anything.
 *
 * @since 0.1.0
 * @category models
 */
export type RetryOptions = ModelRetry.Options

/**
 * Options shared by every provider's layer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Wins over `<PROVIDER>_API_KEY`. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** Wins over `<PROVIDER>_BASE_URL` and the vendor's default (a gateway, a proxy, a local server). */
  readonly baseUrl?: string | undefined
  /**
   * `false` tries once; `true` or absent is Condukt's policy (`ModelRetry.policy()`); an object
   * overrides some of its settings; a `Schedule` of the program's own replaces it (its input is
   * each failure, a `ModelError`; only a retryable one, before the reply's first part, reaches it).
   */
  readonly retry?: boolean | RetryOptions | ModelRetry.RetrySchedule | undefined
  /** A stream silent for longer than this fails with `Timeout` (default 120 s). */
  readonly idleTimeout?: Duration.Input | undefined
  /**
   * The longest one model request may take, retries included, however busily the server streams
   * (default 10 minutes); past it the request fails with `Timeout`.
   */
  readonly streamTimeout?: Duration.Input | undefined
  /**
   * The most bytes one reply's body may hold as received, SSE framing included (default 64 MiB);
   * past it the reply fails with `ProviderFailed`, not retried.
   */
  readonly maxReplyBytes?: number | undefined
  /** The most tool calls one reply may make (default 1,000); past it the reply fails with `ProviderFailed`, not retried. */
  readonly maxToolCalls?: number | undefined
  /**
   * Sent with every request (never logged). The values of those whose name looks like a
   * credential (`authorization`, `*key*`, `*token*`, `*secret*`, `cookie`…) are secrets: redacted
   * from every error and event as the key is.
   */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** How long a stream may stay silent before it fails with `Timeout`. */
export const DEFAULT_IDLE_TIMEOUT = Duration.seconds(120)

/** How long one model request may take in all: a server streaming forever is cut here. */
export const DEFAULT_STREAM_TIMEOUT = Duration.minutes(10)

/**
 * The most bytes one reply may hold: above the largest reply an output limit allows (128k tokens
 * streamed one event each is 16 to 40 MB of SSE, by vendor), far below what hurts a process.
 */
export const DEFAULT_MAX_REPLY_BYTES = 64 * 1024 * 1024

/** The most tool calls one reply may make. */
export const DEFAULT_MAX_TOOL_CALLS = 1_000

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * The retry schedule an `Options.retry` value means.
 *
 * @since 0.2.0
 * @category constructors
 */
export const retrySchedule = (retry: Options["retry"]): ModelRetry.RetrySchedule => {
  if (retry === false) return Schedule.recurs(0)
  if (retry === undefined || retry === true) return ModelRetry.policy()
  return Schedule.isSchedule(retry) ? retry : ModelRetry.policy(retry)
}

/**
 * Provider — what every model provider's layer takes: the API key, the base URL, the retry
 * policy, the bounds on one reply (idle and total time, bytes, tool calls) and extra headers.
 *
 * Each vendor module (`providers/Anthropic.ts`, `providers/OpenAi.ts`) reads these, falls back to
 * `<PROVIDER>_API_KEY` and `<PROVIDER>_BASE_URL` from the environment, and alone knows its wire
 * format. This module holds no vendor knowledge and runs nothing.
 */
import { Duration, type Redacted } from "effect"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * When and how often a failed request is tried again. Only retryable failures are (rate limits,
 * overload, 408/425/5xx, resets, idle timeouts), and a stream only before it produced anything.
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryOptions {
  /** Attempts in all, the first included (default 3). */
  readonly maxAttempts?: number | undefined
  /** The first retry's delay; each further one doubles it (default 300 ms). */
  readonly baseDelay?: Duration.Input | undefined
  /** The longest computed delay (default 5 s); up to half of it again is added as jitter. */
  readonly maxDelay?: Duration.Input | undefined
  /**
   * The longest `retry-after` the provider may ask for and still be waited for (default 60 s);
   * a longer one fails at once, with `retryAfter` on the error.
   */
  readonly maxRetryAfter?: Duration.Input | undefined
}

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
  /** `false` tries once; `true` or absent uses the defaults; an object overrides some of them. */
  readonly retry?: boolean | RetryOptions | undefined
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

/** The retry policy with every default filled in. */
export interface RetryPolicy {
  readonly maxAttempts: number
  readonly baseDelay: Duration.Duration
  readonly maxDelay: Duration.Duration
  readonly maxRetryAfter: Duration.Duration
}

/** Condukt's defaults: 3 attempts, 300 ms base, 5 s cap. */
export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 3,
  baseDelay: Duration.millis(300),
  maxDelay: Duration.seconds(5),
  maxRetryAfter: Duration.seconds(60)
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
 * The retry policy an `Options.retry` value means.
 *
 * @since 0.1.0
 * @category constructors
 */
export const retryPolicy = (retry: Options["retry"]): RetryPolicy => {
  if (retry === false) return { ...DEFAULT_RETRY, maxAttempts: 1 }
  if (retry === undefined || retry === true) return DEFAULT_RETRY
  return {
    maxAttempts: Math.max(1, Math.floor(retry.maxAttempts ?? DEFAULT_RETRY.maxAttempts)),
    baseDelay: retry.baseDelay === undefined ? DEFAULT_RETRY.baseDelay : Duration.fromInputUnsafe(retry.baseDelay),
    maxDelay: retry.maxDelay === undefined ? DEFAULT_RETRY.maxDelay : Duration.fromInputUnsafe(retry.maxDelay),
    maxRetryAfter: retry.maxRetryAfter === undefined
      ? DEFAULT_RETRY.maxRetryAfter
      : Duration.fromInputUnsafe(retry.maxRetryAfter)
  }
}

/**
 * The delay before attempt `attempt + 1` (after `attempt` failed): the provider's `retry-after`
 * when it gave one, otherwise min(base · 2^(attempt−1), max) plus `jitter` (0 to 1) times half of that.
 *
 * @since 0.1.0
 * @category combinators
 */
export const retryDelay = (
  policy: RetryPolicy,
  attempt: number,
  retryAfter: Duration.Duration | undefined,
  jitter: number
): Duration.Duration => {
  if (retryAfter !== undefined) return retryAfter
  const exponential = Math.min(Duration.toMillis(policy.baseDelay) * 2 ** (attempt - 1), Duration.toMillis(policy.maxDelay))
  return Duration.millis(Math.round(exponential + jitter * exponential / 2))
}

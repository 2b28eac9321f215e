/**
 * Provider — what every model provider's layer takes: the API key, the base URL, the retry
 * policy, the stream idle timeout and extra headers.
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
  /** Sent with every request (never logged). */
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

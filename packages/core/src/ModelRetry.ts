/**
 * ModelRetry — the one retry policy of every model: a request that failed before its reply began
 * is tried again on a `Schedule`, and each retry is told first, as a `Retry` part (a session's
 * `ModelRetry` event) and as an event on the current span.
 *
 * What may be retried is fixed here, whatever the schedule: only a failure whose `isRetryable` says
 * so, and only before the attempt streamed its first part (what a session has seen cannot be taken
 * back). When and how often is the schedule's: its input is each failure (a `ModelError`, whose
 * `retryAfter` says how long the provider asked to wait), each delay it gives is the wait before
 * the next attempt, and its end is the last attempt. `policy` is Condukt's own, the one every
 * provider runs unless its layer is given another. This module refuses to bound a request's time
 * (a provider's `streamTimeout` bounds the whole, retries included) and to read an error's text.
 */
import { Cause, Clock, Duration, Effect, Function, Pull, Random, Schedule, Stream } from "effect"
import type { Service } from "./Model.ts"
import type { ModelError } from "./ModelError.ts"
import type { Part } from "./ModelReply.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * The settings of `policy`: attempts, backoff and the longest `retry-after` waited for.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
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
 * A retry schedule of a model: fed each failure, it gives the delay before the next attempt, or
 * ends (no more attempts).
 *
 * @since 0.2.0
 * @category models
 */
export type RetrySchedule = Schedule.Schedule<unknown, ModelError>

/** `policy`'s defaults: 3 attempts, 300 ms doubling up to 5 s, a `retry-after` waited for up to 60 s. */
export const defaults = {
  maxAttempts: 3,
  baseDelay: Duration.millis(300),
  maxDelay: Duration.seconds(5),
  maxRetryAfter: Duration.seconds(60)
} as const

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

const millisOf = (input: Duration.Input | undefined, fallback: Duration.Duration): number =>
  Duration.toMillis(input === undefined ? fallback : Duration.fromInputUnsafe(input))

/**
 * Condukt's retry policy: `maxAttempts` attempts in all; before attempt n + 1, the provider's
 * `retry-after` when it gave one (past `maxRetryAfter` no retry at all), else
 * min(baseDelay · 2^(n−1), maxDelay) plus a random 0 to 1 times half of that (`Random`, so a test can fix it).
 *
 * @since 0.2.0
 * @category constructors
 */
export const policy = (options?: Options): Schedule.Schedule<Duration.Duration, ModelError> => {
  const maxAttempts = Math.max(1, Math.floor(options?.maxAttempts ?? defaults.maxAttempts))
  const base = millisOf(options?.baseDelay, defaults.baseDelay)
  const max = millisOf(options?.maxDelay, defaults.maxDelay)
  const maxRetryAfter = millisOf(options?.maxRetryAfter, defaults.maxRetryAfter)
  // `attempt` counts the failures fed so far: 1 after the first attempt failed.
  return Schedule.fromStepWithMetadata(Effect.succeed((step: Schedule.InputMetadata<ModelError>) => {
    if (step.attempt >= maxAttempts) return Cause.done(Duration.zero)
    const wait = step.input.retryAfter
    if (wait !== undefined) {
      return Duration.toMillis(wait) > maxRetryAfter ? Cause.done(Duration.zero) : Effect.succeed([wait, wait] as [Duration.Duration, Duration.Duration])
    }
    return Effect.map(Random.next, (jitter): [Duration.Duration, Duration.Duration] => {
      const exponential = Math.min(base * 2 ** (step.attempt - 1), max)
      const delay = Duration.millis(Math.round(exponential + jitter * exponential / 2))
      return [delay, delay]
    })
  }))
}

// ---------------------------------------------------------------------------------------------
// Combinators
// ---------------------------------------------------------------------------------------------

type Retry = Extract<Part, { _tag: "Retry" }>

/** A retry as an event of the span the request runs in, if there is one. */
const spanEvent = (retry: Retry): Effect.Effect<void> =>
  Effect.flatMap(Effect.zip(Effect.option(Effect.currentSpan), Clock.currentTimeNanos), ([span, now]) =>
    Effect.sync(() => {
      if (span._tag === "Some") {
        span.value.event("ModelRetry", now, { attempt: retry.attempt, reason: retry.reason, delay: Duration.format(retry.delay) })
      }
    }))

/**
 * `parts` (one request to a model: each run of it is an attempt), retried on `schedule`: a
 * retryable failure before the attempt's first part is tried again after the schedule's delay,
 * announced by a `Retry` part and a span event; when the schedule ends, the last failure is the
 * stream's. What `retrying` does to a model, for a provider that wraps its own request's stream
 * (its stream timeout then bounds the whole, retries included).
 *
 * @since 0.2.0
 * @category combinators
 */
export const retry: {
  (schedule: RetrySchedule): (parts: Stream.Stream<Part, ModelError>) => Stream.Stream<Part, ModelError>
  (parts: Stream.Stream<Part, ModelError>, schedule: RetrySchedule): Stream.Stream<Part, ModelError>
} = Function.dual(2, (parts: Stream.Stream<Part, ModelError>, schedule: RetrySchedule): Stream.Stream<Part, ModelError> =>
  // `Stream.unwrap` of a sync, not `Stream.suspend`: the latter notes every stream it makes in a
  // WeakMap, which a request per turn pays for in the collector (bench/turns.ts).
  Stream.unwrap(Effect.sync(() => {
    // The schedule's state lives as long as this request's attempts; a request that never fails
    // never builds it.
    let step: ((now: number, input: ModelError) => Pull.Pull<[unknown, Duration.Duration], never, unknown>) | undefined
    const delayAfter = (error: ModelError) =>
      Effect.flatMap(step === undefined ? Effect.map(Schedule.toStep(schedule), (made) => (step = made)) : Effect.succeed(step), (next) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => next(now, error)))
    const attempt = (n: number): Stream.Stream<Part, ModelError> => {
      let emitted = false
      return parts.pipe(
        Stream.mapArray((chunk) => {
          emitted = true
          return chunk
        }),
        Stream.catch((error) => {
          if (emitted || !error.isRetryable) return Stream.fail(error)
          return Stream.unwrap(delayAfter(error).pipe(
            Effect.map(([, delay]): Stream.Stream<Part, ModelError> => {
              const retry: Retry = { _tag: "Retry", attempt: n + 1, reason: error.message, delay }
              // Said before the wait, to the session (a part) and to the trace (a span event).
              return Stream.concat(Stream.make(retry), Stream.unwrap(Effect.as(Effect.andThen(spanEvent(retry), Effect.sleep(delay)), attempt(n + 1))))
            }),
            Pull.catchDone(() => Effect.succeed(Stream.fail(error)))
          ))
        })
      )
    }
    return attempt(1)
  })))

/**
 * `model`, each request's stream `retry`-ed on `schedule` (`policy()` is Condukt's): how the
 * `effect/ai` path (`EffectAi.fromLanguageModel`) retries, and how a model of a program's own may.
 *
 * @since 0.2.0
 * @category combinators
 */
export const retrying: {
  (schedule: RetrySchedule): (model: Service) => Service
  (model: Service, schedule: RetrySchedule): Service
} = Function.dual(2, (model: Service, schedule: RetrySchedule): Service => ({
  ...model,
  stream: (request) => retry(model.stream(request), schedule)
}))

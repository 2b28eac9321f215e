/**
 * rateLimit — each principal's requests, metered by a token bucket: `requestsPerSecond` on average,
 * `burst` at once; past it a request is refused (429) before it reaches a handler.
 */
import { Clock, Effect } from "effect"
import type * as Auth from "../Auth.ts"
import type * as Limits from "../Limits.ts"
import { TooManyRequests } from "../ServerError.ts"

/** `authenticate`, then one of the principal's tokens taken. */
export const rateLimited = (authenticate: Auth.Authenticate, limits: Limits.Resolved): Auth.Authenticate => {
  const buckets = new Map<string, { tokens: number; at: number }>()
  return (token, request) =>
    Effect.flatMap(authenticate(token, request), (principal) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const bucket = buckets.get(principal) ?? { tokens: limits.burst, at: now }
        const tokens = Math.min(limits.burst, bucket.tokens + ((now - bucket.at) / 1000) * limits.requestsPerSecond)
        if (tokens < 1) {
          buckets.set(principal, { tokens, at: now })
          return Effect.fail(new TooManyRequests({ message: `too many requests (at most ${limits.requestsPerSecond} a second, ${limits.burst} at once): slow down` }))
        }
        buckets.set(principal, { tokens: tokens - 1, at: now })
        return Effect.succeed(principal)
      }))
}

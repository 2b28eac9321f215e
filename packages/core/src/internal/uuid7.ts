/**
 * uuid7 — time-ordered identifiers (RFC 9562 version 7) for sessions and runs, so ids sort by
 * creation, also within one millisecond (Effect's `SecureRandom` keeps a counter there). The time
 * comes from the `Clock` and the randomness from a provided `SecureRandom`, or a Web Crypto one
 * made once when none is: tests can fix both.
 */
import { Context, Effect, Option } from "effect"
import { SecureRandom } from "effect/crypto"

const Fallback = Context.Reference<SecureRandom.SecureRandom["Service"]>("@condukt/core/internal/uuid7/Fallback", {
  defaultValue: () => SecureRandom.make(SecureRandom.randomBytesUnsafe)
})

export const make: Effect.Effect<string> = Effect.flatMap(
  Effect.serviceOption(SecureRandom.SecureRandom),
  (provided) => Option.isSome(provided) ? provided.value.uuidV7() : Effect.flatMap(Fallback, (random) => random.uuidV7())
)

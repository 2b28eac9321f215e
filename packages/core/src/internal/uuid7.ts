/**
 * uuid7 — time-ordered identifiers (RFC 9562 version 7) for sessions and runs, so ids sort by
 * creation, also within one millisecond (Effect's `SecureRandom` keeps a counter there). The time
 * comes from the `Clock` and the randomness from a provided `SecureRandom`, or a Web Crypto one
 * made once when none is: tests can fix both. The fallback draws from a pool filled 4 KiB at a
 * time (as Node's own `randomUUID` does): one system call per 256 ids, not one per id, which is
 * what a program starting 100,000 sessions notices.
 */
import { Context, Effect, Option } from "effect"
import { SecureRandom } from "effect/crypto"

const POOL_BYTES = 4096

/** `size` fresh random bytes, cut from a pool refilled when it runs low. */
const pooled = (): ((size: number) => Uint8Array) => {
  let pool: Uint8Array = new Uint8Array(0)
  let offset = 0
  return (size) => {
    if (size > POOL_BYTES) return SecureRandom.randomBytesUnsafe(size)
    if (offset + size > pool.length) {
      pool = SecureRandom.randomBytesUnsafe(POOL_BYTES)
      offset = 0
    }
    // A copy: the caller owns its bytes, and no two callers ever see the same ones.
    const bytes = pool.slice(offset, offset + size)
    offset += size
    return bytes
  }
}

const Fallback = Context.Reference<SecureRandom.SecureRandom["Service"]>("@condukt/core/internal/uuid7/Fallback", {
  defaultValue: () => SecureRandom.make(pooled())
})

/**
 * The id as one flat string. Effect formats it by concatenating two characters at a time, and V8
 * keeps every piece of such a string alive with it (~500 bytes, where 36 characters take ~60). A
 * conversion to a number reads the characters, which makes V8 flatten the string in place: the
 * pieces are freed (69 bytes an id stay, as for an internalized copy, at a third of the cost of
 * making it a property key). The result is kept (`sink`) so no compiler drops the conversion. A
 * session holds its id as long as it lives, so 100,000 of them notice (bench/sessions.ts).
 */
const sink = { parsed: 0 }
const flat = (id: string): string => {
  sink.parsed = Number(id)
  return id
}

export const make: Effect.Effect<string> = Effect.map(
  Effect.flatMap(
    Effect.serviceOption(SecureRandom.SecureRandom),
    (provided) => Option.isSome(provided) ? provided.value.uuidV7() : Effect.flatMap(Fallback, (random) => random.uuidV7())
  ),
  flat
)

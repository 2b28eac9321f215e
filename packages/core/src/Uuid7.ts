/**
 * Uuid7 — time-ordered identifiers (RFC 9562 version 7) for sessions and runs, so ids sort by
 * creation, also within one millisecond (Effect's `SecureRandom` keeps a counter there). The time
 * comes from the `Clock`, the randomness and the formatting from a provided `SecureRandom` (tests
 * can fix both), or when none is, from this module's own generator: Web Crypto bytes drawn from a
 * pool filled 4 KiB at a time (as Node's own `randomUUID` does: one system call per 400 ids, which
 * a program starting 100,000 sessions notices), one counter for the whole process.
 */
import { Clock, Effect, Option } from "effect"
import { SecureRandom } from "effect/crypto"

const POOL_BYTES = 4096

let pool: Uint8Array = new Uint8Array(0)
let offset = 0

/** `size` fresh random bytes, a view of a pool refilled when it runs low (read at once, never kept). */
const random = (size: number): Uint8Array => {
  if (offset + size > pool.length) {
    pool = SecureRandom.randomBytesUnsafe(POOL_BYTES)
    offset = 0
  }
  const bytes = pool.subarray(offset, offset + size)
  offset += size
  return bytes
}

/** The last timestamp used and the counter within it (RFC 9562 §6.2, method 1: 12 bits in `rand_a`). */
let lastMs = -1
let counter = 0

const HEX = new TextEncoder().encode("0123456789abcdef")
const at = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]
const text = new Uint8Array(36)
const ascii = new TextDecoder()

/**
 * A version 7 id for `now`: within one millisecond the counter goes up (starting from a random
 * value with room to count), past 4,095 the timestamp moves on, and a clock that went back is not
 * followed, so ids never sort before one made earlier. Written into one buffer and decoded once:
 * a flat 36-character string, no pieces to free (~0.5 µs, where Effect's generator and a copy to
 * flatten its pieces took ~4 µs; two ids a session and its run).
 */
const generate = (now: number): string => {
  const bytes = random(10)
  if (now <= lastMs) {
    if (++counter > 0xfff) {
      lastMs++
      counter = bytes[8]! & 0x3ff
    }
  } else {
    lastMs = now
    counter = ((bytes[8]! << 8) | bytes[9]!) & 0x3ff
  }
  const ms = lastMs
  const fields = [
    Math.floor(ms / 2 ** 40) & 0xff,
    Math.floor(ms / 2 ** 32) & 0xff,
    (ms >>> 24) & 0xff,
    (ms >>> 16) & 0xff,
    (ms >>> 8) & 0xff,
    ms & 0xff,
    0x70 | (counter >>> 8),
    counter & 0xff,
    0x80 | (bytes[0]! & 0x3f),
    bytes[1]!,
    bytes[2]!,
    bytes[3]!,
    bytes[4]!,
    bytes[5]!,
    bytes[6]!,
    bytes[7]!
  ]
  for (let i = 0; i < 16; i++) {
    text[at[i]!] = HEX[fields[i]! >>> 4]!
    text[at[i]! + 1] = HEX[fields[i]! & 0xf]!
  }
  text[8] = text[13] = text[18] = text[23] = 0x2d
  return ascii.decode(text)
}

/**
 * A provided generator's id as one flat string. Effect formats it by concatenating two characters
 * at a time, and V8 keeps every piece of such a string alive with it (~500 bytes, where 36
 * characters take ~60). A conversion to a number reads the characters, which makes V8 flatten the
 * string in place and free the pieces; the result is kept (`sink`) so no compiler drops it. A
 * session holds its id as long as it lives, so 100,000 of them notice (bench/sessions.ts).
 */
const sink = { parsed: 0 }
const flat = (id: string): string => {
  sink.parsed = Number(id)
  return id
}

export const make: Effect.Effect<string> = Effect.flatMap(
  Effect.serviceOption(SecureRandom.SecureRandom),
  (provided) => Option.isSome(provided) ? Effect.map(provided.value.uuidV7(), flat) : Effect.map(Clock.currentTimeMillis, generate)
)

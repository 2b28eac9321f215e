/**
 * uuid7 — time-ordered identifiers (RFC 9562 version 7) for sessions and runs, so ids sort by
 * creation. Time and randomness come from Effect's Clock and Random: tests can fix both.
 */
import { Clock, Effect, Random } from "effect"

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0")

export const make: Effect.Effect<string> = Effect.gen(function*() {
  const ms = yield* Clock.currentTimeMillis
  const random: Array<number> = []
  for (let i = 0; i < 5; i++) random.push(yield* Random.nextIntBetween(0, 0xffff, { halfOpen: false }))
  const time = hex(ms, 12).slice(-12)
  const version = hex(0x7000 | (random[0]! & 0x0fff), 4)
  const variant = hex(0x8000 | (random[1]! & 0x3fff), 4)
  return `${time.slice(0, 8)}-${time.slice(8)}-${version}-${variant}-${hex(random[2]!, 4)}${hex(random[3]!, 4)}${hex(random[4]!, 4)}`
})

/**
 * sse — Server-Sent Events on the wire: the frames, the headers, the heartbeat that keeps proxies
 * from closing a quiet stream, and `Last-Event-ID` read strictly (a number of at most 15 digits).
 */
import { Effect, Schedule, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import * as Limits from "../Limits.ts"
import type * as ServerStore from "../ServerStore.ts"
import * as eventJson from "./eventJson.ts"

const encoder = new TextEncoder()

/** @since 0.1.0 */
export const HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  "connection": "keep-alive",
  "x-accel-buffering": "no"
} as const

/**
 * One entry as a frame: its number as `id`, its tag as `event`, as `data` the event's JSON with
 * `at` added, when the server wrote it (epoch ms).
 */
export const frame = (entry: ServerStore.Entry): string =>
  `id: ${entry.id}\nevent: ${entry.event._tag}\ndata: ${JSON.stringify({ ...eventJson.toJson(entry.event), at: entry.at })}\n\n`

/** A comment line: ignored by readers, it keeps the connection busy. */
const HEARTBEAT = encoder.encode(": keep-alive\n\n")

/**
 * `frames` as an SSE response: each text as it comes, a heartbeat while none does, ending when
 * `frames` ends. `retry` tells an EventSource how soon to reconnect.
 */
export const response = <E>(frames: Stream.Stream<string, E>, headers: Record<string, string> = {}): HttpServerResponse.HttpServerResponse => {
  const body = Stream.merge(
    Stream.concat(Stream.make("retry: 1000\n\n"), frames).pipe(Stream.map((text) => encoder.encode(text))),
    Stream.fromSchedule(Schedule.spaced(Limits.HEARTBEAT)).pipe(Stream.map(() => HEARTBEAT)),
    { haltStrategy: "left" }
  )
  return HttpServerResponse.stream(Stream.orDie(body), { headers: { ...HEADERS, ...headers } })
}

/**
 * Where a reader resumes: `Last-Event-ID` (or `?after=`) as an event number; absent is 0 (from the
 * start of what is kept). Anything but digits (`-1`, `1e309`, text, more than 15 digits) is refused.
 */
export const resumeAfter = (value: string | undefined): Effect.Effect<number, string> => {
  if (value === undefined || value === "") return Effect.succeed(0)
  if (!/^[0-9]{1,15}$/.test(value)) return Effect.fail(`Last-Event-ID must be the number of an event this server sent (digits only), not ${JSON.stringify(value.slice(0, 32))}`)
  return Effect.succeed(Number(value))
}

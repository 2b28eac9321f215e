/**
 * sse — a streaming Server-Sent Events parser for model replies, fed text as it arrives.
 *
 * It follows the WHATWG event-stream rules Effect's `Sse.makeParser` follows (lines end in CR, LF
 * or CRLF, split anywhere across chunks; a leading BOM is dropped; `data` lines join with LF; `event`
 * names the event, `message` by default; `id` persists until changed and is ignored if it holds
 * NUL; a blank line dispatches an event that has data; comments and unknown fields are skipped),
 * with the same `maxEventSize` bound, but does less work per line: line ends are found with
 * `indexOf`, fields are recognised in place without slicing the line, and a single `data` line is
 * the event's data without concatenation. Model replies are tens of thousands of small events;
 * ADR 0017 ("SSE decoding") has the measurements.
 *
 * It refuses `retry` fields (a model stream is not reconnected) and never buffers more than one
 * unfinished event.
 */
import type { Sse } from "effect/encoding"

/** Effect's default: one event (its pending line plus its data) may hold up to 10 MiB. */
export const DEFAULT_MAX_EVENT_SIZE = 10 * 1024 * 1024

export interface Parser {
  /** Parses a chunk; `false` when the event being read grew past the bound (the parser is reset). */
  readonly feed: (chunk: string) => boolean
}

const LF = 10
const CR = 13
const COLON = 58
const SPACE = 32

/** A parser calling `onEvent` for each complete event, in order. */
export const makeParser = (onEvent: (event: Sse.Event) => void, maxEventSize = DEFAULT_MAX_EVENT_SIZE): Parser => {
  let first = true
  // The unterminated line's text so far, from earlier chunks.
  let pending = ""
  // A CR ended the last line: an LF starting the next chunk belongs to it.
  let skipLf = false
  let lastEventId: string | undefined
  let eventName: string | undefined
  let data: string | undefined

  const reset = () => {
    pending = ""
    skipLf = false
    lastEventId = undefined
    eventName = undefined
    data = undefined
  }

  /** The value of the field `name` on the line `text[start, end)`, or `undefined` if it is another field. */
  const value = (text: string, start: number, end: number, name: string): string | undefined => {
    const after = start + name.length
    if (after > end || !text.startsWith(name, start)) return undefined
    if (after === end) return ""
    if (text.charCodeAt(after) !== COLON) return undefined
    const from = after + 1 < end && text.charCodeAt(after + 1) === SPACE ? after + 2 : after + 1
    return text.slice(from, end)
  }

  const line = (text: string, start: number, end: number) => {
    if (start === end) {
      if (data !== undefined) {
        const event: Sse.Event = { _tag: "Event", event: eventName || "message", id: lastEventId, data }
        eventName = undefined
        data = undefined
        onEvent(event)
      } else {
        eventName = undefined
      }
      return
    }
    switch (text.charCodeAt(start)) {
      case 100: { // d
        const v = value(text, start, end, "data")
        if (v !== undefined) data = data === undefined ? v : `${data}\n${v}`
        return
      }
      case 101: { // e
        const v = value(text, start, end, "event")
        if (v !== undefined) eventName = v
        return
      }
      case 105: { // i
        const v = value(text, start, end, "id")
        if (v !== undefined && !v.includes("\u0000")) lastEventId = v
        return
      }
      default:
        return
    }
  }

  const feed = (chunk: string): boolean => {
    if (chunk.length === 0) return true
    let position = 0
    if (first) {
      first = false
      if (chunk.charCodeAt(0) === 0xFEFF) position = 1
    }
    const length = chunk.length
    let nextLf = -2
    let nextCr = -2
    while (position < length) {
      if (skipLf) {
        skipLf = false
        if (chunk.charCodeAt(position) === LF) {
          position++
          continue
        }
      }
      if (nextLf !== -1 && nextLf < position) nextLf = chunk.indexOf("\n", position)
      if (nextCr !== -1 && nextCr < position) nextCr = chunk.indexOf("\r", position)
      const end = nextCr === -1 ? nextLf : nextLf === -1 ? nextCr : Math.min(nextLf, nextCr)
      if (end === -1) {
        pending = pending === "" ? chunk.slice(position) : pending + chunk.slice(position)
        break
      }
      skipLf = chunk.charCodeAt(end) === CR
      if (pending === "") {
        line(chunk, position, end)
      } else {
        const whole = pending + chunk.slice(position, end)
        pending = ""
        line(whole, 0, whole.length)
      }
      position = end + 1
    }
    if (pending.length + (data?.length ?? 0) > maxEventSize) {
      reset()
      return false
    }
    return true
  }

  return { feed }
}

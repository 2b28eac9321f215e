/**
 * anthropicTextDelta — the text of an Anthropic `content_block_delta` event that is a plain text
 * delta, read without parsing the whole event. A streamed answer is tens of thousands of such
 * events, each `{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"…"}}`
 * exactly as the API writes it; `JSON.parse` of the whole object (two objects, four strings) was
 * most of a stream's decoding time (bench/providers-sse). Here the event's fixed frame is matched
 * and only its string literal is parsed.
 *
 * Nothing is trusted that the full parse would refuse: the literal is parsed by `JSON.parse`, and
 * a quote, backslash or byte that makes it anything but one JSON string fails that parse; then,
 * as for every other shape (another key order, whitespace, more fields), the answer is
 * `undefined` and the caller parses the event whole, with its bounds (`JsonLimits`). The fast
 * path's value is two levels deep, its keys fixed, its one string shorter than the event, which
 * the SSE parser bounds (`maxEventSize`, 10 MiB) below `JsonLimits.MAX_STRING_CHARS`.
 */

const PREFIX = "{\"type\":\"content_block_delta\",\"index\":"
const MIDDLE = ",\"delta\":{\"type\":\"text_delta\",\"text\":"
const SUFFIX = "}}"
const ZERO = 48
const NINE = 57
/** An index of more digits is left to the full parse (a block index is small). */
const MAX_INDEX_DIGITS = 6

/** The delta's text when `data` is exactly a text delta's frame around one JSON string; else `undefined`. */
export const textOf = (data: string, maxChars: number): string | undefined => {
  if (data.length > maxChars || !data.startsWith(PREFIX) || !data.endsWith(SUFFIX)) return undefined
  let at = PREFIX.length
  const first = data.charCodeAt(at)
  // JSON numbers have no leading zero: `0` alone, or a digit 1–9 and more digits.
  if (first === ZERO) {
    at++
  } else {
    while (at - PREFIX.length < MAX_INDEX_DIGITS && data.charCodeAt(at) >= ZERO && data.charCodeAt(at) <= NINE) at++
  }
  if (at === PREFIX.length || !data.startsWith(MIDDLE, at)) return undefined
  const from = at + MIDDLE.length
  const to = data.length - SUFFIX.length
  if (to - from < 2 || data.charCodeAt(from) !== 34 || data.charCodeAt(to - 1) !== 34) return undefined
  let text: unknown
  try {
    text = JSON.parse(data.slice(from, to))
  } catch {
    return undefined
  }
  return typeof text === "string" ? text : undefined
}

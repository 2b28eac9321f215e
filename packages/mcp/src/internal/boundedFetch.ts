/**
 * boundedFetch — the `fetch` under an HTTP server's transport: what the server answers is bounded
 * before the SDK decodes it, and every credential sent is recorded.
 *
 * An error status (4xx, 5xx): its body is cut at `ERROR_BODY_BYTES` (the SDK reads it whole into
 * its error's text). A JSON answer is read up to `maxMessageBytes`; past that it is replaced by a
 * `tooLarge` error response for each request the POST carried, so only that call fails. An event
 * stream passes through with each event bounded the same way: a longer event is ended where it
 * is, skipped to its end, and followed by a `tooLarge` response for the request it answered (its
 * id from its edges, else the POST's only request); a skipped request or notification is dropped. The `Authorization` of every request (a
 * bearer token, an access token the SDK refreshed, HTTP Basic client credentials) joins the
 * server's credentials before it is sent, so an error echoing it is redacted.
 * Plain promise code: it is the `FetchLike` the SDK calls.
 */
import type { FetchLike } from "@modelcontextprotocol/client"
import type { Credentials } from "./credentials.ts"
import { EDGE_BYTES, Skipped, tooLarge } from "./oversized.ts"

/** How much of an error status's body is read (bytes). */
export const ERROR_BODY_BYTES = 8192

const NEWLINE = 0x0a
const CARRIAGE_RETURN = 0x0d

/** The ids of the requests a POST body carries (read only when an answer is too large). */
const requestIds = (init: RequestInit | undefined): ReadonlyArray<string | number> => {
  if (typeof init?.body !== "string") return []
  let parsed: unknown
  try {
    parsed = JSON.parse(init.body)
  } catch {
    return []
  }
  const messages: ReadonlyArray<unknown> = Array.isArray(parsed) ? parsed : [parsed]
  return messages.flatMap((m) =>
    typeof m === "object" && m !== null && "method" in m && "id" in m && (typeof m.id === "string" || typeof m.id === "number") ? [m.id] : []
  )
}

/** Records the credential an `Authorization` header carries. */
const recordAuthorization = (credentials: Credentials, init: RequestInit | undefined): void => {
  if (init?.headers === undefined) return
  const value = new Headers(init.headers).get("authorization")
  if (value === null) return
  const space = value.indexOf(" ")
  const scheme = space === -1 ? "" : value.slice(0, space).toLowerCase()
  const token = space === -1 ? value : value.slice(space + 1).trim()
  credentials.add(scheme === "basic" ? "basic_auth" : "access_token", token)
}

/** The first `max` bytes of a body, and whether there was more (the rest is not read). */
const readUpTo = (body: ReadableStream<Uint8Array>, max: number): Promise<{ readonly bytes: Uint8Array<ArrayBuffer>; readonly over: boolean }> => {
  const reader = body.getReader()
  const chunks: Array<Uint8Array> = []
  let total = 0
  const next = (): Promise<{ readonly bytes: Uint8Array<ArrayBuffer>; readonly over: boolean }> =>
    reader.read().then(({ done, value }) => {
      if (done) return { bytes: joined(chunks), over: false }
      total += value.length
      if (total <= max) {
        chunks.push(value)
        return next()
      }
      chunks.push(value.subarray(0, value.length - (total - max)))
      reader.cancel().catch(() => {})
      return { bytes: joined(chunks), over: true }
    })
  return next()
}

/** Chunks as one array a `Response` takes. */
const joined = (chunks: ReadonlyArray<Uint8Array>): Uint8Array<ArrayBuffer> => {
  const bytes = new Uint8Array(chunks.reduce((n, chunk) => n + chunk.length, 0))
  let at = 0
  for (const chunk of chunks) {
    bytes.set(chunk, at)
    at += chunk.length
  }
  return bytes
}

/** `response` with another body; its length and encoding headers no longer apply. */
const replaced = (response: Response, body: ConstructorParameters<typeof Response>[0]): Response => {
  const headers = new Headers(response.headers)
  headers.delete("content-length")
  headers.delete("content-encoding")
  return new Response(body, { status: response.status, statusText: response.statusText, headers })
}

/** Cuts an event stream into events, each bounded; see the module comment. */
const boundEvents = (maxBytes: number, fallbackIds: () => ReadonlyArray<string | number>) => {
  let eventBytes = 0
  let lineHasContent = false
  let head = Buffer.alloc(0)
  let skipping: Skipped | undefined
  const encoder = new TextEncoder()
  const finish = (skipped: Skipped, controller: TransformStreamDefaultController<Uint8Array>) => {
    const fallback = fallbackIds()
    // A POST's stream carries that request's answer: a skipped frame that is not a request or a
    // notification, and shows no id, is taken for it.
    const id = skipped.id() ?? (fallback.length === 1 && !skipped.isRequest() ? fallback[0] : undefined)
    if (id !== undefined) controller.enqueue(encoder.encode(`event: message\ndata: ${JSON.stringify(tooLarge(id, maxBytes))}\n\n`))
  }
  return new TransformStream<Uint8Array, Uint8Array>({
    transform: (chunk, controller) => {
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
      let from = 0
      let passed = 0
      while (from < bytes.length) {
        const newline = bytes.indexOf(NEWLINE, from)
        const end = newline === -1 ? bytes.length : newline + 1
        const content = bytes.subarray(from, newline === -1 ? end : newline)
        const blank = content.length === 0 || (content.length === 1 && content[0] === CARRIAGE_RETURN)
        const boundary = newline !== -1 && !lineHasContent && blank
        lineHasContent = newline === -1 ? lineHasContent || !blank : false
        if (skipping !== undefined) {
          skipping.add(bytes.subarray(from, end))
          if (boundary) {
            finish(skipping, controller)
            skipping = undefined
            eventBytes = 0
            head = Buffer.alloc(0)
          }
          passed = end
        } else if (boundary) {
          eventBytes = 0
          head = Buffer.alloc(0)
        } else {
          eventBytes += end - from
          if (eventBytes > maxBytes) {
            // What went through is ended as an (unparseable) event; the rest is skipped.
            controller.enqueue(bytes.subarray(passed, from))
            controller.enqueue(encoder.encode("\n\n"))
            skipping = new Skipped()
            skipping.add(head)
            skipping.add(bytes.subarray(from, end))
            passed = end
          } else if (head.length < EDGE_BYTES) {
            head = Buffer.concat([head, bytes.subarray(from, Math.min(end, from + EDGE_BYTES - head.length))])
          }
        }
        from = end
      }
      if (passed < bytes.length && skipping === undefined) controller.enqueue(bytes.subarray(passed))
    },
    flush: (controller) => {
      if (skipping !== undefined) finish(skipping, controller)
    }
  })
}

/** `base` with the bounds of the module comment, recording credentials into `credentials`. */
export const boundedFetch = (base: FetchLike, maxBytes: number, credentials: Credentials): FetchLike => (url, init) => {
  recordAuthorization(credentials, init)
  return base(url, init).then((response): Response | Promise<Response> => {
    const body = response.body
    if (body === null) return response
    if (response.status >= 400) return readUpTo(body, ERROR_BODY_BYTES).then(({ bytes }) => replaced(response, bytes))
    if (response.status < 200 || response.status === 204 || response.status === 205 || response.status >= 300) return response
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase()
    if (type === "application/json") {
      return readUpTo(body, maxBytes).then(({ bytes, over }) =>
        over
          ? replaced(response, JSON.stringify(requestIds(init).map((id) => tooLarge(id, maxBytes))))
          : replaced(response, bytes)
      )
    }
    if (type === "text/event-stream") return replaced(response, body.pipeThrough(boundEvents(maxBytes, () => requestIds(init))))
    return response
  })
}

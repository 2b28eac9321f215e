/**
 * oversized — a message a server sent that is larger than its `maxMessageBytes`: skipped whole
 * (never decoded), and the request it answered failed on its own, so a healthy server stays up.
 *
 * A framing (a stdio line, an SSE event) keeps the first and the last `EDGE_BYTES` of the skipped
 * frame; `responseId` finds the JSON-RPC id there, where every encoder puts it: first keys
 * (`{"jsonrpc":"2.0","id":7,…`, Python's and Go's SDKs) or last key (`…,"jsonrpc":"2.0","id":7}`,
 * the TypeScript SDK's). `tooLarge` is the error response delivered in its place; the client reads
 * it back with `isTooLarge`. A frame whose id cannot be found is dropped (a notification, or a
 * response whose request then ends at its timeout). Pure: no I/O.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/client"

/** How much of a skipped frame's start and end is kept to find its id. */
export const EDGE_BYTES = 512

/** The JSON-RPC error code of the response delivered in place of a skipped one (implementation-defined range). */
export const TOO_LARGE_CODE = -32099

/** The start and end of a frame being skipped, and its length so far. */
export class Skipped {
  bytes = 0
  private head = Buffer.alloc(0)
  private tail = Buffer.alloc(0)

  /** Adds the next bytes of the frame. */
  add(bytes: Buffer): void {
    this.bytes += bytes.length
    if (this.head.length < EDGE_BYTES) this.head = Buffer.concat([this.head, bytes.subarray(0, EDGE_BYTES - this.head.length)])
    this.tail = bytes.length >= EDGE_BYTES
      ? Buffer.from(bytes.subarray(bytes.length - EDGE_BYTES))
      : Buffer.concat([this.tail, bytes]).subarray(-EDGE_BYTES)
  }

  /** The id of the response this frame was, when its edges show it. */
  id(): string | number | undefined {
    return responseId(this.head.toString("utf8"), this.tail.toString("utf8"))
  }

  /** Whether the frame starts as a request or a notification (its method first): not a response. */
  isRequest(): boolean {
    return METHOD_FIRST.test(this.head.toString("utf8"))
  }
}

const ID = String.raw`"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")`
/** `{"id":…` or `{"jsonrpc":"2.0","id":…`, after an SSE `data:` prefix if any. */
const FIRST = new RegExp(String.raw`^(?:[^{]*?data:\s*)?\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?${ID}`)
/** `,"id":…}` closing the message: one brace, so not a nested object's. */
const LAST = new RegExp(String.raw`[,{]\s*${ID}\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$`)

/** `{"method":…` or `{"jsonrpc":"2.0","method":…`: what requests and notifications start with. */
const METHOD_FIRST = /^(?:[^{]*?data:\s*)?\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"method"\s*:/

/**
 * The id of a response from its first and last bytes, when they show it; none for a frame that
 * starts as a request or a notification (a server's request id is not one of ours).
 */
export const responseId = (head: string, tail: string): string | number | undefined => {
  if (METHOD_FIRST.test(head)) return undefined
  const found = FIRST.exec(head)?.[1] ?? LAST.exec(tail)?.[1]
  if (found === undefined) return undefined
  return found.startsWith("\"") ? (JSON.parse(found) as string) : Number(found)
}

/** The error response that stands for a skipped response to request `id`. */
export const tooLarge = (id: string | number, maxBytes: number): JSONRPCMessage => ({
  jsonrpc: "2.0",
  id,
  error: { code: TOO_LARGE_CODE, message: `the answer is larger than ${maxBytes} bytes`, data: { maxMessageBytes: maxBytes } }
})

/** The limit a `tooLarge` response names, when `error` is one. */
export const tooLargeLimit = (error: { readonly code: number; readonly data?: unknown }): number | undefined => {
  if (error.code !== TOO_LARGE_CODE || typeof error.data !== "object" || error.data === null) return undefined
  const limit = (error.data as { readonly maxMessageBytes?: unknown }).maxMessageBytes
  return typeof limit === "number" ? limit : undefined
}

/**
 * boundedMessages — every message an MCP server sends is held to `JsonLimits` before the SDK sees
 * it, over every transport. Our stdio framing parses its lines, the SDK's HTTP transports parse
 * their own bodies and events; all of them deliver through the transport's `onmessage`, so the
 * check sits there: a server's 100,000-deep result must not reach the SDK's schemas, `render`'s
 * `JSON.stringify` or the session (issue 37).
 *
 * What breaks a bound (its `result`, or its `params`) is not delivered as it came:
 * - a response becomes an error response for its id (code `REFUSED_CODE`), so that call alone
 *   fails (`ResultRefused`) and the server stays up, as a message past `maxMessageBytes` does;
 * - a request of the server (an elicitation's form, a sampling request) is answered with a
 *   JSON-RPC error naming the bound, and reported through `onerror`;
 * - a notification is dropped and reported through `onerror`.
 *
 * The handler a client sets is wrapped as it is set (the SDK chains and restores handlers:
 * whatever it reads back is the wrapped one); a message already checked by an outer wrapper is
 * not walked again.
 */
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client"
import { JsonLimits } from "@condukt/core"

/** The JSON-RPC error code of the response delivered in place of a refused one (implementation-defined range). */
export const REFUSED_CODE = -32098

/** JSON-RPC's "invalid params": what a server's request past a bound is answered with. */
const INVALID_PARAMS = -32602

/** The error response that stands for a refused response to request `id`. */
export const refused = (id: string | number, error: JsonLimits.JsonLimitError): JSONRPCMessage => ({
  jsonrpc: "2.0",
  id,
  error: { code: REFUSED_CODE, message: `the answer holds ${error.description}`, data: { jsonLimits: error.description } }
})

/** The bound a `refused` response names, when `error` is one. */
export const refusedBecause = (error: { readonly code: number; readonly data?: unknown }): string | undefined => {
  if (error.code !== REFUSED_CODE || typeof error.data !== "object" || error.data === null) return undefined
  const description = (error.data as { readonly jsonLimits?: unknown }).jsonLimits
  return typeof description === "string" ? description : undefined
}

type Handler = NonNullable<Transport["onmessage"]>

/** The payload of a message the bounds apply to, and what kind of message it is. */
const payloadOf = (message: JSONRPCMessage): { readonly value: unknown; readonly id: string | number | undefined; readonly method: string | undefined } => {
  const fields = message as { readonly id?: string | number; readonly method?: string; readonly result?: unknown; readonly params?: unknown }
  return { value: fields.method === undefined ? fields.result : fields.params, id: fields.id, method: fields.method }
}

/** `transport`, its inbound messages held to `JsonLimits.defaults` (the same instance). */
export const bound = <T extends Transport>(transport: T): T => {
  // The message the outermost wrapper last let through: the SDK's chained handlers call the one
  // they replaced within that call, with the same message (a WeakSet of every message cost each
  // call more than the check: bench/mcp's concurrent calls 24 -> 27 ms).
  let passed: JSONRPCMessage | undefined
  let wrapped: Handler | undefined
  const wrap = (handler: Handler): Handler => (message, extra) => {
    if (message === passed) return handler(message, extra)
    const { id, method, value } = payloadOf(message)
    const error = JsonLimits.check(value)
    if (error === undefined) {
      passed = message
      return handler(message, extra)
    }
    if (method === undefined) {
      if (id === undefined) return
      const replacement = refused(id, error)
      passed = replacement
      return handler(replacement, extra)
    }
    transport.onerror?.(new Error(`the server sent ${method} with params that hold ${error.description}; it was ${id === undefined ? "dropped" : "refused"}`))
    if (id !== undefined) {
      transport.send({ jsonrpc: "2.0", id, error: { code: INVALID_PARAMS, message: `the params hold ${error.description}, past what this client takes` } })
        .catch(() => {})
    }
  }
  const existing = transport.onmessage
  if (existing !== undefined) wrapped = wrap(existing)
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    enumerable: true,
    get: () => wrapped,
    set: (handler: Handler | undefined) => {
      wrapped = handler === undefined ? undefined : wrap(handler)
    }
  })
  return transport
}

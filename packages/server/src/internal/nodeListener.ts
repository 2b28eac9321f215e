/**
 * nodeListener — a web handler on Node's `http`, with the bounds a public port needs: a body is
 * read up to `maxBodyBytes` (a larger `Content-Length` is a 413 before a byte is read), headers up
 * to `maxHeaderBytes` and `maxHeaders` of them (431), a client must send its headers and its
 * request in time (408: a slow-loris client holds a socket for seconds, not for ever), and a response's
 * stream is written at the pace the client reads it and cancelled when the client goes away. What
 * Node refuses before a request exists (headers too large, too slow, not HTTP) is answered in the
 * API's error shape too, `{ _tag, message }`, and the connection closed.
 *
 * Our own, not `@effect/platform-node`'s server: that package brings the `redis` peer to every install.
 */
import { Effect, Schema, type Scope } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import type * as Limits from "../Limits.ts"

/**
 * The port could not be listened on.
 *
 * @since 0.1.0
 * @category errors
 */
export class ListenError extends Schema.TaggedError<ListenError>()("ListenError", { description: Schema.String }) {
  override get message() {
    return `cannot listen: ${this.description}`
  }
}

const refuse = (res: ServerResponse, status: number, tag: string, message: string) => {
  const body = JSON.stringify({ _tag: tag, message })
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), connection: "close" })
  res.end(body)
}

/** The request's body, or `undefined` after answering it 413. */
const readBody = (req: IncomingMessage, res: ServerResponse, max: number): Promise<Buffer | undefined> =>
  new Promise((resolve, reject) => {
    const tooLarge = () => {
      refuse(res, 413, "PayloadTooLarge", `the request body is larger than ${max} bytes`)
      req.resume()
      resolve(undefined)
    }
    const declared = Number(req.headers["content-length"] ?? "0")
    if (declared > max) return tooLarge()
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > max) {
        req.removeAllListeners("data")
        req.removeAllListeners("end")
        tooLarge()
        return
      }
      chunks.push(chunk)
    })
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })

/**
 * Writes `response` to `res`: a body of known length (every answer but a stream) whole, in one
 * write with its headers; a stream at the client's pace, cancelled when the client goes.
 */
const write = async (response: Response, res: ServerResponse): Promise<void> => {
  const headers: Record<string, string | Array<string>> = {}
  response.headers.forEach((value, key) => {
    if (key !== "set-cookie") headers[key] = value
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) headers["set-cookie"] = cookies
  if (response.body === null) return void res.writeHead(response.status, headers).end()
  if (response.headers.has("content-length")) return void res.writeHead(response.status, headers).end(Buffer.from(await response.arrayBuffer()))
  res.writeHead(response.status, headers)
  res.flushHeaders()
  const reader = response.body.getReader()
  res.on("close", () => void reader.cancel().catch(() => {}))
  try {
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      if (!res.write(value)) await new Promise<void>((resolve) => res.once("drain", resolve).once("close", resolve))
      if (res.destroyed) break
    }
  } finally {
    res.end()
  }
}

/**
 * What the server's own routes read of a web request (effect's `HttpServerRequest.fromWeb`: its
 * method, URL, headers, signal and body), over a Node request whose body is read already. Not an
 * undici `Request`: building one with a body and a signal costs ~0.1 ms an answer (ADR 0097). Only
 * for `listen`, whose handler is the server's own; `toNodeListener` serves any web handler, which
 * may use the rest of a real `Request`.
 */
class ReadRequest {
  readonly method: string
  readonly url: string
  readonly headers: Headers
  readonly signal: AbortSignal
  readonly #bytes: Uint8Array<ArrayBuffer> | undefined
  #stream: ReadableStream<Uint8Array> | null | undefined
  constructor(method: string, url: string, headers: Headers, signal: AbortSignal, bytes: Uint8Array<ArrayBuffer> | undefined) {
    this.method = method
    this.url = url
    this.headers = headers
    this.signal = signal
    this.#bytes = bytes
  }
  /** The body as one chunk (the same stream each time it is asked for, as a `Request`'s). */
  get body(): ReadableStream<Uint8Array> | null {
    if (this.#stream !== undefined) return this.#stream
    const bytes = this.#bytes
    return this.#stream = bytes === undefined ? null : new ReadableStream<Uint8Array>({
      start: (controller) => {
        if (bytes.byteLength > 0) controller.enqueue(bytes)
        controller.close()
      }
    })
  }
  get bodyUsed(): boolean {
    return this.#stream?.locked === true
  }
  arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.#bytes === undefined ? new ArrayBuffer(0) : this.#bytes.slice().buffer)
  }
  text(): Promise<string> {
    const bytes = this.#bytes
    return Promise.resolve(bytes === undefined ? "" : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"))
  }
  json(): Promise<unknown> {
    return this.text().then((text) => JSON.parse(text))
  }
}

/** `handler` as a request listener for Node's `http.createServer`. */
export const toNodeListener = (handler: (request: Request) => Promise<Response>, options: { readonly maxBodyBytes: number }) =>
  listener(handler, options, false)

/** The listener; `read`: the handler is the server's own, given a `ReadRequest`. */
const listener = (handler: (request: Request) => Promise<Response>, options: { readonly maxBodyBytes: number }, read: boolean) =>
(req: IncomingMessage, res: ServerResponse): void => {
  const aborted = new AbortController()
  // Aborted only when the client goes before its answer's end: an abort builds a DOMException and
  // wakes the request's listeners, a cost every answer paid when each one aborted at its close.
  res.on("close", () => {
    if (!res.writableFinished) aborted.abort()
  })
  void (async () => {
    const method = req.method ?? "GET"
    const body = method === "GET" || method === "HEAD" ? undefined : await readBody(req, res, options.maxBodyBytes)
    if (body === undefined && method !== "GET" && method !== "HEAD") return
    const headers = new Headers()
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!)
    const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`)
    const request = read
      ? new ReadRequest(method, url.href, headers, aborted.signal, body === undefined ? undefined : asBytes(body)) as unknown as Request
      : new Request(url, body === undefined ? { method, headers, signal: aborted.signal } : { method, headers, signal: aborted.signal, body: asBytes(body) })
    await write(await handler(request), res)
  })().catch(() => {
    // What failed is the server's own business (its text could hold anything): the client learns that it did.
    if (!res.headersSent) refuse(res, 500, "InternalError", "the server failed to answer this request")
    else res.destroy()
  })
}

/** The body's bytes, not copied: a Node buffer is a view of an ArrayBuffer (never a shared one). */
const asBytes = (body: Buffer): Uint8Array<ArrayBuffer> => new Uint8Array(body.buffer as ArrayBuffer, body.byteOffset, body.byteLength)

/**
 * What Node refuses before there is a request to answer (headers past `maxHeaderBytes` or
 * `maxHeaders`, headers or request too slow, bytes that are not HTTP), answered in the API's error
 * shape, then closed.
 */
const clientError = (limits: Limits.Resolved) => (error: Error & { readonly code?: string }, socket: Socket): void => {
  const pending = (socket as Socket & { readonly _httpMessage?: { readonly headersSent?: boolean } })._httpMessage
  if (error.code === "ECONNRESET" || !socket.writable || pending?.headersSent === true) return void socket.destroy()
  const [status, reason, tag, message] = error.code === "HPE_HEADER_OVERFLOW"
    ? [431, "Request Header Fields Too Large", "HeadersTooLarge", `the request's headers are too large: at most ${limits.maxHeaders} headers of ${limits.maxHeaderBytes} bytes in all`]
    : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
    ? [408, "Request Timeout", "RequestTimeout", `the request took too long to arrive (headers within ${limits.headersTimeout} ms, the whole within ${limits.requestTimeout} ms)`]
    : [400, "Bad Request", "BadRequest", "the request is not well-formed HTTP"]
  const body = JSON.stringify({ _tag: tag, message })
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
  // A client that does not read its answer does not hold the socket either.
  socket.setTimeout(limits.headersTimeout, () => socket.destroy())
}

/** Serves `handler`, the server's own routes (given a `ReadRequest`), on `options.host:options.port` until the scope closes. */
export const listen = (
  handler: (request: Request) => Promise<Response>,
  options: { readonly port: number; readonly host: string; readonly limits: Limits.Resolved }
): Effect.Effect<{ readonly url: string; readonly port: number }, ListenError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<ReturnType<typeof createServer>, ListenError>((resume) => {
      const server = createServer({
        maxHeaderSize: options.limits.maxHeaderBytes,
        headersTimeout: options.limits.headersTimeout,
        requestTimeout: options.limits.requestTimeout,
        connectionsCheckingInterval: 1000
      }, listener(handler, options.limits, true))
      // Past it Node refuses the request (a header overflow: 431), not only drops the rest.
      server.maxHeadersCount = options.limits.maxHeaders
      server.on("clientError", clientError(options.limits))
      server.once("error", (error) => resume(Effect.fail(new ListenError({ description: error.message }))))
      server.listen(options.port, options.host, () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  ).pipe(Effect.map((server) => {
    const { port } = server.address() as AddressInfo
    const host = options.host.includes(":") ? `[${options.host}]` : options.host
    return { url: `http://${host}:${port}`, port }
  }))

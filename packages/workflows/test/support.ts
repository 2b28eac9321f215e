/** Shared by the workflow tests: loopback HTTP servers. */
import { Deferred, Effect, type Scope } from "effect"
import * as http from "node:http"

/** One request as the endpoint received it. */
export interface Received {
  readonly method: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/**
 * An HTTP server on 127.0.0.1 answering every request with `status` and `body` (JSON), closed
 * with the scope; `received` completes with the first request.
 */
export const endpoint = (status: number, body: unknown): Effect.Effect<{ readonly url: string; readonly received: Deferred.Deferred<Received> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const received = yield* Deferred.make<Received>()
    const server = yield* Effect.acquireRelease(
      Effect.callback<http.Server>((resume) => {
        const server = http.createServer((request, response) => {
          const chunks: Array<Buffer> = []
          request.on("data", (chunk: Buffer) => chunks.push(chunk))
          request.on("end", () => {
            Deferred.doneUnsafe(received, Effect.succeed({ method: request.method ?? "", headers: request.headers, body: Buffer.concat(chunks).toString() }))
            response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))
          })
        })
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
        })
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    return { url: `http://127.0.0.1:${port}/hook`, received }
  })

/**
 * An HTTP server on 127.0.0.1 answering with `handle` (a hostile server: never answering,
 * dripping, flooding), closed with the scope, its open connections cut first.
 */
export const serve = (
  handle: (request: http.IncomingMessage, response: http.ServerResponse) => void
): Effect.Effect<{ readonly url: string; readonly port: number }, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.callback<http.Server>((resume) => {
        const server = http.createServer(handle)
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    ),
    (server) => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      return { url: `http://127.0.0.1:${port}/data`, port }
    }
  )

/** A port nothing listens on: one a server held and let go. */
export const freePort: Effect.Effect<number> = Effect.scoped(Effect.map(serve(() => {}), ({ port }) => port))

/** Writes `bytes` bytes of `x` in 64 KiB chunks as the socket drains, with or without content-length. */
export const flood = (bytes: number, declare: boolean) => (_: http.IncomingMessage, response: http.ServerResponse) => {
  response.writeHead(200, declare ? { "content-type": "text/plain", "content-length": String(bytes) } : { "content-type": "text/plain" })
  const chunk = Buffer.alloc(64 * 1024, "x")
  let sent = 0
  const write = () => {
    while (sent < bytes) {
      const part = sent + chunk.length <= bytes ? chunk : chunk.subarray(0, bytes - sent)
      sent += part.length
      if (!response.write(part)) return void response.once("drain", write)
    }
    response.end()
  }
  response.on("error", () => {})
  write()
}

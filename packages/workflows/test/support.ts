/** Shared by the workflow tests: a loopback HTTP endpoint. */
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

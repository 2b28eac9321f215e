/**
 * A loopback HTTP server for provider tests: it answers each request with the next scripted
 * reply (a whole body, SSE bytes in chunks then an end, close, reset or stall) and records what
 * it received, so tests assert request bodies as the vendor would see them and see connections close.
 * Also the provider layer pointed at it, and the plain request most tests stream through it.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { ConfigProvider, Deferred, Effect, Exit, Layer, Redacted, type Scope, Stream } from "effect"
import type { HttpClient } from "effect/http"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import * as History from "@condukt/core/History"
import * as Message from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import type * as Provider from "../src/Provider.ts"

/** One scripted answer. */
export type Reply =
  | { readonly _tag: "Body"; readonly status: number; readonly headers?: Record<string, string>; readonly body: string }
  /** SSE chunks written one by one, then: end the response, destroy the socket, or say nothing more. */
  | { readonly _tag: "Sse"; readonly chunks: ReadonlyArray<string>; readonly then: "end" | "reset" | "stall" }
  /** The socket is destroyed before any byte of the response. */
  | { readonly _tag: "Reset" }
  /**
   * SSE `head`, then `repeat(0)`, `repeat(1)`… without end: as fast as the client reads, or one
   * every `everyMs` (a server busy forever, never idle). Stops when the client closes.
   */
  | { readonly _tag: "Endless"; readonly head: string; readonly repeat: (n: number) => string; readonly everyMs?: number | undefined }

export const body = (status: number, text: string, headers: Record<string, string> = {}): Reply => ({
  _tag: "Body",
  status,
  headers,
  body: text
})
export const sse = (text: string, then: "end" | "reset" | "stall" = "end"): Reply => ({ _tag: "Sse", chunks: [text], then })
export const sseChunks = (chunks: ReadonlyArray<string>, then: "end" | "reset" | "stall" = "end"): Reply => ({
  _tag: "Sse",
  chunks,
  then
})
export const reset: Reply = { _tag: "Reset" }
export const endless = (head: string, repeat: (n: number) => string, everyMs?: number): Reply => ({
  _tag: "Endless",
  head,
  repeat,
  everyMs
})

/** A request as the server received it. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: any
}

export interface Server {
  readonly url: string
  /** The requests received so far, in order. */
  readonly requests: Array<Received>
  /** Completes when the connection of request `n` (from 0) has closed. */
  readonly closed: (n: number) => Deferred.Deferred<void>
}

/**
 * A final-answer fixture (its text streamed as "a.txt says alpha; " then "b.txt says beta.") with
 * those two deltas replaced by `first` and `second`: a typed answer's JSON, say.
 */
export const finalWith = (name: string, first: string, second: string): string =>
  fixture(name).replaceAll("a.txt says alpha; ", JSON.stringify(first).slice(1, -1)).replaceAll("b.txt says beta.", JSON.stringify(second).slice(1, -1))

/** A fixture transcript from test/fixtures/providers. */
export const fixture = (name: string): string =>
  fs.readFileSync(path.join(import.meta.dirname, "fixtures/providers", name), "utf8")

/** Starts a server on 127.0.0.1 (a free port) answering with `replies` in order; closed with the scope. */
export const start = (replies: ReadonlyArray<Reply>): Effect.Effect<Server, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ server: http.Server; state: Server }>((resume) => {
      const requests: Array<Received> = []
      const closes: Array<Deferred.Deferred<void>> = []
      const closed = (n: number) => (closes[n] ??= Deferred.makeUnsafe<void>())
      const server = http.createServer((req, res) => {
        const n = requests.length
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let parsed: unknown = text
          try {
            parsed = JSON.parse(text)
          } catch {
            // not JSON: keep the text
          }
          requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: parsed })
          res.on("close", () => Deferred.doneUnsafe(closed(n), Exit.void))
          const reply = replies[n] ?? body(500, `{"error":{"message":"no reply scripted for request ${n}"}}`)
          if (reply._tag === "Reset") return req.socket.destroy()
          if (reply._tag === "Body") {
            res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
            return res.end(reply.body)
          }
          res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
          res.flushHeaders()
          if (reply._tag === "Endless") return writeForever(res, reply)
          for (const chunk of reply.chunks) res.write(chunk)
          if (reply.then === "end") res.end()
          // Once the chunks are flushed: destroying at once could drop them unsent.
          else if (reply.then === "reset") res.write("", () => res.socket?.destroy())
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ server, state: { url: `http://127.0.0.1:${port}`, requests, closed } }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ state }) => state))

/** Writes an endless reply until the client goes away: paced by `everyMs`, else by the socket's backpressure. */
const writeForever = (res: http.ServerResponse, reply: Extract<Reply, { _tag: "Endless" }>) => {
  let n = 0
  let open = true
  res.write(reply.head)
  if (reply.everyMs !== undefined) {
    const timer = setInterval(() => res.write(reply.repeat(n++)), reply.everyMs)
    res.on("close", () => clearInterval(timer))
    return
  }
  res.on("close", () => {
    open = false
  })
  const pump = () => {
    while (open && res.write(reply.repeat(n++))) {
      // the socket takes more: keep writing
    }
    if (open) res.once("drain", pump)
  }
  pump()
}

/** A temporary directory holding `files` (text, or bytes), removed with the scope. */
export const tempFiles = (files: Record<string, string | Uint8Array>): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-provider-")))
      for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text)
      return dir
    }),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

/** The request most provider tests send: a system prompt, "Hi", no tools, and `options`. */
export const request = (options?: Model.Options): Model.Request => ({
  system: "Be brief.",
  messages: History.fromIterable([Message.user("Hi")]),
  tools: [],
  options
})

/** Every part `model` streams for `req`, resolved through the registry `layer` fills. */
export const parts = (model: string, layer: Layer.Layer<never>, req: Model.Request = request()) =>
  Effect.gen(function*() {
    const service = yield* Model.resolve(model)
    return yield* Stream.runCollect(service.stream(req))
  }).pipe(Effect.provide(layer))

/**
 * A vendor's layer (`make`, e.g. `Anthropic.layer`) talking to a server with `apiKey`, over
 * undici, retrying after 1 ms so retry tests do not wait; `options` win.
 */
export const provider = <O extends Provider.Options>(
  make: (options?: O) => Layer.Layer<never, never, HttpClient.HttpClient>,
  apiKey: string
) =>
(server: Server, options?: O): Layer.Layer<never> =>
  make(Object.assign({ apiKey: Redacted.make(apiKey), baseUrl: server.url, retry: { baseDelay: "1 millis", maxDelay: "1 millis" } }, options))
    .pipe(Layer.provide(NodeHttpClient.layerUndici))

/** The error resolving `model` fails with when `layer`, given no key, finds none in an empty environment. */
export const missingKey = (model: string, layer: Layer.Layer<never, never, HttpClient.HttpClient>) =>
  Effect.flip(Model.resolve(model)).pipe(
    Effect.provide(layer.pipe(Layer.provide(NodeHttpClient.layerUndici))),
    Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} })))
  )

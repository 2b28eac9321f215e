/**
 * What the server benchmarks share (bench/server-events.ts, bench/server-streams.ts,
 * bench/server-runs.ts): sessions of one tool-less agent in this process, served over loopback by
 * `Server.listen(Server.layerById(…))` with the same `Sessions.ById` kept for the in-process
 * baseline, so both paths run the very same sessions; models scripted to emit text at a steady pace
 * or at once; a lean SSE client (node:http, frames split by hand) and the figures (percentiles,
 * sizes). Not a benchmark itself: bench/run.ts runs only the files directly in bench/.
 */
import { Auth, Server } from "@condukt/server"
import { Agent, Model, Sandbox, Sessions } from "@condukt/core"
import { Context, Effect, Layer, type Scope, Stream } from "effect"
import { request as httpRequest } from "node:http"

export const agent = Agent.make({ name: "bench", model: "test:bench" })

const FINISH: ReadonlyArray<Model.Part> = [{ _tag: "Usage", inputTokens: 10, outputTokens: 5 }, { _tag: "Finish", reason: "stop" }]

/**
 * A model whose every reply is `count` text deltas, one every `everyMs` (0: all at once), each
 * text the `performance.now()` of its emission, so a reader knows how long the event took to come.
 */
export const pacedModel = (count: number, everyMs: number): Model.Service =>
  Model.Model.of({
    name: "bench:paced",
    stream: () =>
      Stream.concat(
        Stream.fromEffectRepeat(
          (everyMs > 0 ? Effect.sleep(everyMs) : Effect.void).pipe(Effect.andThen(Effect.sync((): Model.Part => ({ _tag: "TextDelta", text: performance.now().toFixed(4) }))))
        ).pipe(Stream.take(count)),
        Stream.fromIterable(FINISH)
      )
  })

/** A model whose every reply is `text` in `chunks` deltas, at once. */
export const textModel = (text: string, chunks: number): Model.Service => {
  const size = Math.ceil(text.length / chunks)
  const parts: ReadonlyArray<Model.Part> = [
    ...Array.from({ length: chunks }, (_, i): Model.Part => ({ _tag: "TextDelta", text: text.slice(i * size, (i + 1) * size) })),
    ...FINISH
  ]
  return Model.Model.of({ name: "bench:text", stream: () => Stream.fromIterable(parts) })
}

export interface Served {
  readonly url: string
  readonly byId: Sessions.ByIdService
  /** The same routes as a web handler (`Server.handler`), no socket: records of its own, the same sessions. */
  readonly web: Server.Handler
}

/**
 * Sessions of `agent` on `model` in this process, their `ById`, and the server in front of it on
 * loopback, principal `p<i>` holding token `t<i>` (i < `principals`), until the scope closes;
 * the same routes as a web handler beside them.
 */
export const serve = (model: Model.Service, options: { readonly principals: number; readonly limits?: Server.Options["limits"] }): Effect.Effect<Served, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      Sessions.layerById({ bench: agent }).pipe(
        Layer.provideMerge(Sessions.layer),
        Layer.provideMerge(Layer.merge(Layer.succeed(Model.Model, model), Sandbox.layerNoop()))
      )
    )
    const tokens = Object.fromEntries(Array.from({ length: options.principals }, (_, i) => [`t${i}`, `p${i}`]))
    const routes = Server.layerById({ auth: Auth.bearer(tokens), limits: options.limits })
    const { url } = yield* Server.listen(routes, { limits: options.limits }).pipe(Effect.provide(context))
    const web = yield* Server.handler(routes).pipe(Effect.provide(context))
    return { url, byId: Context.get(context, Sessions.ById), web }
  })

/** A JSON request to the server with fetch (undici, keep-alive): the status and the body parsed. */
export const call = async (url: string, path: string, token: string, body?: unknown): Promise<{ readonly status: number; readonly body: any }> => {
  const response = await fetch(url + path, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${path} answered ${response.status}: ${text.slice(0, 300)}`)
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
}

/**
 * A JSON POST with node:http, as lean a client as the SSE one (fetch parses an answer through web
 * streams, at a cost in this process that is the client's, not the server's): the body parsed.
 */
export const post = (url: string, path: string, token: string, body: unknown): Promise<any> =>
  new Promise((resolve, reject) => {
    const text = JSON.stringify(body)
    const req = httpRequest(url + path, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(text) }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        const answer = Buffer.concat(chunks).toString("utf8")
        if ((res.statusCode ?? 500) >= 300) reject(new Error(`${path} answered ${res.statusCode}: ${answer.slice(0, 300)}`))
        else resolve(answer === "" ? undefined : JSON.parse(answer))
      })
    })
    req.on("error", reject)
    req.end(text)
  })

/** Starts session `id` as the principal of `token`. */
export const startSession = (url: string, token: string, id: string) => call(url, "/sessions", token, { id, agent: "bench" })

/** An open SSE stream: `close` drops it. */
export interface Sse {
  readonly close: () => void
  /** Resolves once the response's headers came (status 200), rejects otherwise. */
  readonly opened: Promise<void>
}

/**
 * Opens `GET path` as an SSE stream with node:http and calls `onFrame(event, data, receivedAt)`
 * for every frame with an id, `receivedAt` the `performance.now()` of the chunk that completed it.
 */
export const openSse = (url: string, path: string, token: string, onFrame: (event: string, data: string, receivedAt: number) => void): Sse => {
  let close = () => {}
  const opened = new Promise<void>((resolve, reject) => {
    const req = httpRequest(url + path, { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        return reject(new Error(`${path} answered ${res.statusCode}`))
      }
      resolve()
      res.setEncoding("utf8")
      let buffer = ""
      res.on("data", (chunk: string) => {
        const at = performance.now()
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          if (!frame.startsWith("id: ")) continue
          const eventAt = frame.indexOf("\nevent: ")
          const dataAt = frame.indexOf("\ndata: ")
          onFrame(frame.slice(eventAt + 8, dataAt), frame.slice(dataAt + 7), at)
        }
      })
      res.on("error", () => {})
    })
    req.on("error", reject)
    req.end()
    close = () => req.destroy()
  })
  return { opened, close: () => close() }
}

/** The `p`th percentile (0–100) of `values`, nearest rank. */
export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  const sorted = Float64Array.from(values).sort()
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

export const ms = (value: number): string => `${value.toFixed(3)} ms`
export const kb = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KB`

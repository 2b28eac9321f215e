/**
 * The chat page's server side: one node:http server that serves the page (`/`: index.html with
 * the user's bearer token in its `<meta name="condukt-token">`, `/app.js`: the bundled Chat.tsx)
 * and hands every other path to `@condukt/server`'s web handler — a program mounting the Condukt
 * server in its own HTTP server, beside its own routes. serve.ts runs it; the browser test
 * (packages/server/test/Browser.test.ts) drives it in a headless Chromium.
 */
import { Limits, Server } from "@condukt/server"
import { Effect, Schema, type Scope } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"

export class PageError extends Schema.TaggedError<PageError>()("PageError", { description: Schema.String }) {
  override get message() { return `chat page: ${this.description}` }
}

export interface Options {
  /** The Condukt server's web handler (`Server.handler`). */
  readonly handler: Server.Handler
  /** The page's JavaScript: Chat.tsx bundled for the browser. */
  readonly app: string
  /** The bearer token the page sends, the signed-in user's in a real app. */
  readonly token: string
  readonly port?: number | undefined
  readonly host?: string | undefined
}

const slot = '<meta name="condukt-token" content="">'

/** index.html with `token` in its slot, escaped for an attribute. */
const pageHtml = (token: string): Effect.Effect<string, PageError> =>
  Effect.flatMap(
    Effect.try({
      try: () => fs.readFileSync(path.join(import.meta.dirname, "index.html"), "utf8"),
      catch: (error) => new PageError({ description: `index.html: ${String(error)}` })
    }),
    (html) => {
      if (!html.includes(slot)) return Effect.fail(new PageError({ description: `index.html has no ${slot}` }))
      const escaped = token.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;")
      return Effect.succeed(html.replace(slot, `<meta name="condukt-token" content="${escaped}">`))
    }
  )

/** Serves the page and the Condukt server until the scope closes; succeeds with the page's URL. */
export const serve = (options: Options): Effect.Effect<string, PageError, Scope.Scope> =>
  Effect.gen(function*() {
    const html = yield* pageHtml(options.token)
    const condukt = Server.toNodeListener(options.handler, { maxBodyBytes: Limits.DEFAULTS.maxBodyBytes })
    const server = yield* Effect.acquireRelease(
      Effect.callback<http.Server, PageError>((resume) => {
        const server = http.createServer((req, res) => {
          if (req.method === "GET" && req.url === "/") {
            res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html)
          } else if (req.method === "GET" && req.url === "/app.js") {
            res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(options.app)
          } else {
            condukt(req, res)
          }
        })
        server.once("error", (error) => resume(Effect.fail(new PageError({ description: error.message }))))
        server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          // Open streams (a run still streaming to a tab) would hold close() for ever.
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    return `http://${options.host ?? "127.0.0.1"}:${port}/`
  })

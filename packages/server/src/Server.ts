/**
 * Server — Condukt sessions over HTTP (docs/server.md): the `Api`'s handlers over `Sessions.ById`,
 * so one server runs in front of one process's sessions (`layer`, with the program's agents) or of
 * a cluster's (`layerById`, with the cluster's `ById`).
 *
 * Served three ways: `handler` gives a web `Request → Response` function to mount in any server
 * (Node's `http` with `toNodeListener`, Hono, Bun, Deno); `listen` serves it on a Node port with
 * the limits a public port needs; the layers add the routes to an `HttpRouter` of the program's.
 * `/openapi.json` is generated from the `Api`. With `studio: true` the routes serve the Studio
 * (`Studio.layer`) beside the API.
 */
import { ByteSize, Context, Effect, Layer, Option, SchemaIssue, type Scope } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServer, HttpServerError, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiError } from "effect/http-api"
import * as Approvals from "@condukt/core/Approvals"
import * as Sessions from "@condukt/core/Sessions"
import * as SessionStore from "@condukt/core/SessionStore"
import type * as Usage from "@condukt/core/Usage"
import { Api } from "./Api.ts"
import * as Auth from "./Auth.ts"
import * as accountHandlers from "./internal/accountHandlers.ts"
import * as approvalsHandlers from "./internal/approvalsHandlers.ts"
import * as chatHandlers from "./internal/chatHandlers.ts"
import * as nodeListener from "./internal/nodeListener.ts"
import { rateLimited } from "./internal/rateLimit.ts"
import * as Served from "./internal/served.ts"
import * as sessionsHandlers from "./internal/sessionsHandlers.ts"
import * as workflowsHandlers from "./internal/workflowsHandlers.ts"
import * as Limits from "./Limits.ts"
import * as ServerStore from "./ServerStore.ts"
import * as Studio from "./Studio.ts"

/** @since 0.1.0 @category models */
export interface Options {
  /** Who is asking (`Auth.bearer({ token: principal })`, or the program's own). */
  readonly auth: Auth.Authenticate
  /** The agent a start or a new chat runs when it names none. */
  readonly defaultAgent?: string | undefined
  /** The origins a browser may call from (none by default: no CORS header is sent). */
  readonly cors?: { readonly origins: ReadonlyArray<string>; readonly credentials?: boolean | undefined } | undefined
  readonly limits?: Limits.Limits | undefined
  /** Prices by agent name (its model's), for the costs the sessions, `GET /sessions/{id}/usage` and `GET /usage` give. */
  readonly prices?: Readonly<Record<string, Usage.Price>> | undefined
  /**
   * Serves the Studio at `/studio` (`Studio.layer`: a page over this API, served without
   * credentials; every call it makes needs a token). Off by default.
   */
  readonly studio?: boolean | undefined
}

/** @since 0.1.0 @category models */
export interface LocalOptions<R> extends Options {
  /** The agents sessions may run, by the name a start gives. */
  readonly agents: Sessions.Agents<R>
}

const issues = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Bodies bounded by `maxBodyBytes` however the routes are served (`listen` refuses them before
 * reading; a `handler` mounted elsewhere stops reading there): past it a 413 that says so. A
 * request that does not decode (malformed JSON, a field of the wrong type, a bad parameter) is a
 * `BadRequest` saying where (at most 5 issues, each bounded), not effect's empty 400; a path no
 * route takes, a `NotFound` pointing at the document, not an empty 404.
 */
const refusals = (maxBodyBytes: number) =>
  HttpRouter.middleware((effect) =>
    Effect.provideService(effect, HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxBodyBytes)).pipe(Effect.catchIf(
      (error) => HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound",
      () => Effect.succeed(HttpServerResponse.jsonUnsafe({ _tag: "NotFound", message: "no route for this method and path (GET /openapi.json lists them)" }, { status: 404 }))
    ), Effect.catchDefect((defect) => {
      if (HttpServerError.isHttpServerError(defect) && defect.reason._tag === "RequestParseError" && defect.reason.reason === "BodyTooLarge") {
        return Effect.succeed(HttpServerResponse.jsonUnsafe({ _tag: "PayloadTooLarge", message: `the request body is larger than ${maxBodyBytes} bytes` }, { status: 413 }))
      }
      if (!HttpApiError.HttpApiSchemaError.is(defect) || defect.kind === "Body" || defect.kind === "ResponseHeaders") return Effect.die(defect)
      const found = issues(defect.cause.issue).issues.slice(0, 5).map((issue) => {
        const path = (issue.path ?? []).map((key) => String(typeof key === "object" ? key.key : key).slice(0, 64)).join(".")
        return `${path === "" ? "" : `${path}: `}${issue.message.slice(0, 200)}`
      })
      const where = { Params: "path parameters", Headers: "headers", Query: "query", Payload: "body" }[defect.kind]
      return Effect.succeed(HttpServerResponse.jsonUnsafe({ _tag: "BadRequest", message: `malformed request ${where}: ${found.join("; ")}` }, { status: 400 }))
    })), { global: true })

/** The routes, over the `ById` and the store in context. */
const routes = (options: Options, agents: ReadonlyArray<string> | undefined, follow: "always" | "idle") => {
  const limits = Limits.resolve(options.limits)
  const prices = options.prices
  const served = Served.layer({
    follow,
    agents,
    defaultAgent: options.defaultAgent,
    limits,
    prices: prices === undefined ? undefined : (agent) => (Object.hasOwn(prices, agent) ? prices[agent] : undefined)
  })
  const health = HttpApiBuilder.group(Api, "health", (handlers) => handlers.handle("health", () => Effect.succeed({ status: "ok" as const })))
  // The approvals routes work when the sessions' store keeps an approval log.
  const approvals = Layer.unwrap(Effect.map(Effect.serviceOption(SessionStore.SessionStore), (store) =>
    Option.isNone(store)
      ? Layer.empty
      : Layer.catch(Approvals.layer, () => Layer.empty).pipe(Layer.provide(Layer.succeed(SessionStore.SessionStore, store.value)))))
  const api = HttpApiBuilder.layer(Api, { openapiPath: "/openapi.json" }).pipe(
    Layer.provide([health, accountHandlers.layer, sessionsHandlers.layer, chatHandlers.layer, approvalsHandlers.layer, workflowsHandlers.layer]),
    Layer.provide(Auth.layer(rateLimited(options.auth, limits))),
    Layer.provide(Layer.merge(served, approvals)),
    Layer.provide(HttpServer.layerServices)
  )
  const cors = options.cors === undefined ? Layer.empty : HttpRouter.cors({
    allowedOrigins: options.cors.origins,
    allowedMethods: ["GET", "POST", "DELETE"],
    allowedHeaders: ["authorization", "content-type", "last-event-id"],
    credentials: options.cors.credentials
  })
  return Layer.mergeAll(api, cors, refusals(limits.maxBodyBytes), options.studio === true ? Studio.layer : Layer.empty)
}

/**
 * The routes for a cluster's (or any) `Sessions.ById`, keeping the server's records in the
 * `ServerStore` in context (`SqlServerStore` to share them between servers).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerById = (options: Options): Layer.Layer<never, never, HttpRouter.HttpRouter | Sessions.ById | ServerStore.ServerStore> =>
  routes(options, undefined, "idle")

/**
 * The routes for sessions of `options.agents` in this process, their records in memory unless a
 * `ServerStore` is provided.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <R = never>(options: LocalOptions<R>): Layer.Layer<never, never, HttpRouter.HttpRouter | ServerStore.ServerStore | R> =>
  routes(options, Object.keys(options.agents), "always").pipe(
    Layer.provide(Sessions.layerById(options.agents)),
    Layer.provide(Sessions.layer)
  )

/**
 * A web handler.
 *
 * @since 0.1.0
 * @category models
 */
export type Handler = (request: Request) => Promise<Response>

/**
 * `routes` as a web `Request → Response` handler, living as long as the scope (closing it stops
 * the sessions and ends the open streams). What the routes need (the agents' model and sandbox,
 * a `SessionStore`, a `ServerStore`) comes from the context; a `ServerStore` defaults to memory.
 *
 * @since 0.1.0
 * @category constructors
 */
export const handler = <R>(routes: Layer.Layer<never, never, HttpRouter.HttpRouter | R>): Effect.Effect<Handler, never, Scope.Scope | Exclude<R, ServerStore.ServerStore>> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<Exclude<R, ServerStore.ServerStore>>()
    const store = Context.getOption(context as Context.Context<unknown>, ServerStore.ServerStore)
    const provided = routes.pipe(
      Layer.provide(store._tag === "Some" ? Layer.succeed(ServerStore.ServerStore, store.value) : ServerStore.layerMemory()),
      Layer.provide(Layer.succeedContext(context))
    ) as Layer.Layer<never, never, HttpRouter.HttpRouter>
    // Ids of up to `MAX_ID_LENGTH` are addressable (the router's default stops path parameters at
    // 100 characters); a longer one reaches the route and is refused there, saying why.
    const web = HttpRouter.toWebHandler(provided, { disableLogger: true, routerConfig: { maxParamLength: 4 * Limits.MAX_ID_LENGTH } })
    yield* Effect.addFinalizer(() => Effect.promise(() => web.dispose()))
    return (request: Request) => web.handler(request)
  })

/** @since 0.1.0 @category models */
export interface Listening {
  readonly url: string
  readonly port: number
}

/**
 * `routes` served on a Node port (`127.0.0.1:0` by default: a free port on loopback) with the
 * limits of `limits`, until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const listen = <R>(
  routes: Layer.Layer<never, never, HttpRouter.HttpRouter | R>,
  options: { readonly port?: number | undefined; readonly host?: string | undefined; readonly limits?: Limits.Limits | undefined } = {}
): Effect.Effect<Listening, nodeListener.ListenError, Scope.Scope | Exclude<R, ServerStore.ServerStore>> =>
  Effect.flatMap(handler(routes), (web) => nodeListener.listen(web, { port: options.port ?? 0, host: options.host ?? "127.0.0.1", limits: Limits.resolve(options.limits) }))

/**
 * A web handler as a Node `http` request listener, with the body bound of `limits`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toNodeListener = nodeListener.toNodeListener

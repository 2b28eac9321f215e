/**
 * McpServers — the executor's one question about MCP: "open these servers for the length of this
 * scope and give me their tools, named `<id>.<tool>` (or `<prefix>.<tool>`)". By default the MCP
 * client actors of @condukt/mcp answer it: each `mcp_server` block becomes an `McpServer`
 * declaration (its map form, plus `auth`), all start in parallel in the run's scope and stop when
 * it closes, after the last step or on failure. A layer may answer instead (tests, embedders).
 * This module translates and delegates; it speaks no MCP itself and refuses an `auth` it cannot
 * read with a sentence naming the server.
 */
import { Executor, Secret, type Tool } from "@condukt/core"
import { NodeProcessRunner } from "@condukt/node"
import { McpAuth, McpServer } from "@condukt/mcp"
import { Context, Effect, Layer, type Scope, Schema } from "effect"
import type * as Document from "./Document.ts"

/**
 * Servers could not be opened (start, handshake, tool listing).
 *
 * @since 0.1.0
 * @category errors
 */
export class McpServersError extends Schema.TaggedError<McpServersError>()("McpServersError", {
  server: Schema.String,
  reason: Schema.Literal("StartFailed"),
  description: Schema.String
}) {
  override get message() {
    return `MCP server ${this.server}: ${this.description}`
  }
}

/** @since 0.1.0 @category models */
export interface Service {
  /** Opens every server; they close when the scope closes (after the last step, or on failure). */
  readonly open: (
    servers: Readonly<Record<string, Document.McpServerSpec>>
  ) => Effect.Effect<ReadonlyArray<Tool.Tool>, McpServersError, Scope.Scope>
}

type Auth = Readonly<Record<string, unknown>>

/** The most of a server's start failure an error quotes. */
const MAX_DETAIL_CHARS = 2000

/** A string field of an `auth` object, or undefined. */
const text = (auth: Auth, key: string): string | undefined => (typeof auth[key] === "string" ? auth[key] : undefined)

/** `name` (literal), `name_static` (literal) or `name_env` (a variable) as a secret. */
const secretOf = (auth: Auth, name: string): McpAuth.SecretInput | undefined => {
  const env = text(auth, `${name}_env`)
  return env !== undefined ? Secret.env(env) : text(auth, name) ?? text(auth, `${name}_static`)
}

const CLIENT_CREDENTIALS_KEYS = new Set([
  "type",
  "token_url",
  "token_url_static",
  "client_id",
  "client_id_static",
  "client_secret",
  "client_secret_static",
  "client_secret_env",
  "scope"
])

/** Condukt's map form of `auth` (`{type = "bearer", env | static | op = …}` or client credentials). */
const authOf = (auth: Auth): McpAuth.McpAuth | string => {
  if (auth["type"] === "bearer") {
    const env = text(auth, "env")
    const value = text(auth, "static")
    const op = text(auth, "op")
    if (env !== undefined) return McpAuth.bearer(Secret.env(env))
    if (value !== undefined) return McpAuth.bearer(value)
    if (op !== undefined) return McpAuth.bearer(Secret.onePassword(op))
    return "a bearer auth needs env, static or op"
  }
  if (auth["type"] === "client_credentials") {
    const unknown = Object.keys(auth).filter((key) => !CLIENT_CREDENTIALS_KEYS.has(key)).sort()
    if (unknown.length > 0) return `unknown client_credentials keys ${unknown.join(", ")}`
    const tokenUrl = text(auth, "token_url") ?? text(auth, "token_url_static")
    const clientId = text(auth, "client_id") ?? text(auth, "client_id_static")
    const clientSecret = secretOf(auth, "client_secret")
    if (tokenUrl === undefined || clientId === undefined || clientSecret === undefined) {
      return "a client_credentials auth needs token_url, client_id and client_secret (or client_secret_env)"
    }
    return McpAuth.clientCredentials({ tokenUrl, clientId, clientSecret, scope: text(auth, "scope") })
  }
  return `auth type must be "bearer" or "client_credentials", got ${JSON.stringify(auth["type"] ?? null)}`
}

/** One block as an `McpServer` declaration, or why it cannot be one. */
const declare = (id: string, spec: Document.McpServerSpec): McpServer.McpServer | McpServersError => {
  const { auth, init_timeout, request_timeout, ...rest } = spec
  const server = McpServer.fromConfig({
    ...rest,
    name: id,
    ...(init_timeout === undefined ? {} : { initTimeoutMs: init_timeout }),
    ...(request_timeout === undefined ? {} : { requestTimeoutMs: request_timeout })
  })
  if (auth === undefined || server.invalid !== undefined) return server
  const declaration = server.declaration
  const resolved = authOf(auth)
  if (typeof resolved === "string") return new McpServersError({ server: id, reason: "StartFailed", description: resolved })
  if (declaration.transport === "stdio") {
    return new McpServersError({ server: id, reason: "StartFailed", description: "auth applies to http servers only; pass a stdio server its token with env" })
  }
  return declaration.transport === "sse" ? McpServer.sse({ ...declaration, auth: resolved }) : McpServer.http({ ...declaration, auth: resolved })
}

/** Every block as an `McpServer` declaration, or the first (by id) that cannot be one. */
const declareAll = (servers: Readonly<Record<string, Document.McpServerSpec>>) =>
  Effect.gen(function*() {
    const declared: Array<McpServer.McpServer> = []
    for (const id of Object.keys(servers).sort()) {
      const server = declare(id, servers[id]!)
      if (server instanceof McpServersError) return yield* server
      if (server.invalid !== undefined) return yield* new McpServersError({ server: id, reason: "StartFailed", description: server.invalid })
      declared.push(server)
    }
    return declared
  })

/**
 * Succeeds when every block declares a server @condukt/mcp can start (its transport, command or
 * url, its `auth`), without starting any: what `open` refuses before a process or a connection.
 *
 * @since 0.1.0
 * @category constructors
 */
export const validate = (servers: Readonly<Record<string, Document.McpServerSpec>>): Effect.Effect<void, McpServersError> =>
  Effect.asVoid(declareAll(servers))

const live: Service = {
  open: (servers) =>
    Effect.gen(function*() {
      const declared = yield* declareAll(servers)
      const tools = yield* Effect.mapError(
        // The default answer is a Node program's: its stdio servers run on the Node process runner.
        Effect.provide(McpServer.startAll(declared), NodeProcessRunner.layer),
        // The reason may quote what a server sent: cut visibly (redaction is the MCP client's, at the source).
        (error) => new McpServersError({ server: error.server, reason: "StartFailed", description: Executor.truncate(error.description, MAX_DETAIL_CHARS) })
      )
      return yield* tools
    })
}

/**
 * Where the executor opens MCP servers; by default with @condukt/mcp (see the module comment).
 *
 * @since 0.1.0
 * @category services
 */
export const McpServers: Context.Reference<Service> = Context.Reference<Service>("@condukt/workflows/McpServers", {
  defaultValue: () => live
})

/**
 * Provides an implementation.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (service: Service): Layer.Layer<never> => Layer.succeed(McpServers, service)

/**
 * McpServers — the run engine's one question about MCP: "open these servers for the length of this
 * scope and give me their tools, named `<id>.<tool>` (or `<prefix>.<tool>`)". By default the MCP
 * client actors of @condukt/mcp answer it: each `mcp_server` block is the map form
 * `McpServer.fromConfig` reads (its `auth` included), all start in parallel in the run's scope and
 * stop when it closes, after the last step or on failure. A layer may answer instead (tests,
 * embedders). This module delegates; it speaks no MCP itself and refuses a block @condukt/mcp
 * cannot declare with its sentence, naming the server.
 */
import { Executor, type Tool } from "@condukt/core"
import { NodeProcessRunner } from "@condukt/node"
import { McpServer } from "@condukt/mcp"
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

/** The most of a server's start failure an error quotes. */
const MAX_DETAIL_CHARS = 2000

/** One block as an `McpServer` declaration: the block is the map form @condukt/mcp reads. */
const declare = (id: string, spec: Document.McpServerSpec): McpServer.McpServer => McpServer.fromConfig({ ...spec, name: id })

/** Every block as an `McpServer` declaration, or the first (by id) that cannot be one. */
const declareAll = (servers: Readonly<Record<string, Document.McpServerSpec>>) =>
  Effect.gen(function*() {
    const declared: Array<McpServer.McpServer> = []
    for (const id of Object.keys(servers).sort()) {
      const server = declare(id, servers[id]!)
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

/**
 * What the blocks hold unused, by server id (`auth` on a stdio server), in id order.
 *
 * @since 0.1.0
 * @category constructors
 */
export const warnings = (
  servers: Readonly<Record<string, Document.McpServerSpec>>
): ReadonlyArray<{ readonly server: string; readonly description: string }> =>
  Object.keys(servers).sort().flatMap((id) => declare(id, servers[id]!).warnings.map((description) => ({ server: id, description })))

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
 * Where the run engine opens MCP servers; by default with @condukt/mcp (see the module comment).
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

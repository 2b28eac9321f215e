/**
 * McpServers — the executor's one question about MCP: "open these servers for the length of this
 * scope and give me their tools, named `<id>.<tool>`". The MCP client actors of @condukt/mcp
 * answer it; this package only asks. Until a layer provides it, a workflow that declares an
 * `mcp_server` fails before its first step with a sentence saying so (the default below), and
 * one that declares none never asks.
 */
import type { Tool } from "@condukt/core"
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
  reason: Schema.Literals(["NotAvailable", "StartFailed"]),
  detail: Schema.String
}) {
  override get message() {
    return `MCP server ${this.server}: ${this.detail}`
  }
}

/** @since 0.1.0 @category models */
export interface Service {
  /** Opens every server; they close when the scope closes (after the last step, or on failure). */
  readonly open: (
    servers: Readonly<Record<string, Document.McpServerSpec>>
  ) => Effect.Effect<ReadonlyArray<Tool.Tool>, McpServersError, Scope.Scope>
}

const unavailable: Service = {
  open: (servers) =>
    Effect.fail(
      new McpServersError({
        server: Object.keys(servers).sort()[0] ?? "",
        reason: "NotAvailable",
        detail: "MCP servers are not available in this build; provide an McpServers layer (from @condukt/mcp) to run this workflow"
      })
    )
}

/**
 * Where the executor opens MCP servers; by default nowhere (see the module comment).
 *
 * @since 0.1.0
 * @category services
 */
export const McpServers: Context.Reference<Service> = Context.Reference<Service>("@condukt/workflows/McpServers", {
  defaultValue: () => unavailable
})

/**
 * Provides an implementation.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (service: Service): Layer.Layer<never> => Layer.succeed(McpServers, service)

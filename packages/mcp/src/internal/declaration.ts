/**
 * declaration — what an MCP server declaration holds, by transport. `McpServer` re-exports these
 * (`McpServer.StdioOptions`…); they live here so the client and the transports, which McpServer
 * imports, name them without importing McpServer back.
 */
import type { Supervisor } from "@condukt/core"
import type { Duration } from "effect"
import type * as McpAuth from "../McpAuth.ts"

/** @since 0.1.0 @category models */
export interface CommonOptions {
  /** Letters, digits, `_` and `-`, starting with a letter; unique among a session's servers. */
  readonly name: string
  /** Tools are exposed as `<prefix>.<tool>`; default the server's name, `""` for bare names. */
  readonly prefix?: string | undefined
  /** Spawn or connect, `initialize` and `tools/list` together (default 10 seconds). */
  readonly initTimeout?: Duration.Input | undefined
  /** One `tools/call` (default 60 seconds). */
  readonly requestTimeout?: Duration.Input | undefined
  /** What the session's supervisor does when the connection dies (default `temporary`: nothing). */
  readonly restart?: Supervisor.Restart | undefined
  /**
   * Server requests for user input (`elicitation/create`): not offered by default; with
   * `accept-defaults` every form is accepted with the defaults its schema gives.
   */
  readonly elicitation?: "accept-defaults" | undefined
  /**
   * The largest message the server may send (bytes, default 10 MiB): a stdio line, a JSON answer,
   * an SSE event. A larger answer to a call is skipped unread and that call fails with
   * `ResultTooLarge`; the server stays up.
   */
  readonly maxMessageBytes?: number | undefined
  /** The most of a tool result the model reads (code points, default 100,000); the rest is cut visibly. */
  readonly maxResultChars?: number | undefined
  /** Pages one `tools/list` may take (default 100). */
  readonly maxToolPages?: number | undefined
  /** Tools the server may list (default 10,000). */
  readonly maxTools?: number | undefined
  /** One whole `tools/list`, every page (default 30 seconds; at start, `initTimeout` bounds it too). */
  readonly listTimeout?: Duration.Input | undefined
}

/** @since 0.1.0 @category models */
export interface StdioOptions extends CommonOptions {
  /** An executable path or a name looked up on PATH; never run through a shell. */
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  readonly cwd?: string | undefined
  /**
   * Variables beyond PATH, HOME and the like: names passed through (the session's secret of that
   * name, else the host's variable), or a map to a literal or a `Secret`
   * (`{ GH_TOKEN: Secret.env("GITHUB_TOKEN") }`).
   */
  readonly env?: ReadonlyArray<string> | Readonly<Record<string, string | McpAuth.SecretInput>> | undefined
}

/** @since 0.1.0 @category models */
export interface HttpOptions extends CommonOptions {
  readonly url: string
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly auth?: McpAuth.McpAuth | undefined
}

/** A declaration with its transport. */
export type Declaration =
  | (StdioOptions & { readonly transport: "stdio" })
  | (HttpOptions & { readonly transport: "sse" | "http" })

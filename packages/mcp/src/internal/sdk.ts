/**
 * sdk — the MCP SDK (`@modelcontextprotocol/client` and its JSON Schema validator: with zod and
 * ajv, some 110 modules), loaded when a connection first needs it instead of with the package.
 * `condukt check`, which reads server declarations and starts none, and any program that only
 * declares servers never load it (ADR 0096).
 *
 * `load` runs before a connection is made (`McpClient.connect`, `makeTransport`); after it, `sdk()`
 * gives the module synchronously where its classes are needed (a client, a transport, an error code).
 * The predicates answer `false` while it is not loaded: an error the SDK made cannot exist before.
 */
import type * as Client from "@modelcontextprotocol/client"
import type * as Ajv from "@modelcontextprotocol/client/validators/ajv"

/** The SDK's module and its validator's. */
export interface Sdk {
  readonly client: typeof Client
  readonly ajv: typeof Ajv
}

let loaded: Sdk | undefined
let loading: Promise<Sdk> | undefined

/** The SDK, loaded once for the process. */
export const load = (): Promise<Sdk> =>
  loaded !== undefined
    ? Promise.resolve(loaded)
    : (loading ??= Promise.all([import("@modelcontextprotocol/client"), import("@modelcontextprotocol/client/validators/ajv")]).then(
      ([client, ajv]) => (loaded = { client, ajv })
    ))

/** The SDK's client module; only after `load` (a connection is made only after it). */
export const sdk = (): typeof Client => {
  if (loaded === undefined) throw new Error("the MCP SDK is used before it was loaded")
  return loaded.client
}

/** The SDK's JSON Schema validator's module; only after `load`. */
export const ajv = (): typeof Ajv => {
  if (loaded === undefined) throw new Error("the MCP SDK is used before it was loaded")
  return loaded.ajv
}

/** An `SdkError` (of `code`, when given). */
export const isSdkError = (error: unknown, code?: keyof typeof Client.SdkErrorCode): error is Client.SdkError =>
  loaded !== undefined && error instanceof loaded.client.SdkError && (code === undefined || error.code === loaded.client.SdkErrorCode[code])

/** An `SdkHttpError`: an HTTP status the transport got. */
export const isHttpError = (error: unknown): error is Client.SdkHttpError => loaded !== undefined && error instanceof loaded.client.SdkHttpError

/** A JSON-RPC error the server answered (`ProtocolError`). */
export const isProtocolError = (error: unknown): error is Client.ProtocolError =>
  loaded !== undefined && error instanceof loaded.client.ProtocolError

/** An `UnauthorizedError`: a 401, or a 403 asking for more scopes. */
export const isUnauthorized = (error: unknown): error is Client.UnauthorizedError =>
  loaded !== undefined && error instanceof loaded.client.UnauthorizedError

/** The SDK's Streamable HTTP transport. */
export const isStreamableHttp = (transport: unknown): transport is Client.StreamableHTTPClientTransport =>
  loaded !== undefined && transport instanceof loaded.client.StreamableHTTPClientTransport

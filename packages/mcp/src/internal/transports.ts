/**
 * transports — the transport a server's declaration asks for, and why one failed to open.
 *
 * Stdio: our process-group transport, its environment built from the declaration (pass-through
 * names, renames, literals and secrets). Legacy HTTP+SSE and Streamable HTTP: the SDK's transports,
 * with the declaration's headers and the `fetch` its auth wraps, over `boundedFetch`, on a socket
 * pool of the connection's own that its scope closes. Every transport's inbound messages are held
 * to `JsonLimits` (`boundedMessages`). Every
 * credential resolved here (an env value that is one, a bearer token, a client secret) joins the
 * server's `Credentials`. A failure is a reason of `McpError` (`ConnectFailed`, or a secret's
 * `AuthSecretUnavailable`, a token endpoint's `TokenRequestFailed`); the SDK's own errors are
 * described in one line too (`describe`). What a server wrote is made fit to read by the caller (`Credentials.reason`).
 */
import type { FetchLike, Transport } from "@modelcontextprotocol/client"
// undici (some 95 modules) loads only when an HTTP server connects: stdio and `condukt check` never pay for it.
import type { Agent } from "undici"
import { Deferred, Effect, Redacted, Scope } from "effect"
import { ProcessRunner, Secret } from "@condukt/core"
import * as McpAuth from "../McpAuth.ts"
import { AuthSecretUnavailable, ConnectFailed, type TokenRequestFailed } from "../McpError.ts"
import type { Declaration } from "./declaration.ts"
import { boundedFetch } from "./boundedFetch.ts"
import { bound } from "./boundedMessages.ts"
import type { Credentials } from "./credentials.ts"
import { MAX_LINE_BYTES } from "./jsonLines.ts"
import * as Sdk from "./sdk.ts"
import { StdioProcess } from "./stdioProcess.ts"

/** The value of a host environment variable (pass-through names of a declaration). */
const hostVariable = (name: string): string | undefined => process.env[name]

/** The largest message a server may send by default (bytes): a stdio line, a JSON answer, an SSE event. */
export const MAX_MESSAGE_BYTES = MAX_LINE_BYTES

/** The system error code (ECONNREFUSED…) under a `fetch failed`, if any. */
const connectionCode = (error: Error): string | undefined => {
  const cause = (error as { cause?: unknown }).cause
  return typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : undefined
}

export const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  const code = connectionCode(error)
  return code === undefined ? error.message : `${error.message} (${code})`
}

/** The status and body of an HTTP error status the SDK's transports report, when `error` is one. */
export const httpStatus = (error: unknown): { readonly status: number; readonly body: string } | undefined => {
  if (Sdk.isHttpError(error) && error.status >= 400) {
    const text = error.data.text
    const body = typeof text === "string" ? text : error.message.replace(/^Error POSTing to endpoint: /, "")
    return { status: error.status, body: body === "null" ? "" : body }
  }
  const legacy = error instanceof Error ? /^Error POSTing to endpoint \(HTTP (\d{3})\): ?([\s\S]*)$/.exec(error.message) : null
  return legacy === null ? undefined : { status: Number(legacy[1]), body: legacy[2]! }
}

/**
 * The environment of a stdio server: pass-through names, renames and literals. Credentials: every
 * value taken from the host (a pass-through name other than PATH, HOME and the like) or from a
 * `Secret`, and a literal whose variable's name says it is one (`Secret.isCredentialName`); a session
 * secret passed through is the session's to redact.
 */
const stdioEnv = (
  declaration: Extract<Declaration, { readonly transport: "stdio" }>,
  secrets: Readonly<Record<string, Redacted.Redacted<string>>>,
  credentials: Credentials
): Effect.Effect<Record<string, string>, ConnectFailed | AuthSecretUnavailable, ProcessRunner.ProcessRunner> =>
  Effect.gen(function*() {
    const env: Record<string, string> = {}
    const given = declaration.env
    if (given === undefined) return env
    const entries: ReadonlyArray<readonly [string, string | McpAuth.SecretInput]> = Array.isArray(given)
      ? given.map((name: string) => [name, name] as const)
      : Object.entries(given).map(([name, value]) => [name, value] as const)
    for (const [name, value] of entries) {
      if (Array.isArray(given)) {
        // A pass-through name: the session's secret of that name first, then the host's variable.
        const declared = secrets[name]
        const found = declared !== undefined ? Redacted.value(declared) : hostVariable(name)
        if (found === undefined) return yield* new ConnectFailed({ description: `environment variable ${name} is not set (listed in env)` })
        if (declared === undefined && !Secret.isOrdinaryVariable(name)) credentials.add(name, found)
        env[name] = found
      } else if (typeof value === "string") {
        if (Secret.isCredentialName(name)) credentials.add(name, value)
        env[name] = value
      } else {
        const resolved = yield* Effect.mapError(
          McpAuth.resolveSecret(value),
          (e) => new AuthSecretUnavailable({ description: `env ${name}: ${e.description}` })
        )
        credentials.add(name, Redacted.value(resolved))
        env[name] = Redacted.value(resolved)
      }
    }
    return env
  })

/**
 * The transport a declaration asks for, built (not started); a stdio server's process will be the
 * program's `ProcessRunner`'s, owned by the current scope. Its command runs in the declaration's
 * `cwd`, else the process's working directory, with the runner's host allow-list and `env` added.
 */
export const makeTransport = (
  declaration: Declaration,
  secrets: Readonly<Record<string, Redacted.Redacted<string>>>,
  credentials: Credentials
): Effect.Effect<Transport, ConnectFailed | AuthSecretUnavailable | TokenRequestFailed, ProcessRunner.ProcessRunner | Scope.Scope> =>
  Effect.gen(function*() {
    const maxMessageBytes = declaration.maxMessageBytes ?? MAX_MESSAGE_BYTES
    if (declaration.transport === "stdio") {
      const env = yield* stdioEnv(declaration, secrets, credentials)
      const command = ProcessRunner.make(declaration.command, declaration.args ?? [], { cwd: declaration.cwd ?? ".", env })
      return bound(new StdioProcess(yield* ProcessRunner.ProcessRunner, yield* Scope.Scope, command, maxMessageBytes))
    }
    const url = yield* Effect.try({
      try: () => new URL(declaration.url),
      catch: () => new ConnectFailed({ description: `${declaration.url} is not a URL` })
    })
    const provider = declaration.auth?._tag === "OAuth" ? declaration.auth.provider : undefined
    if (provider !== undefined) {
      // A provider's client secret, when it has one now (a dynamic registration's comes later).
      const client = yield* Effect.tryPromise(() => Promise.resolve(provider.clientInformation())).pipe(Effect.orElseSucceed(() => undefined))
      if (client?.client_secret !== undefined) credentials.add("client_secret", client.client_secret)
    }
    // The connection's own pool: its sockets close with its scope (the global pool would keep
    // them open, idle, after the session is gone).
    const undici: { readonly Agent: typeof Agent } = yield* Effect.promise(() => import("undici"))
    const pool = new undici.Agent()
    yield* Scope.addFinalizer(yield* Scope.Scope, Effect.promise(() => pool.destroy()))
    // `dispatcher` is undici's own option of Node's `fetch` (the same major as the pool's).
    const pooled: FetchLike = (input, init) => fetch(input, Object.assign({ dispatcher: pool }, init))
    const base = boundedFetch(pooled, maxMessageBytes, credentials)
    const fetchFn = yield* McpAuth.fetchFor(declaration.auth, base, (what, value) => credentials.add(what, value))
    // A header is a credential by its name, as an env literal is (`X-Api-Key`, `Authorization`).
    for (const [name, value] of Object.entries(declaration.headers ?? {})) if (Secret.isCredentialName(name)) credentials.add(name, value)
    const requestInit = { headers: { ...declaration.headers } }
    const options = { fetch: fetchFn, requestInit, ...(provider === undefined ? {} : { authProvider: provider }) }
    // The SSE transport sends `requestInit`'s headers and uses `fetch` on its GET stream too.
    const { SSEClientTransport, StreamableHTTPClientTransport } = (yield* Effect.promise(Sdk.load)).client
    return bound(declaration.transport === "sse" ? new SSEClientTransport(url, options) : new StreamableHTTPClientTransport(url, options))
  })

/** What fetch's system error codes mean, for whoever reads why a server could not be reached. */
const CONNECTION_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ENOTFOUND: "unknown host",
  EAI_AGAIN: "the host name could not be resolved",
  ETIMEDOUT: "connection timed out",
  EHOSTUNREACH: "host unreachable",
  UND_ERR_SOCKET: "the connection closed"
}

/**
 * `could not reach <url>: <why> (<code>)` when `error` is a connection failure: fetch's own (refused,
 * unknown host, reset) says nothing of where it went, and the legacy SSE transport only quotes it.
 */
export const unreachableBecause = (error: unknown, url: string): string | undefined => {
  const code = error instanceof TypeError
    ? connectionCode(error)
    : error instanceof Error
    ? Object.keys(CONNECTION_CODES).find((known) => error.message.includes("fetch failed") && error.message.includes(` ${known}`))
    : undefined
  return code === undefined ? undefined : `could not reach ${url}: ${CONNECTION_CODES[code] ?? "the connection failed"} (${code})`
}

/** What failed under the SDK's `server/discover` probe (a network error, an HTTP status), when the probe failed. */
const probed = (error: unknown): unknown =>
  Sdk.isSdkError(error, "EraNegotiationFailed") && error.cause !== undefined ? error.cause : error

/** Why a transport failed to start or answer during the handshake, in one line. */
export const startFailure = (transport: Transport, failure: unknown, url: string | undefined): string => {
  const error = probed(failure)
  if (transport instanceof StdioProcess) {
    const spawnError = transport.spawnError
    if (spawnError !== undefined) return spawnError.reason._tag === "SpawnFailed" ? spawnError.reason.description : spawnError.message
    const last = transport.lastError
    if (Deferred.isDoneUnsafe(transport.exited)) return `the server exited during initialize${last === "" ? "" : `: ${last}`}`
  }
  const unreachable = url === undefined ? undefined : unreachableBecause(error, url)
  if (unreachable !== undefined) return unreachable
  const http = httpStatus(error)
  if (url !== undefined && http !== undefined) return `${url} answered HTTP ${http.status}${http.body === "" ? "" : `: ${http.body}`}`
  return describe(error)
}


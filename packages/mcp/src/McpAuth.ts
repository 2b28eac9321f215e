/**
 * McpAuth — how a client proves itself to an HTTP MCP server: an inert description, resolved when
 * a connection starts.
 *
 * `bearer` sends a secret as `Authorization: Bearer …`. `clientCredentials` fetches an OAuth token
 * with the client-credentials grant, caches it for the connection's life and fetches a new one
 * once when the server answers 401 (then the request is sent again, once). `oauth` hands any OAuth
 * client provider of the MCP SDK to its transport (discovery, registration, PKCE, refresh are the
 * SDK's); `headless` is a provider that needs no browser. Secret values never reach an error's text.
 * This module refuses interactive flows: nothing here opens a browser or waits for a person.
 */
import type { OAuthClientProvider } from "@modelcontextprotocol/client"
import type { FetchLike } from "@modelcontextprotocol/client"
import type { ProcessRunner, Secret } from "@condukt/core"
import { Effect, Redacted, Schema } from "effect"
import { HeadlessProvider, type HeadlessOptions } from "./internal/headlessProvider.ts"
import { AuthSecretUnavailable, TokenRequestFailed } from "./McpError.ts"

/** A secret ref (1Password's runs on the program's `ProcessRunner`) or, for tests and local servers, the value itself. */
export type SecretInput = Secret.Secret<ProcessRunner.ProcessRunner> | string

/** @since 0.1.0 @category models */
export type McpAuth =
  | { readonly _tag: "Bearer"; readonly token: SecretInput }
  | {
    readonly _tag: "ClientCredentials"
    readonly tokenUrl: SecretInput
    readonly clientId: SecretInput
    readonly clientSecret: SecretInput
    readonly scope: string | undefined
  }
  | { readonly _tag: "OAuth"; readonly provider: OAuthClientProvider }

/**
 * `Authorization: Bearer <token>` on every request.
 *
 * @since 0.1.0
 * @category constructors
 */
export const bearer = (token: SecretInput): McpAuth => ({ _tag: "Bearer", token })

/**
 * OAuth client credentials: a token from `tokenUrl` (client id and secret as HTTP Basic), cached,
 * fetched again once on a 401. Each of the three is a value or a secret ref
 * (`clientId: Secret.env("CLIENT_ID")`), resolved when a connection starts.
 *
 * @since 0.1.0
 * @category constructors
 */
export const clientCredentials = (options: {
  readonly tokenUrl: SecretInput
  readonly clientId: SecretInput
  readonly clientSecret: SecretInput
  readonly scope?: string | undefined
}): McpAuth => ({
  _tag: "ClientCredentials",
  tokenUrl: options.tokenUrl,
  clientId: options.clientId,
  clientSecret: options.clientSecret,
  scope: options.scope
})

/**
 * Any OAuth client provider of the MCP SDK (`@modelcontextprotocol/client`), used by the transport
 * as the SDK does. A provider that obtains the authorization response without a browser exposes
 * its redirect's parameters as `authorizationResponse()` (as `headless` does; the code and `iss`),
 * or the code alone as `authorizationCode()`: the client then finishes the authorization and sends
 * the request again, once (a 401, or a 403 `insufficient_scope` asking for more scopes mid-session).
 *
 * @since 0.1.0
 * @category constructors
 */
export const oauth = (provider: OAuthClientProvider): McpAuth => ({ _tag: "OAuth", provider })

/**
 * An OAuth client provider that needs no browser: pre-registered or dynamically registered
 * clients, the client-credentials grant when given a secret or a private key (`private_key_jwt`)
 * and no redirect, and the
 * authorization-code grant with PKCE against servers that approve without a person (the code is
 * read from the redirect the authorization endpoint answers with). Tokens and registrations live
 * in memory, for the provider's life; the SDK refreshes tokens with it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const headless = (options: HeadlessOptions = {}): OAuthClientProvider => new HeadlessProvider(options)

export type { HeadlessOptions }

// ---------------------------------------------------------------------------------------------
// Resolving (internal to the package's client)
// ---------------------------------------------------------------------------------------------

export const resolveSecret = (
  input: SecretInput
): Effect.Effect<Redacted.Redacted<string>, AuthSecretUnavailable, ProcessRunner.ProcessRunner> =>
  typeof input === "string"
    ? Effect.succeed(Redacted.make(input))
    : Effect.mapError(input.resolve, (error) => new AuthSecretUnavailable({ description: error.reason.description }))

const TokenResponse = Schema.Struct({ access_token: Schema.String })

/** What a token request sends, its secret inputs resolved. */
interface TokenRequest {
  readonly tokenUrl: string
  readonly clientId: string
  readonly secret: Redacted.Redacted<string>
  readonly scope: string | undefined
}

const fetchToken = (fetchFn: FetchLike, request: TokenRequest): Effect.Effect<string, TokenRequestFailed> => {
  const failed = (description: string) => new TokenRequestFailed({ tokenUrl: request.tokenUrl, description })
  const body = new URLSearchParams({ grant_type: "client_credentials" })
  if (request.scope !== undefined) body.set("scope", request.scope)
  const basic = Buffer.from(`${encodeURIComponent(request.clientId)}:${encodeURIComponent(Redacted.value(request.secret))}`).toString("base64")
  return Effect.tryPromise({
    try: (signal) =>
      fetchFn(request.tokenUrl, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json", authorization: `Basic ${basic}` },
        body,
        signal
      }),
    catch: (cause) => failed(cause instanceof Error ? cause.message : String(cause))
  }).pipe(
    Effect.flatMap((response) =>
      response.ok
        ? Effect.tryPromise({ try: () => response.json(), catch: () => failed("the answer is not JSON") })
        : Effect.fail(failed(`HTTP ${response.status}`))
    ),
    Effect.flatMap((json) =>
      Effect.mapError(Schema.decodeUnknownEffect(TokenResponse)(json), () => failed("the answer has no access_token"))
    ),
    Effect.map((token) => token.access_token)
  )
}

/**
 * The `fetch` a transport uses for `auth`: bearer and client credentials add the header (the
 * latter with its cache and one refresh on 401); OAuth leaves it to the SDK's provider. Each
 * secret it resolves is handed to `record` (`bearer_token`, `client_secret`) before it is used.
 */
export const fetchFor = (
  auth: McpAuth | undefined,
  base: FetchLike,
  record: (what: string, value: string) => void = () => {}
): Effect.Effect<FetchLike, AuthSecretUnavailable | TokenRequestFailed, ProcessRunner.ProcessRunner> =>
  Effect.gen(function*() {
    if (auth === undefined || auth._tag === "OAuth") return base
    const withToken = (token: string): FetchLike => (url, init) => {
      const headers = new Headers(init?.headers)
      headers.set("authorization", `Bearer ${token}`)
      return base(url, { ...init, headers })
    }
    if (auth._tag === "Bearer") {
      const token = Redacted.value(yield* resolveSecret(auth.token))
      record("bearer_token", token)
      return withToken(token)
    }
    const tokenUrl = Redacted.value(yield* resolveSecret(auth.tokenUrl))
    const clientId = Redacted.value(yield* resolveSecret(auth.clientId))
    const secret = yield* resolveSecret(auth.clientSecret)
    record("client_secret", Redacted.value(secret))
    const request: TokenRequest = { tokenUrl, clientId, secret, scope: auth.scope }
    let token = yield* fetchToken(base, request)
    // One refresh per 401: the request is sent again once with the new token, then its answer stands.
    return (url, init) =>
      withToken(token)(url, init).then((response) =>
        response.status !== 401
          ? response
          : Effect.runPromise(fetchToken(base, request)).then((fresh) => {
            token = fresh
            return withToken(fresh)(url, init)
          })
      )
  })

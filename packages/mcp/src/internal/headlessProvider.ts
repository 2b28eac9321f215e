/**
 * headlessProvider — an OAuth client provider of the MCP SDK that needs no browser.
 *
 * The SDK does the protocol (discovery, registration, PKCE, token requests, refresh); this class
 * only keeps its state in memory and answers the one step that usually needs a person: it reads
 * the authorization code from the redirect the authorization endpoint answers with, which works
 * with servers that approve a known client without asking. With a client secret or a private key
 * and no redirect URL it asks for the client-credentials grant instead, authenticating with the
 * secret or with a JWT the key signs (`private_key_jwt`); with a workload's JWT (`assertion`), the
 * JWT-bearer grant. The SDK's interface is promise-based, so
 * this is a plain class; it holds no secret in anything it prints.
 */
import type { AddClientAuthentication, OAuthClientProvider } from "@modelcontextprotocol/client"
import type {
  DpopSession,
  OAuthClientInformationContext,
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthDiscoveryState,
  OAuthTokens,
  StoredOAuthClientInformation
} from "@modelcontextprotocol/client"
import { Effect } from "effect"
import * as Sdk from "./sdk.ts"

/** @since 0.1.0 @category models */
export interface HeadlessOptions {
  /** A pre-registered client; without it, the client registers dynamically (or by metadata URL). */
  readonly clientId?: string | undefined
  readonly clientSecret?: string | undefined
  /**
   * A PKCS#8 PEM private key: the client authenticates at the token endpoint with a JWT it signs
   * (`private_key_jwt`, issuer and subject the client id) instead of a secret.
   */
  readonly privateKey?: string | undefined
  /**
   * A workload identity token (a JWT the platform issued this workload): exchanged for an access
   * token with the JWT-bearer grant (RFC 7523, SEP-1933), the client id given, no secret.
   */
  readonly assertion?: string | undefined
  /**
   * Sender-constrained tokens (DPoP, RFC 9449, SEP-1932): a key pair made for the provider's life
   * signs a proof into each token request and each request to the server, which then sends the
   * token with the `DPoP` scheme instead of `Bearer`.
   */
  readonly dpop?: boolean | undefined
  /** The JWT's signing algorithm for `privateKey` (default ES256). */
  readonly signingAlgorithm?: string | undefined
  /** Where the authorization server redirects with the code (default http://localhost:3000/callback). */
  readonly redirectUrl?: string | undefined
  readonly scope?: string | undefined
  readonly clientName?: string | undefined
  /** A URL-formatted client id (client ID metadata document), when the server supports it. */
  readonly clientMetadataUrl?: string | undefined
}

const DEFAULT_REDIRECT = "http://localhost:3000/callback"

/** The JWT-bearer grant (RFC 7523). */
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"

/** The key of the last registration or tokens saved, whichever the issuer (an issuer is a URL: never empty). */
const LAST = ""

export class HeadlessProvider implements OAuthClientProvider {
  private readonly options: HeadlessOptions
  /** A pre-registered client, the same at every authorization server. */
  private readonly registered: OAuthClientInformationMixed | undefined
  /** Dynamic registrations and tokens, by the authorization server's issuer (SEP-2352: a new server, a new registration). */
  private readonly clients = new Map<string, OAuthClientInformationMixed>()
  private readonly saved = new Map<string, OAuthTokens>()
  private verifier: string | undefined
  private callback: URLSearchParams | undefined
  private discovered: OAuthDiscoveryState | undefined
  private authorizing = false
  private proofs: Promise<DpopSession> | undefined
  clientMetadataUrl?: string
  addClientAuthentication?: AddClientAuthentication

  constructor(options: HeadlessOptions) {
    this.options = options
    if (options.clientMetadataUrl !== undefined) this.clientMetadataUrl = options.clientMetadataUrl
    if (options.privateKey !== undefined && options.clientId !== undefined) {
      const jwt = { issuer: options.clientId, subject: options.clientId, privateKey: options.privateKey, alg: options.signingAlgorithm ?? "ES256" }
      // The SDK's helper, once the SDK is loaded (it is by the time a token is asked for: `internal/sdk`).
      let sign: AddClientAuthentication | undefined
      this.addClientAuthentication = async (...args) => {
        sign ??= (await Sdk.load()).client.createPrivateKeyJwtAuth(jwt)
        return sign(...args)
      }
    }
    this.registered = options.clientId === undefined
      ? undefined
      : { client_id: options.clientId, ...(options.clientSecret === undefined ? {} : { client_secret: options.clientSecret }) }
  }

  /** Client credentials (a secret or a private key) or a workload's JWT, and no redirect. */
  private get machine(): boolean {
    const { assertion, clientSecret, privateKey, redirectUrl } = this.options
    return (clientSecret !== undefined || privateKey !== undefined || assertion !== undefined) && redirectUrl === undefined
  }

  get redirectUrl(): string | undefined {
    return this.machine ? undefined : this.options.redirectUrl ?? DEFAULT_REDIRECT
  }

  get clientMetadata(): OAuthClientMetadata {
    return this.machine
      ? {
        client_name: this.options.clientName ?? "condukt",
        redirect_uris: [],
        grant_types: [this.options.assertion === undefined ? "client_credentials" : JWT_BEARER],
        token_endpoint_auth_method: this.options.privateKey !== undefined
          ? "private_key_jwt"
          : this.options.clientSecret !== undefined
          ? "client_secret_basic"
          : "none",
        ...(this.options.scope === undefined ? {} : { scope: this.options.scope })
      }
      : {
        client_name: this.options.clientName ?? "condukt",
        redirect_uris: [this.options.redirectUrl ?? DEFAULT_REDIRECT],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        ...(this.options.scope === undefined ? {} : { scope: this.options.scope })
      }
  }

  // Asked without an issuer (a request's Authorization header), the last saved answers.

  clientInformation(ctx?: OAuthClientInformationContext): StoredOAuthClientInformation | undefined {
    // A pre-registered client is bound to whichever authorization server it is asked for.
    if (this.registered !== undefined) return ctx === undefined ? this.registered : { ...this.registered, issuer: ctx.issuer }
    return this.clients.get(ctx?.issuer ?? LAST)
  }

  saveClientInformation(info: OAuthClientInformationMixed, ctx?: OAuthClientInformationContext): void {
    if (ctx !== undefined) this.clients.set(ctx.issuer, info)
    this.clients.set(LAST, info)
  }

  tokens(ctx?: OAuthClientInformationContext): OAuthTokens | undefined {
    return this.saved.get(ctx?.issuer ?? LAST)
  }

  saveTokens(tokens: OAuthTokens, ctx?: OAuthClientInformationContext): void {
    this.authorizing = false
    if (ctx !== undefined) this.saved.set(ctx.issuer, tokens)
    this.saved.set(LAST, tokens)
  }

  /** Follows the authorization URL one step and keeps the code the redirect carries. */
  redirectToAuthorization(url: URL): Promise<void> {
    this.authorizing = true
    return Effect.runPromise(
      Effect.tryPromise({
        try: () => fetch(url, { redirect: "manual" }),
        catch: (cause) => new Error(`the authorization endpoint could not be reached: ${String(cause)}`)
      }).pipe(
        Effect.flatMap((response) => {
          const location = response.headers.get("location")
          const callback = location === null ? undefined : new URL(location, url).searchParams
          if (callback?.get("code") == null) {
            return Effect.fail(new Error(`the authorization endpoint wants a person (HTTP ${response.status}, no code in a redirect)`))
          }
          this.callback = callback
          return Effect.void
        })
      )
    )
  }

  /**
   * The redirect's parameters `redirectToAuthorization` obtained (the code, and the issuer `iss`
   * the client checks against the authorization server it started with), once.
   */
  authorizationResponse(): URLSearchParams | undefined {
    const callback = this.callback
    this.callback = undefined
    return callback
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovered = state
  }

  /**
   * Only while an authorization is under way (from the redirect to the tokens): the callback leg
   * checks the response against the server it started with, and a later 401 discovers again, so a
   * resource whose authorization server changed is followed there (SEP-2352).
   */
  discoveryState(): OAuthDiscoveryState | undefined {
    return this.authorizing ? this.discovered : undefined
  }

  /** The DPoP session (one key pair for the provider's life), when `dpop` is on. */
  dpop(): Promise<DpopSession> | undefined {
    if (this.options.dpop !== true) return undefined
    this.proofs ??= Sdk.load().then((sdk) => sdk.client.DpopSession.create())
    return this.proofs
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier
  }

  codeVerifier(): string {
    return this.verifier ?? ""
  }

  prepareTokenRequest(scope?: string): URLSearchParams | undefined {
    if (!this.machine) return undefined
    const assertion = this.options.assertion
    const params = new URLSearchParams(assertion === undefined ? { grant_type: "client_credentials" } : { grant_type: JWT_BEARER, assertion })
    const wanted = scope ?? this.options.scope
    if (wanted !== undefined) params.set("scope", wanted)
    return params
  }

  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): void {
    if (scope === "all" || scope === "tokens") this.saved.clear()
    if (scope === "all" || scope === "verifier") this.verifier = undefined
    if (scope === "all" || scope === "client") this.clients.clear()
    if (scope === "all" || scope === "discovery") this.discovered = undefined
  }
}

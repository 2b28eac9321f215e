/**
 * Auth — who is asking. Every request but `GET /health` carries a bearer token; an `Authenticate`
 * function turns it into a principal (a stable name) or refuses it, and every handler then acts for
 * that principal: the sessions it started are its own, and it answers approvals as itself.
 *
 * `bearer` maps fixed tokens to principals (compared in constant time); any other scheme is an
 * `Authenticate` of the program's (a JWT check, a session cookie looked up in a database), an Effect
 * with the request at hand.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { TooManyRequests, Unauthorized } from "./ServerError.ts"

/**
 * The principal a request acts for.
 *
 * @since 0.1.0
 * @category services
 */
export class Principal extends Context.Service<Principal, { readonly id: string }>()("@condukt/server/Principal") {}

/**
 * Turns a request's bearer token into its principal's name, or refuses it.
 *
 * @since 0.1.0
 * @category models
 */
export type Authenticate = (
  token: Redacted.Redacted<string>,
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<string, Unauthorized | TooManyRequests>

/**
 * The API's authentication middleware: a bearer token, turned into the `Principal`.
 *
 * @since 0.1.0
 * @category middleware
 */
export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: Principal }>()("@condukt/server/Authentication", {
  security: { bearer: HttpApiSecurity.bearer },
  error: [Unauthorized, TooManyRequests]
}) {}

const refused = new Unauthorized({ message: "missing or unknown bearer token: send `Authorization: Bearer <token>`" })

/**
 * Fixed tokens, each naming its principal (`{ "tok-…": "alice" }`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const bearer = (tokens: Readonly<Record<string, string>>): Authenticate => {
  const known = Object.entries(tokens).map(([token, principal]) => ({ token: encoder.encode(token), principal }))
  return (token) =>
    Effect.suspend(() => {
      const given = encoder.encode(Redacted.value(token))
      let principal: string | undefined
      // Every token is compared whole, whatever matched, so the time taken says nothing about which.
      for (const entry of known) {
        if (equal(entry.token, given) && principal === undefined) principal = entry.principal
      }
      return principal === undefined ? Effect.fail(refused) : Effect.succeed(principal)
    })
}

const encoder = new TextEncoder()

/** Whether `a` and `b` hold the same bytes, in a time that depends on their lengths only. */
const equal = (a: Uint8Array, b: Uint8Array): boolean => {
  let difference = a.length ^ b.length
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ (b[i % Math.max(b.length, 1)] ?? 0)
  return difference === 0
}

/**
 * The middleware with `authenticate` deciding.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (authenticate: Authenticate): Layer.Layer<Authentication> =>
  Layer.succeed(Authentication, Authentication.of({
    bearer: (effect, { credential }) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        Effect.flatMap(
          Redacted.value(credential).length === 0 ? Effect.fail(refused) : authenticate(credential, request),
          (id) => Effect.provideService(effect, Principal, { id })
        ))
  }))

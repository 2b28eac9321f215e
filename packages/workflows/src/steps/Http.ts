/**
 * Http — an `http` step: one request (no retry), a string body sent as it is and any other body
 * as JSON. The result is `{ status, headers, body }` with a JSON body decoded. Fails the run when
 * the request cannot be made, or when `expect_status` is given and the status is not in it.
 */
import { Effect, Option } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import type { HttpMethod } from "effect/http/HttpMethod"
import type * as Expression from "../Expression.ts"
import { failed, type Fields } from "./StepContext.ts"

/** @since 0.1.0 @category constructors */
export const run = Effect.fnUntraced(function*(id: string, fields: Fields) {
  const method = fields["method"] as HttpMethod
  const url = String(fields["url"])
  let request = HttpClientRequest.make(method)(url, {
    headers: (fields["headers"] ?? {}) as Readonly<Record<string, string>>
  })
  const body = fields["body"]
  if (body !== undefined && body !== null) {
    request = typeof body === "string" ? HttpClientRequest.bodyText(request, body) : HttpClientRequest.bodyJsonUnsafe(request, body)
  }
  const provided = yield* Effect.serviceOption(HttpClient.HttpClient)
  const send = HttpClient.execute(request)
  const exchange = Effect.gen(function*() {
    const response = yield* (Option.isSome(provided) ? Effect.provideService(send, HttpClient.HttpClient, provided.value) : Effect.provide(send, FetchHttpClient.layer))
    const text = yield* response.text
    return { status: response.status, headers: { ...response.headers } as Record<string, string>, text }
  })
  const response = yield* Effect.mapError(exchange, (error) => failed("HttpFailed", id, `${method} ${url} failed: ${error.message}`, error))
  let decoded: Expression.Value = response.text
  const type = response.headers["content-type"] ?? ""
  if (type.includes("json") && response.text !== "") {
    decoded = yield* Effect.orElseSucceed(Effect.try(() => JSON.parse(response.text) as Expression.Value), () => response.text)
  }
  const expect = fields["expect_status"]
  const expected = typeof expect === "number" ? [expect] : Array.isArray(expect) ? expect : undefined
  if (expected !== undefined && !expected.includes(response.status)) {
    return yield* failed("HttpUnexpectedStatus", id, `${method} ${url} answered ${response.status}, expected ${expected.join(" or ")}`)
  }
  return { status: response.status, headers: response.headers, body: decoded }
})

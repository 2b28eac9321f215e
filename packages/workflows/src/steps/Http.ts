/**
 * Http — an `http` step: one request (no retry), a string body sent as it is and any other body
 * as JSON. The result is `{ status, headers, body }` with a JSON body decoded. Fails the run when
 * the request cannot be made (the reason named: a refused connection, a host DNS does not know),
 * when `expect_status` is given and the status is not in it, when the whole exchange (connection,
 * headers and body) takes longer than `timeout` seconds (default `DEFAULT_TIMEOUT_SECONDS`), and
 * when the body passes `max_body_bytes` (default `DEFAULT_MAX_BODY_BYTES`): the body is read in
 * chunks and the read stops there, so no server can make the run hold more than that, and a cut
 * body never passes for a whole one. A JSON body past `JsonLimits`' nesting or keys fails the step
 * too (`OutputTooLarge`), naming the bound.
 */
import { Duration, Effect, Option, Result, Stream } from "effect"
import * as JsonLimits from "@condukt/core/JsonLimits"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import type { HttpClientError } from "effect/http/HttpClientError"
import type { HttpMethod } from "effect/http/HttpMethod"
import type * as Expression from "../Expression.ts"
import { failed, type Fields } from "./StepContext.ts"

/** Seconds one exchange (connect, send, headers, the whole body) may take unless the step says `timeout`. */
export const DEFAULT_TIMEOUT_SECONDS = 30

/** Bytes of a response body read unless the step says `max_body_bytes` (10 MiB). */
export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024

const codeOf = (value: unknown): string | undefined =>
  typeof value === "object" && value !== null && "code" in value && typeof value.code === "string" ? value.code : undefined

/** The first error code down a chain of causes (fetch's `TypeError` → undici's → the socket's). */
const errnoOf = (error: unknown): { readonly code: string | undefined; readonly message: string } => {
  let current: unknown = error
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    const code = codeOf(current)
    if (code !== undefined) return { code, message: current instanceof Error ? current.message : code }
    current = "cause" in current ? current.cause : undefined
  }
  return { code: undefined, message: error instanceof Error ? error.message : String(error) }
}

/** Why a request could not be made, in words that name the host: not fetch's `Transport error`. */
export const describeTransport = (url: string, error: HttpClientError): string => {
  if (error.reason._tag !== "TransportError") return error.message
  const parsed = URL.parse(url)
  const host = parsed === null ? url : parsed.hostname
  const port = parsed === null ? "" : parsed.port !== "" ? parsed.port : parsed.protocol === "https:" ? "443" : "80"
  const hostPort = `${host}:${port}`
  const { code, message } = errnoOf(error.reason.cause)
  switch (code) {
    case "ECONNREFUSED":
      return `connection refused by ${hostPort}`
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
      return `cannot resolve the host ${host} (DNS: ${code})`
    case "ECONNRESET":
    case "EPIPE":
    case "UND_ERR_SOCKET":
      return `the connection to ${hostPort} was closed before a complete answer`
    case "ETIMEDOUT":
    case "UND_ERR_CONNECT_TIMEOUT":
      return `connecting to ${hostPort} timed out`
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `no route to ${hostPort}`
    default:
      // One line, bounded: what the platform said, with its code.
      return `${message.split("\n")[0]!.slice(0, 200)}${code === undefined ? "" : ` (${code})`} (${hostPort})`
  }
}

const positive = (value: Expression.Value | undefined, fallback: number) =>
  typeof value === "number" && value > 0 ? value : fallback

/** @since 0.1.0 @category constructors */
export const run = Effect.fnUntraced(function*(id: string, fields: Fields) {
  const method = fields["method"] as HttpMethod
  const url = String(fields["url"])
  const seconds = positive(fields["timeout"], DEFAULT_TIMEOUT_SECONDS)
  const maxBytes = positive(fields["max_body_bytes"], DEFAULT_MAX_BODY_BYTES)
  let request = HttpClientRequest.make(method)(url, {
    headers: (fields["headers"] ?? {}) as Readonly<Record<string, string>>
  })
  const body = fields["body"]
  if (body !== undefined && body !== null) {
    request = typeof body === "string" ? HttpClientRequest.bodyText(request, body) : HttpClientRequest.bodyJsonUnsafe(request, body)
  }
  const provided = yield* Effect.serviceOption(HttpClient.HttpClient)
  // Scoped: when the exchange ends, fails or times out, the request is aborted and its socket freed.
  const send = Effect.gen(function*() {
    return yield* HttpClient.withScope(yield* HttpClient.HttpClient).execute(request)
  })
  const tooLarge = () =>
    failed(
      "OutputTooLarge",
      id,
      `${method} ${url} answered with a body larger than ${maxBytes} bytes (max_body_bytes); raise max_body_bytes on the step to accept it`
    )
  const exchange = Effect.gen(function*() {
    const response = yield* (Option.isSome(provided) ? Effect.provideService(send, HttpClient.HttpClient, provided.value) : Effect.provide(send, FetchHttpClient.layer))
    const declared = Number(response.headers["content-length"] ?? Number.NaN)
    if (declared > maxBytes) return yield* tooLarge()
    let total = 0
    const text = yield* response.stream.pipe(
      Stream.tap((chunk) => {
        total += chunk.length
        return total > maxBytes ? Effect.fail(tooLarge()) : Effect.void
      }),
      Stream.decodeText(),
      Stream.mkString
    )
    return { status: response.status, headers: { ...response.headers } as Record<string, string>, text }
  })
  const response = yield* exchange.pipe(
    Effect.scoped,
    Effect.mapError((error) =>
      error._tag === "WorkflowFailed"
        ? error
        : failed("HttpFailed", id, `${method} ${url} failed: ${describeTransport(url, error)}`, error)
    ),
    Effect.timeoutOrElse({
      duration: Duration.seconds(seconds),
      orElse: () =>
        Effect.fail(
          failed("TimedOut", id, `no complete answer from ${method} ${url} within ${seconds}s (timeout); set timeout = <seconds> on the step to wait longer`)
        )
    })
  )
  let decoded: Expression.Value = response.text
  const type = response.headers["content-type"] ?? ""
  if (type.includes("json") && response.text !== "") {
    // Within JsonLimits' nesting and keys (`max_body_bytes` already bounds the size): a body nested
    // 100,000 deep would overflow every later walk of the step's output. Not JSON: kept as text.
    const parsed = JsonLimits.parse(response.text, { ...JsonLimits.defaults, maxStringChars: Infinity, maxChars: Infinity })
    if (Result.isSuccess(parsed)) decoded = parsed.success as Expression.Value
    else if (parsed.failure.reason !== "NotJson") {
      return yield* failed(
        "OutputTooLarge",
        id,
        `${method} ${url} answered with JSON that holds ${parsed.failure.description}, past what a step takes; ask the server for less, or for text`
      )
    }
  }
  const expect = fields["expect_status"]
  const expected = typeof expect === "number" ? [expect] : Array.isArray(expect) ? expect : undefined
  if (expected !== undefined && !expected.includes(response.status)) {
    return yield* failed("HttpUnexpectedStatus", id, `${method} ${url} answered ${response.status}, expected ${expected.join(" or ")}`)
  }
  return { status: response.status, headers: response.headers, body: decoded }
})

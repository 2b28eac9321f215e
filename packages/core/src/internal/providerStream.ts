/**
 * providerStream — one streamed model request over HTTP, for every vendor: POST a JSON body, read
 * the answer as Server-Sent Events as it arrives (never buffered whole), hand each event to the
 * vendor's decoder, and retry what may be retried.
 *
 * The vendor module builds the URL, headers and body and decodes events into parts; this module
 * owns everything around that: the status check and its classification, the idle timeout, the
 * retry policy (only before the first part left the stream: what a session has seen cannot be
 * taken back), and the mapping of every failure to a `ModelError` that carries no request detail.
 * Interrupting the stream aborts the HTTP request (undici closes the connection).
 */
import { Cause, Clock, Duration, Effect, Pull, Random, Redacted, Stream } from "effect"
import type { Sse } from "effect/encoding"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import * as Model from "../Model.ts"
import * as sse from "../providers/internal/sse.ts"
import * as Provider from "../providers/Provider.ts"
import * as providerFailure from "./providerFailure.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * Turns one attempt's events into parts. `event` appends to `out` and returns a reason to fail
 * with (an `error` event); `end` runs once the body ended, for what the vendor kept back (tool
 * calls completed only at the end) or to say the stream stopped short.
 */
export interface Decoder {
  readonly event: (event: Sse.Event, out: Array<Model.Part>) => Model.ModelErrorReason | undefined
  readonly end: (out: Array<Model.Part>) => Model.ModelErrorReason | undefined
}

/** One request as a vendor module describes it. */
export interface Call {
  /** The provider's name (`anthropic`), for errors. */
  readonly provider: string
  /** The whole `provider:model` string, for `ModelError.model`. */
  readonly model: string
  readonly url: string
  /** Sent as they are, after the settings' own headers. */
  readonly headers: Readonly<Record<string, string>>
  /** The secret header (`x-api-key`, `authorization`), its value read only when the request is sent. */
  readonly auth: { readonly header: string; readonly prefix: string; readonly key: Redacted.Redacted<string> } | undefined
  /** The JSON body. */
  readonly body: unknown
  /** A fresh decoder for each attempt. */
  readonly decoder: () => Decoder
}

/** What a provider was configured with, defaults filled in. */
export interface Settings {
  readonly http: HttpClient.HttpClient
  readonly retry: Provider.RetryPolicy
  readonly idleTimeout: Duration.Duration
  readonly headers: Readonly<Record<string, string>>
}

/** The most bytes of an error response read for its message. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/** The settings a provider's layer runs with. */
export const settings = (http: HttpClient.HttpClient, options: Provider.Options | undefined): Settings => ({
  http,
  retry: Provider.retryPolicy(options?.retry),
  idleTimeout: options?.idleTimeout === undefined
    ? Provider.DEFAULT_IDLE_TIMEOUT
    : Duration.fromInputUnsafe(options.idleTimeout),
  headers: options?.headers ?? {}
})

/** `JSON.parse` that says when the text is not JSON instead of throwing. */
export const parseJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** The body of a refusal, bounded: a hostile or broken server may send an endless one. */
const errorBody = (response: HttpClientResponse.HttpClientResponse): Effect.Effect<string> => {
  let size = 0
  const decoder = new TextDecoder()
  return response.stream.pipe(
    Stream.takeWhile((chunk) => (size += chunk.length) <= MAX_ERROR_BODY_BYTES || size - chunk.length === 0),
    Stream.runFold(() => "", (text, chunk: Uint8Array) => text + decoder.decode(chunk, { stream: true })),
    Effect.orElseSucceed(() => "")
  )
}

const headersOf = (response: HttpClientResponse.HttpClientResponse): Record<string, string | undefined> =>
  response.headers as Record<string, string | undefined>

/** One attempt: the request, its status checked, its body decoded event by event. */
const attempt = (settings: Settings, call: Call, request: HttpClientRequest.HttpClientRequest, emitted: { value: boolean }) => {
  const fail = (reason: Model.ModelErrorReason) => new Model.ModelError({ model: call.model, reason })
  const network = (error: { readonly message: string; readonly cause?: unknown }) =>
    fail(new Model.Network({ provider: call.provider, description: describeTransport(error) }))
  const idle = () =>
    fail(new Model.Timeout({
      provider: call.provider,
      description: `no data for ${Duration.format(settings.idleTimeout)} (the idle timeout)`
    }))

  const response = settings.http.execute(request).pipe(
    Effect.mapError(network),
    Effect.timeoutOrElse({ duration: settings.idleTimeout, orElse: () => Effect.fail(idle()) }),
    Effect.flatMap((response) =>
      response.status >= 200 && response.status < 300 ? Effect.succeed(response) : Effect.flatMap(
        Effect.zip(errorBody(response), Clock.currentTimeMillis),
        ([text, now]) =>
          Effect.fail(fail(providerFailure.classify(
            call.provider,
            response.status,
            providerFailure.fromBody(response.status, text),
            providerFailure.retryAfter(headersOf(response), now)
          )))
      )
    )
  )

  const bytes = Stream.unwrap(Effect.map(response, (r) => r.stream)).pipe(
    Stream.mapError((error) => (error._tag === "ModelError" ? error : network(error))),
    Stream.timeoutOrElse({ duration: settings.idleTimeout, orElse: () => Stream.fail(idle()) })
  )

  return Stream.transformPull(bytes, (pull) =>
    Effect.sync(() => {
      const decoder = call.decoder()
      const text = new TextDecoder()
      let out: Array<Model.Part> = []
      let failure: Model.ModelErrorReason | undefined
      let ended = false
      const parser = sse.makeParser((event) => {
        if (failure === undefined) failure = decoder.event(event, out)
      })
      const feed = (chunk: string) => {
        if (!parser.feed(chunk)) {
          failure ??= new Model.ProviderFailed({ description: `${call.provider}: an event of the stream is too large`, retryable: false })
        }
      }
      const next: Pull.Pull<readonly [Model.Part, ...Array<Model.Part>], Model.ModelError> = Effect.suspend(() => {
        if (out.length > 0) {
          const parts = out as unknown as readonly [Model.Part, ...Array<Model.Part>]
          out = []
          emitted.value = true
          return Effect.succeed(parts)
        }
        if (failure !== undefined) return Effect.fail(fail(failure))
        if (ended) return Cause.done()
        return pull.pipe(
          Effect.flatMap((chunks) => {
            for (const chunk of chunks) feed(text.decode(chunk, { stream: true }))
            return next
          }),
          Pull.catchDone(() => {
            ended = true
            // A last event not followed by a blank line is incomplete: the stream stopped short.
            feed(text.decode())
            failure ??= decoder.end(out)
            return next
          })
        )
      })
      return next
    }))
}

/** A transport failure's one line: the cause's code and message, never the request's URL or headers. */
const describeTransport = (error: { readonly message: string; readonly cause?: unknown }): string => {
  let cause: unknown = error.cause
  while (typeof cause === "object" && cause !== null) {
    const { code, message } = cause as { code?: unknown; message?: unknown }
    if (typeof code === "string") return typeof message === "string" ? `${code}: ${message}` : code
    cause = (cause as { cause?: unknown }).cause
  }
  return cause instanceof Error ? cause.message : "the connection failed"
}

/**
 * Streams one request's parts, retrying a retryable failure that came before the first part,
 * with the policy's backoff or the provider's `retry-after`.
 */
export const stream = (settings: Settings, call: Call): Stream.Stream<Model.Part, Model.ModelError> => {
  const request = HttpClientRequest.post(call.url).pipe(
    HttpClientRequest.setHeaders({ ...settings.headers, ...call.headers, accept: "text/event-stream" }),
    HttpClientRequest.bodyJsonUnsafe(call.body)
  )
  const auth = call.auth
  const send = auth === undefined
    ? Effect.succeed(request)
    // The key enters the request only here, just before it is sent; nothing keeps the request.
    : Effect.sync(() => HttpClientRequest.setHeader(request, auth.header, `${auth.prefix}${Redacted.value(auth.key)}`))
  const run = (n: number): Stream.Stream<Model.Part, Model.ModelError> =>
    Stream.unwrap(Effect.map(send, (ready) => {
      const emitted = { value: false }
      return attempt(settings, call, ready, emitted).pipe(
        Stream.catch((error) => {
          if (emitted.value || !error.isRetryable || n >= settings.retry.maxAttempts) return Stream.fail(error)
          const wait = error.retryAfter
          if (wait !== undefined && Duration.isGreaterThan(wait, settings.retry.maxRetryAfter)) return Stream.fail(error)
          return Stream.unwrap(Effect.map(Random.next, (jitter) =>
            Stream.fromEffect(Effect.sleep(Provider.retryDelay(settings.retry, n, wait, jitter))).pipe(
              Stream.flatMap(() => run(n + 1))
            )))
        })
      )
    }))
  return run(1)
}

/**
 * providerStream — one streamed model request over HTTP, for every vendor: POST a JSON body, read
 * the answer as Server-Sent Events as it arrives (never buffered whole), hand each event to the
 * vendor's decoder, and retry what may be retried.
 *
 * The vendor module builds the URL, headers and body and decodes events into parts; this module
 * owns everything around that: the status check and its classification, the check that a 200 is
 * a stream of events at all (an HTML login page is not retried as if the network had failed), the
 * bounds on one reply (silence, total time, bytes, tool calls), the attempts retried on the layer's
 * schedule (`ModelRetry`: only before the first part left the stream), and the mapping of
 * every failure to a `ModelError` that carries no request detail but the URL (without user,
 * password or query) where a network failure or a 404 needs it, and whose server-written text is
 * redacted with the model's secrets. Interrupting the stream aborts the HTTP request (undici
 * closes the connection).
 */
import { Cause, Clock, Duration, Effect, Pull, Redacted, Result, Stream } from "effect"
import type { Sse } from "effect/encoding"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import * as JsonLimits from "@condukt/core/JsonLimits"
import * as Model from "@condukt/core/Model"
import * as ModelError from "@condukt/core/ModelError"
import * as ModelRetry from "@condukt/core/ModelRetry"
import * as sse from "./sse.ts"
import * as Provider from "../Provider.ts"
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
  readonly event: (event: Sse.Event, out: Array<Model.Part>) => ModelError.ModelErrorReason | undefined
  readonly end: (out: Array<Model.Part>) => ModelError.ModelErrorReason | undefined
}

/** One request as a vendor module describes it. */
export interface Call {
  /** The provider's name (`anthropic`), for errors. */
  readonly provider: string
  /** The whole `provider:model` string, for `ModelError.model`. */
  readonly model: string
  readonly url: string
  /** The base URL the request went to, named when the server answers with something else than a stream. */
  readonly baseUrl: string
  /** The model's redaction (its key, its credential headers), applied to every text a server wrote before it reaches an error. */
  readonly redact: (text: string) => string
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
  readonly retry: ModelRetry.RetrySchedule
  readonly idleTimeout: Duration.Duration
  readonly streamTimeout: Duration.Duration
  readonly maxReplyBytes: number
  readonly maxToolCalls: number
  readonly headers: Readonly<Record<string, string>>
}

/** The most bytes of an error response read for its message. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024

/** The characters of a body's first line read to tell a stream of events from anything else. */
export const HEAD_CHARS = 256

/** The most characters of a non-stream body's first line quoted in the error. */
export const MAX_QUOTED_LINE = 200

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/** The settings a provider's layer runs with. */
export const settings = (http: HttpClient.HttpClient, options: Provider.Options | undefined): Settings => ({
  http,
  retry: Provider.retrySchedule(options?.retry),
  idleTimeout: options?.idleTimeout === undefined
    ? Provider.DEFAULT_IDLE_TIMEOUT
    : Duration.fromInputUnsafe(options.idleTimeout),
  streamTimeout: options?.streamTimeout === undefined
    ? Provider.DEFAULT_STREAM_TIMEOUT
    : Duration.fromInputUnsafe(options.streamTimeout),
  maxReplyBytes: options?.maxReplyBytes ?? Provider.DEFAULT_MAX_REPLY_BYTES,
  maxToolCalls: options?.maxToolCalls ?? Provider.DEFAULT_MAX_TOOL_CALLS,
  headers: options?.headers ?? {}
})

/**
 * The bounds of one event of a stream: `JsonLimits.defaults` with room for the envelope around a
 * tool call's arguments (Gemini sends them inside the event, six levels down); the arguments
 * themselves are held to the defaults by the session (`Model.toMessage`).
 */
export const EVENT_LIMITS: JsonLimits.Limits = { ...JsonLimits.defaults, maxDepth: JsonLimits.MAX_DEPTH + 8 }

/**
 * JSON within `limits` (`JsonLimits.parse`), saying when the text is not JSON (`refused`
 * undefined) or breaks a bound (`refused` says which) instead of throwing.
 */
export const parseJson = (
  text: string,
  limits: JsonLimits.Limits = JsonLimits.defaults
): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly refused: JsonLimits.JsonLimitError | undefined } => {
  const parsed = JsonLimits.parse(text, limits)
  if (Result.isSuccess(parsed)) return { ok: true, value: parsed.success }
  return { ok: false, refused: parsed.failure.reason === "NotJson" ? undefined : parsed.failure }
}

/**
 * A tool call's arguments from their streamed text: `{}` for none; the text itself when it is not
 * JSON (the tool's decoding tells the model); `JsonLimits.standIn` when it breaks a bound (the
 * tool names the bound); else the value, through `then` (strict mode's nulls taken out).
 */
export const toolInput = (text: string, then: (value: unknown) => unknown = (value) => value): unknown => {
  if (text.trim() === "") return {}
  const parsed = parseJson(text)
  if (parsed.ok) return then(parsed.value)
  return parsed.refused === undefined ? text : JsonLimits.standIn(parsed.refused)
}

/** An event of the stream, within `EVENT_LIMITS`; else the reply's failure (not retried: the same request would stream the same). */
export const parseEvent = (
  provider: string,
  data: string
): { readonly ok: true; readonly value: Record<string, unknown> } | { readonly ok: false; readonly failure: ModelError.ModelErrorReason } => {
  const parsed = parseJson(data, EVENT_LIMITS)
  if (parsed.ok && typeof parsed.value === "object" && parsed.value !== null && !Array.isArray(parsed.value)) {
    return { ok: true, value: parsed.value as Record<string, unknown> }
  }
  const what = !parsed.ok && parsed.refused !== undefined ? `that holds ${parsed.refused.description}` : "that is not JSON"
  return { ok: false, failure: new ModelError.ProviderFailed({ description: `${provider}: the stream sent an event ${what}`, retryable: false }) }
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

/** A line that can open an event stream: a field the parser knows, or a comment. */
const EVENT_LINE = /^(?:(?:data|event|id|retry)(?::|$)|:)/

/**
 * The body's first line, once it is known: a complete line, or `HEAD_CHARS` of one, or what
 * there is when the body ended (`undefined` then for a body with nothing but blanks).
 */
export const firstLine = (head: string, ended: boolean): string | undefined => {
  const text = head.replace(/^[\uFEFF\s]+/, "")
  const end = text.search(/[\r\n]/)
  if (end !== -1) return text.slice(0, end)
  return text.length >= HEAD_CHARS || (ended && text !== "") ? text : undefined
}

/** Whether a body opening with `line` is a stream of events. */
export const isEventLine = (line: string): boolean => EVENT_LINE.test(line)

/** A base URL as an error may name it: no user, password, query or fragment (a key can hide there). */
export const shownUrl = (baseUrl: string): string => baseUrl.replace(/[?#].*$/s, "").replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, "$1")

/** A 200 whose body is not a stream of events: a proxy's login page, JSON where SSE was asked, garbage. */
const notAStream = (call: Call, contentType: string | undefined, line: string): ModelError.ModelErrorReason =>
  new ModelError.ProviderFailed({
    description: `${call.provider}: the server at ${shownUrl(call.baseUrl)} answered with ${
      contentType ?? "no content type"
    }, not a model stream (is baseUrl right?): ${providerFailure.sanitize(line, call.redact, MAX_QUOTED_LINE)}`,
    retryable: false
  })

/** The media type of a response (`text/html`), bounded: it is the server's text. */
const contentTypeOf = (response: HttpClientResponse.HttpClientResponse): string | undefined => {
  const value = headersOf(response)["content-type"]?.split(";")[0]?.trim()
  return value === undefined || value === "" ? undefined : providerFailure.sanitize(value, (text) => text, 100)
}

/** A 404 names the URL it came from: most often the base URL or the model is not what the server serves. */
const notFound = (call: Call, status: number, said: providerFailure.Said): providerFailure.Said =>
  status === 404
    ? { ...said, description: `${said.description} (POST ${shownUrl(call.url)}: is baseUrl right, and the model one this server has?)` }
    : said

/** A bound of one reply was passed: which, and how to raise it. */
const tooMuch = (call: Call, what: string, option: string): ModelError.ModelErrorReason =>
  new ModelError.ProviderFailed({
    description: `${call.provider}: the reply ${what} (the ${option} bound; raise it in the provider layer's options)`,
    retryable: false
  })

/** One attempt: the request, its status checked, its body decoded event by event within the reply's bounds. */
const attempt = (settings: Settings, call: Call, request: HttpClientRequest.HttpClientRequest) => {
  const fail = (reason: ModelError.ModelErrorReason) =>
    new ModelError.ModelError({ model: call.model, reason: providerFailure.redact(reason, call.redact) })
  // A transport failure names where the request went (base URL and path): a wrong baseUrl shows.
  const network = (error: { readonly message: string; readonly cause?: unknown }) =>
    fail(new ModelError.Network({ provider: call.provider, description: `POST ${shownUrl(call.url)}: ${describeTransport(error)}` }))
  const idle = () =>
    fail(new ModelError.Timeout({
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
            notFound(call, response.status, providerFailure.fromBody(response.status, text)),
            providerFailure.retryAfter(headersOf(response), now)
          )))
      )
    )
  )

  return Stream.unwrap(Effect.map(response, (response) => {
    const bytes = response.stream.pipe(
      Stream.mapError(network),
      Stream.timeoutOrElse({ duration: settings.idleTimeout, orElse: () => Stream.fail(idle()) })
    )
    return Stream.transformPull(bytes, (pull) => Effect.sync(() => decode(settings, call, contentTypeOf(response), pull, fail)))
  }))
}

/**
 * The pull of one reply's parts: bytes counted against `maxReplyBytes`, the first line checked to
 * be an event stream's before anything is parsed, events decoded, tool calls counted against
 * `maxToolCalls`.
 */
const decode = (
  settings: Settings,
  call: Call,
  contentType: string | undefined,
  pull: Pull.Pull<ReadonlyArray<Uint8Array>, ModelError.ModelError>,
  fail: (reason: ModelError.ModelErrorReason) => ModelError.ModelError
): Pull.Pull<readonly [Model.Part, ...Array<Model.Part>], ModelError.ModelError> => {
  const decoder = call.decoder()
  const text = new TextDecoder()
  let out: Array<Model.Part> = []
  let failure: ModelError.ModelErrorReason | undefined
  let ended = false
  let received = 0
  let toolCalls = 0
  // The body's start, held back until its first line shows it is an event stream; `undefined` after.
  let head: string | undefined = ""
  const parser = sse.makeParser((event) => {
    if (failure === undefined) failure = decoder.event(event, out)
  })
  const parse = (chunk: string) => {
    if (!parser.feed(chunk)) {
      failure ??= new ModelError.ProviderFailed({ description: `${call.provider}: an event of the stream is too large`, retryable: false })
    }
  }
  const feed = (chunk: string) => {
    if (head === undefined) return parse(chunk)
    head += chunk
    const line = firstLine(head, ended)
    if (line === undefined && !ended) return
    if (line !== undefined && !isEventLine(line)) {
      failure ??= notAStream(call, contentType, line)
      return
    }
    const body = head
    head = undefined
    parse(body)
  }
  const next: Pull.Pull<readonly [Model.Part, ...Array<Model.Part>], ModelError.ModelError> = Effect.suspend(() => {
    if (out.length > 0 && failure === undefined) {
      for (const part of out) if (part._tag === "ToolCall") toolCalls++
      if (toolCalls > settings.maxToolCalls) {
        failure = tooMuch(call, `made more than ${settings.maxToolCalls} tool calls`, "maxToolCalls")
        out = []
      }
    }
    if (out.length > 0) {
      const parts = out as unknown as readonly [Model.Part, ...Array<Model.Part>]
      out = []
      return Effect.succeed(parts)
    }
    if (failure !== undefined) return Effect.fail(fail(failure))
    if (ended) return Cause.done()
    return pull.pipe(
      Effect.flatMap((chunks) => {
        for (const chunk of chunks) {
          received += chunk.length
          if (received > settings.maxReplyBytes) {
            failure ??= tooMuch(call, `passed ${settings.maxReplyBytes} bytes`, "maxReplyBytes")
            break
          }
          feed(text.decode(chunk, { stream: true }))
        }
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
}

/** A transport failure's one line: the cause's code and message, never the request's headers. */
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
 * Streams one request's parts, each run of the request an attempt retried on the layer's schedule
 * (`ModelRetry.retry`: a retryable failure before the first part, each retry first a `Retry` part
 * and an event on the current span); the whole, retries included, within the stream timeout.
 */
export const stream = (settings: Settings, call: Call): Stream.Stream<Model.Part, ModelError.ModelError> => {
  const request = HttpClientRequest.post(call.url).pipe(
    HttpClientRequest.setHeaders({ ...settings.headers, ...call.headers, accept: "text/event-stream" }),
    HttpClientRequest.bodyJsonUnsafe(call.body)
  )
  const auth = call.auth
  const send = auth === undefined
    ? Effect.succeed(request)
    : Effect.sync(() => HttpClientRequest.setHeader(request, auth.header, `${auth.prefix}${Redacted.value(auth.key)}`))
  // The key enters the request only in `send`, just before it is sent; nothing keeps the request.
  const attempts = Stream.unwrap(Effect.map(send, (ready) => attempt(settings, call, ready)))
  const tooLong = Effect.flatMap(Effect.sleep(settings.streamTimeout), () =>
    Effect.fail(
      new ModelError.ModelError({
        model: call.model,
        reason: new ModelError.Timeout({
          provider: call.provider,
          description: `the reply took longer than ${
            Duration.format(settings.streamTimeout)
          } (the streamTimeout bound; raise it in the provider layer's options)`
        })
      })
    ))
  return Stream.interruptWhen(ModelRetry.retry(attempts, settings.retry), tooLong)
}

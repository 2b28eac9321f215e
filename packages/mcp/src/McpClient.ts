/**
 * McpClient — one MCP server's connection, owned by a session: the SDK's `Client` over our
 * transports, under the session's supervisor.
 *
 * `connect` opens a connection in the current scope (spawn or HTTP, the `initialize` handshake,
 * every page of `tools/list`), all within `initTimeout`; closing that scope closes the client, which
 * ends a stdio server's process group or aborts HTTP requests and DELETEs the Streamable HTTP
 * session. `caller` gives a tool's `tools/call`, run within `requestTimeout`; interrupting it
 * cancels the request. Failures are an `McpError` (McpError.ts) of the server: a transport that dies
 * fails its pending and later calls with the reason `TransportDown`, a result the model reads; the
 * supervisor's restart policy may bring a new connection. Wire and local stay apart: a result
 * flagged `isError` is a failed tool result, a JSON-RPC error is `McpCallFailed`, a dead connection
 * is `TransportDown`; a connection that cannot be opened is `ConnectFailed`.
 */
import type {
  CallToolResult,
  Client,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  Tool as McpTool,
  Transport
} from "@modelcontextprotocol/client"
import { Deferred, Duration, Effect, Redacted, Scope, Semaphore, Tracer } from "effect"
import { Executor, type Message, type ProcessRunner, Tool } from "@condukt/core"
import type { Declaration } from "./internal/declaration.ts"
import { Credentials } from "./internal/credentials.ts"
import { refusedBecause } from "./internal/boundedMessages.ts"
import { tooLargeLimit } from "./internal/oversized.ts"
import { CallSignal } from "./internal/callSignal.ts"
import * as Negotiation from "./internal/negotiation.ts"
import * as ClientHandlers from "./internal/clientHandlers.ts"
import { StdioProcess } from "./internal/stdioProcess.ts"
import * as Sdk from "./internal/sdk.ts"
import { type CallReason, ConnectFailed, HttpCallFailed, McpCallFailed, McpError, RequestTimeout, ResultRefused, ResultTooLarge, TransportDown } from "./McpError.ts"
import { LIST_TIMEOUT_MS, list, MAX_TOOL_PAGES, MAX_TOOLS, refresher } from "./internal/toolListing.ts"
import { describe, httpStatus, makeTransport, startFailure, unreachableBecause } from "./internal/transports.ts"

/** What our client says it is in `initialize`. */
export const CLIENT_INFO = { name: "condukt", version: "0.1.0" } as const

/** The most a tool's result text holds by default (code points); past it, the head and tail around `[truncated N -> M chars]`. */
export const MAX_RESULT_CHARS = 100_000

// ---------------------------------------------------------------------------------------------
// A connection
// ---------------------------------------------------------------------------------------------

/** One open connection: its client, its tools as listed, and how it ended (once it has). */
export interface Connection {
  readonly client: Client
  /** The server's credentials, and how its texts are made fit for errors and events (none when absent). */
  readonly credentials?: Credentials | undefined
  readonly descriptors: ReadonlyArray<McpTool>
  /** Fails with the reason once the transport has died; never completes otherwise. */
  readonly down: Deferred.Deferred<never, McpError>
  /**
   * A stdio server's exit code (128 + the signal's number when a signal ended it) once its process
   * has exited; `undefined` before, and always over HTTP, where a server cannot end a session on
   * its own (it can only lose it: `reinitialise`). Absent on a connection made by hand (benchmarks).
   */
  readonly exitCode?: (() => number | undefined) | undefined
  /** Completes an authorization a request's `UnauthorizedError` started, or fails with that error. */
  readonly reauthorize: (error: unknown) => Effect.Effect<void, unknown>
  /** How many times the Streamable HTTP session was re-initialised. */
  readonly generation: () => number
  /**
   * After a 404 on the session of `generation`: a new transport and `initialize` (unless a
   * concurrent call already did it). A failure marks the connection down and fails with why.
   */
  readonly reinitialise: (generation: number) => Effect.Effect<void, McpError>
}

const identity = <A>(a: A): A => a

/** A connection made without a session's server (tests, benchmarks): nothing to redact but the bounds. */
const NO_CREDENTIALS = new Credentials("", identity)

const durationMs = (input: Duration.Input | undefined, fallback: number): number =>
  input === undefined ? fallback : Duration.toMillis(Duration.fromInputUnsafe(input))

/**
 * After an `UnauthorizedError` (a 401, or a 403 `insufficient_scope` asking for more scopes), a
 * headless OAuth provider that obtained an authorization code finishes the authorization with it;
 * the caller then sends its request again, once. Anything else fails with the original error.
 */
const finishAuthorization = (declaration: Declaration, transport: Transport) => (error: unknown): Effect.Effect<void, unknown> => {
  const provider = declaration.transport !== "stdio" && declaration.auth?._tag === "OAuth" ? declaration.auth.provider : undefined
  const callback = Sdk.isUnauthorized(error) && provider !== undefined ? authorizationResponse(provider) : undefined
  if (callback === undefined) return Effect.fail(error)
  const http = transport as StreamableHTTPClientTransport | SSEClientTransport
  return Effect.tryPromise({ try: () => typeof callback === "string" ? http.finishAuth(callback) : http.finishAuth(callback), catch: () => error })
}

/**
 * What a headless provider obtained from the authorization endpoint's redirect: its parameters
 * (`authorizationResponse`: the code, and `iss` when the server sends it), or a code alone
 * (`authorizationCode`, a provider of one's own).
 */
const authorizationResponse = (provider: object): URLSearchParams | string | undefined => {
  if ("authorizationResponse" in provider && typeof provider.authorizationResponse === "function") {
    return (provider.authorizationResponse as () => URLSearchParams | undefined)()
  }
  if ("authorizationCode" in provider && typeof provider.authorizationCode === "function") {
    return (provider.authorizationCode as () => string | undefined)()
  }
  return undefined
}

/** `request`, sent again once after an authorization `finishAuthorization` could complete. */
const authorized = <A>(reauthorize: (error: unknown) => Effect.Effect<void, unknown>, request: Effect.Effect<A, unknown>) =>
  Effect.catch(request, (error) => Effect.andThen(reauthorize(error), request))

/** A span per MCP request, named for its method, with the server's name. */
const traced = (method: string, server: string, attributes: Record<string, string> = {}) => <A, E>(self: Effect.Effect<A, E>) =>
  // No stack trace: it would be captured (and collected) on every call of a hot path. Data-first:
  // effect 4.1's data-last `withSpan` does not see `captureStackTrace`.
  Effect.withSpan(self, `McpClient.${method}`, { attributes: { server, ...attributes }, captureStackTrace: false })

/** Why a request of the handshake or the listing failed, fit to read (its span records this, not the SDK's error). */
const failure = (declaration: Declaration, transport: Transport, credentials: Credentials) => (error: unknown) =>
  new ConnectFailed({
    description: Sdk.isSdkError(error, "ListPaginationExceeded")
      ? `tools/list did not end after ${declaration.maxToolPages ?? MAX_TOOL_PAGES} pages (maxToolPages)`
      : credentials.reason(startFailure(transport, error, declaration.transport === "stdio" ? undefined : declaration.url))
  })

/**
 * The SDK's promise-based connect, with one retry after a headless OAuth provider got its code:
 * on a new transport from `renew` (an SDK transport cannot be started twice, and the
 * `server/discover` probe has started the first).
 */
const handshake = (
  client: Client,
  transport: Transport,
  declaration: Declaration,
  timeoutMs: number,
  credentials: Credentials,
  renew: Effect.Effect<Transport, unknown>
) => {
  const connecting = (over: Transport) =>
    Effect.tryPromise({ try: (signal) => client.connect(over, { signal, timeout: timeoutMs }), catch: (e) => e })
  return Effect.catch(connecting(transport), (error) =>
    finishAuthorization(declaration, transport)(error).pipe(
      Effect.andThen(Effect.promise(() => Promise.all([client.close(), transport.close()]).catch(() => {}))),
      Effect.andThen(renew),
      Effect.flatMap(connecting)
    )).pipe(Effect.mapError(failure(declaration, transport, credentials)), traced("initialize", declaration.name))
}

/**
 * Opens a connection in the current scope: transport, handshake, tools. `onToolsChanged` gets the
 * new list after `notifications/tools/list_changed` (coalesced: see toolListing). `credentials`
 * collects the server's own secrets (a session's server keeps one across its connections); every
 * server text in an error, event or log line passes through its `reason`. `requests` lends what
 * the server's own requests are answered with (the session's model and roots: clientHandlers).
 */
export const connect = (
  declaration: Declaration,
  secrets: Readonly<Record<string, Redacted.Redacted<string>>>,
  onToolsChanged: (tools: ReadonlyArray<McpTool>) => Effect.Effect<void>,
  credentials: Credentials = new Credentials(declaration.name, identity),
  requests: ClientHandlers.Requests = {}
): Effect.Effect<Connection, McpError, Scope.Scope | ProcessRunner.ProcessRunner> =>
  Effect.gen(function*() {
    // The SDK loads with the first connection, not with the package (`internal/sdk`).
    yield* Effect.promise(Sdk.load)
    const initMs = durationMs(declaration.initTimeout, 10_000)
    // A replacement transport (below) is built with the runner and in the scope of the first.
    const services = yield* Effect.context<Scope.Scope | ProcessRunner.ProcessRunner>()
    // `let`: a Streamable HTTP session the server lost (404) is replaced by a new transport.
    let transport = yield* makeTransport(declaration, secrets, credentials)
    let generation = 0
    let replacing = false
    const down = yield* Deferred.make<never, McpError>()
    // A new transport in place of the current one, in the first one's scope and with its runner.
    const renew = Effect.tap(Effect.provideContext(makeTransport(declaration, secrets, credentials), services), (fresh) =>
      Effect.sync(() => {
        transport = fresh
      }))
    const reauthorize = (error: unknown) => finishAuthorization(declaration, transport)(error)
    const client = new (Sdk.sdk().Client)(CLIENT_INFO, {
      capabilities: ClientHandlers.capabilities(declaration, requests),
      versionNegotiation: Negotiation.options(declaration),
      listMaxPages: declaration.maxToolPages ?? MAX_TOOL_PAGES
    })
    ClientHandlers.install(client, declaration, requests, credentials, yield* Scope.Scope)
    // A stdio server's first protocol error during the handshake fails it at once (garbage on
    // stdout). HTTP transports report recoverable trouble the same way (a server without the
    // optional GET stream answers 404), so theirs are left to the SDK.
    const broken = yield* Deferred.make<never, ConnectFailed>()
    if (transport instanceof StdioProcess) {
      const fail = (error: Error) => Deferred.doneUnsafe(broken, Effect.fail(new ConnectFailed({ description: credentials.reason(error.message) })))
      // On the transport too: the `server/discover` probe runs before the client is attached, and
      // forwards the transport's errors only to handlers it already had.
      transport.onerror = fail
      client.onerror = fail
    }
    client.onclose = () => {
      if (replacing) return
      // Code 0: the server ended on its own, cleanly (not a crash: `exitCode`, McpServer).
      const why = transport instanceof StdioProcess
        ? `the server exited${transport.exitCode === 0 ? " with code 0" : ""}${transport.lastError === "" ? "" : `: ${transport.lastError}`}`
        : "the connection closed"
      Deferred.doneUnsafe(down, Effect.fail(new McpError({ server: declaration.name, reason: new TransportDown({ description: credentials.reason(why) }) })))
    }
    yield* Scope.addFinalizer(yield* Scope.Scope, Effect.promise(() => closeClient(client, transport)))
    const page = (cursor: string | undefined) =>
      authorized(
        reauthorize,
        Effect.tryPromise({
          // One page a request (the SDK's `listTools()` without a cursor would walk every page
          // unbounded): toolListing bounds the pages, the tools and their size.
          try: (signal) => client.request({ method: "tools/list", params: cursor === undefined ? {} : { cursor } }, { signal, timeout: initMs }),
          catch: identity
        })
      ).pipe(Effect.mapError((error) => failure(declaration, transport, credentials)(error)), traced("tools/list", declaration.name))
    const bounds = {
      maxPages: declaration.maxToolPages ?? MAX_TOOL_PAGES,
      maxTools: declaration.maxTools ?? MAX_TOOLS,
      timeoutMs: durationMs(declaration.listTimeout, LIST_TIMEOUT_MS)
    }
    // A 2026-07-28 server over HTTP: the SDK lists every page itself (at most `maxToolPages`, its
    // `listMaxPages`), leaving out the tools whose `x-mcp-header` annotations are invalid (SEP-2243);
    // toolListing then bounds the tools and their size.
    const whole = () =>
      authorized(reauthorize, Effect.tryPromise({ try: (signal) => client.listTools(undefined, { signal, timeout: initMs }), catch: identity })).pipe(
        Effect.mapError((error) => failure(declaration, transport, credentials)(error)),
        traced("tools/list", declaration.name)
      )
    const listing = Effect.suspend(() =>
      list(client.getProtocolEra() === "modern" && !(transport instanceof StdioProcess) ? whole : page, bounds)
    )
    const opened = Effect.andThen(handshake(client, transport, declaration, initMs, credentials, renew), listing)
    const descriptors = yield* opened.pipe(
      Effect.raceFirst(Deferred.await(broken)),
      Effect.timeoutOption(initMs),
      Effect.flatMap((found) =>
        found._tag === "Some"
          ? Effect.succeed(found.value)
          : Effect.fail(new ConnectFailed({ description: `no answer to initialize within ${initMs}ms` }))
      )
    )
    client.onerror = () => {}
    if (client.getServerCapabilities()?.tools?.listChanged === true) {
      const stale = yield* refresher(declaration.name, listing, onToolsChanged)
      client.setNotificationHandler("notifications/tools/list_changed", () => {
        stale()
        return Promise.resolve()
      })
    }
    const lock = yield* Semaphore.make(1)
    const reinitialise = (seen: number) =>
      lock.withPermits(1)(Effect.gen(function*() {
        if (seen !== generation || Deferred.isDoneUnsafe(down)) return
        replacing = true
        yield* Effect.promise(() => client.close().catch(() => {}))
        replacing = false
        yield* renew
        yield* handshake(client, transport, declaration, initMs, credentials, renew)
        generation += 1
      })).pipe(Effect.catch((error: unknown) => {
        const failure = new McpError({
          server: declaration.name,
          reason: new TransportDown({
            description: credentials.reason(`the server lost the session and a new one could not be opened: ${describe(error)}`)
          })
        })
        Deferred.doneUnsafe(down, Effect.fail(failure))
        return Effect.fail(failure)
      }))
    const exitCode = () => (transport instanceof StdioProcess ? transport.exitCode : undefined)
    return { client, credentials, descriptors, down, exitCode, reauthorize, generation: () => generation, reinitialise }
  }).pipe(Effect.mapError((reason) => new McpError({ server: declaration.name, reason })))

/** Ends the Streamable HTTP session (DELETE) before closing; a stdio close ends the process group. */
const closeClient = (client: Client, transport: Transport): Promise<void> => {
  const terminate = Sdk.isStreamableHttp(transport) && transport.sessionId !== undefined
    ? transport.terminateSession().catch(() => {})
    : Promise.resolve()
  return terminate.then(() => client.close()).catch(() => {})
}

// ---------------------------------------------------------------------------------------------
// Calls
// ---------------------------------------------------------------------------------------------

const sessionLost = (error: unknown): boolean => Sdk.isHttpError(error) && error.status === 404

/** At most this many images of one result reach the model as images; the rest are named, not sent. */
export const MAX_IMAGES = 8

/** The size of the bytes `base64` holds. */
const decodedSize = (base64: string): number => Math.floor((base64.length * 3) / 4) - (base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0)

/**
 * What the model reads of a result: text parts joined by newlines, and images (of the types every
 * provider takes, at most `Tool.MAX_IMAGE_BYTES` each, `MAX_IMAGES` of them) as images, each named
 * by a line of the text as Read names its pictures; any other part (audio, a resource, an image
 * too large or of another type) is kept as its JSON, an image's data left out of it.
 */
export const render = (result: CallToolResult): string | Tool.Images => {
  const images: Array<Message.ImagePart> = []
  const lines = result.content.map((part) => {
    if (part.type === "text") return part.text
    if (part.type !== "image") return JSON.stringify(part)
    const bytes = decodedSize(part.data)
    const shown = Tool.IMAGE_TYPES.has(part.mimeType) && bytes <= Tool.MAX_IMAGE_BYTES && images.length < MAX_IMAGES
    if (shown) images.push({ _tag: "Image", mediaType: part.mimeType, data: part.data })
    const why = shown
      ? ""
      : !Tool.IMAGE_TYPES.has(part.mimeType)
      ? ": not a type models are sent"
      : bytes > Tool.MAX_IMAGE_BYTES
      ? `: larger than ${Tool.MAX_IMAGE_BYTES} bytes`
      : `: more than ${MAX_IMAGES} images`
    return `Image (${part.mimeType}, ${bytes} bytes)${shown ? "" : ` left out${why}`}`
  })
  if (lines.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent)
  const text = lines.join("\n")
  return images.length === 0 ? text : Tool.images(text, images)
}

/** What `callTool` answers. */
type Answer = CallToolResult

/**
 * A result the model reads: its text, or a failure with that text when flagged `isError`. Both
 * are redacted with the server's own credentials (the session redacts its secrets after); an
 * error's text is also cut here, as the executor cuts only successful text.
 */
const settle = (target: Target, connection: Connection, answer: Answer): Effect.Effect<string | Tool.Images, string> => {
  const result = answer
  const rendered = render(result)
  const text = typeof rendered === "string" ? rendered : rendered.text
  const credentials = connection.credentials ?? NO_CREDENTIALS
  if (result.isError === true) return Effect.fail(Executor.truncate(credentials.redact(text), target.maxResultChars))
  if (credentials.isEmpty) return Effect.succeed(rendered)
  return Effect.succeed(typeof rendered === "string" ? credentials.redactOwn(text) : Tool.images(credentials.redactOwn(text), rendered.images))
}

/** A failed `tools/call` as what the model reads about it; every server text in it fit to read. */
const callError = (target: Target, connection: Connection, error: unknown): McpError => {
  if (error instanceof McpError) return error
  return new McpError({ server: target.server, reason: callReason(target, connection, error) })
}

const callReason = (target: Target, connection: Connection, error: unknown): CallReason => {
  const { timeoutMs, wire } = target
  const reason = (connection.credentials ?? NO_CREDENTIALS).reason
  if (Sdk.isSdkError(error, "RequestTimeout")) return new RequestTimeout({ tool: wire, timeoutMs })
  if (Sdk.isSdkError(error, "ConnectionClosed")) return new TransportDown({ description: "the connection closed" })
  const tooLarge = Sdk.isProtocolError(error) ? tooLargeLimit(error) : undefined
  if (tooLarge !== undefined) return new ResultTooLarge({ tool: wire, maxBytes: tooLarge })
  const refused = Sdk.isProtocolError(error) ? refusedBecause(error) : undefined
  if (refused !== undefined) return new ResultRefused({ tool: wire, description: refused })
  if (Sdk.isProtocolError(error)) return new McpCallFailed({ tool: wire, description: reason(error.message) })
  const http = httpStatus(error)
  if (http !== undefined) return new HttpCallFailed({ tool: wire, status: http.status, body: reason(http.body) })
  const unreachable = target.url === undefined ? undefined : unreachableBecause(error, target.url)
  return new TransportDown({ description: reason(unreachable ?? describe(error)) })
}

/**
 * What a tool's calls share, computed once per tool: each call of it only sends its request.
 */
interface Target {
  readonly server: string
  readonly wire: string
  readonly timeoutMs: number
  readonly maxResultChars: number
  /** An HTTP server's URL, named when it cannot be reached. */
  readonly url: string | undefined
  readonly span: { readonly attributes: Readonly<Record<string, string>>; readonly captureStackTrace: false }
  /** The tool as listed: the SDK validates its output against it and mirrors its `x-mcp-header` arguments into headers. */
  readonly definition: McpTool | undefined
}

/** One `tools/call`; interrupting it aborts the request (the SDK then sends `notifications/cancelled`). */
const send = (target: Target, connection: Connection, args: Readonly<Record<string, unknown>>) =>
  Effect.callback<Awaited<ReturnType<Client["callTool"]>>, unknown>((resume) => {
    const signal = new CallSignal()
    const options = target.definition === undefined
      ? { signal: signal.asAbortSignal, timeout: target.timeoutMs }
      : { signal: signal.asAbortSignal, timeout: target.timeoutMs, toolDefinition: target.definition }
    connection.client.callTool({ name: target.wire, arguments: { ...args } }, options).then(
      (answer) => resume(Effect.succeed(answer)),
      (error: unknown) => resume(Effect.fail(error))
    )
    return Effect.sync(() => signal.abort(new Error("The call was interrupted")))
  })

/**
 * After a failed first attempt: a call may need more scopes than the connection's token has (a
 * 403 `insufficient_scope`), which `reauthorize` completes before the call is sent again; a 404 on
 * a known Streamable HTTP session means the server lost it: a new session, and the call again,
 * once. A second 404 means the server cannot keep a session: the connection is down.
 */
const recover = (target: Target, connection: Connection, args: Readonly<Record<string, unknown>>, generation: number) => (first: unknown) => {
  const again = send(target, connection, args)
  return Effect.andThen(connection.reauthorize(first), again).pipe(
    Effect.catch((error) =>
      sessionLost(error)
        ? connection.reinitialise(generation).pipe(
          Effect.andThen(Effect.catch(authorized(connection.reauthorize, again), (error) => {
            if (!sessionLost(error)) return Effect.fail(error)
            const failure = new McpError({
              server: target.server,
              reason: new TransportDown({ description: "the server lost the session again (HTTP 404) after a new one was opened" })
            })
            Deferred.doneUnsafe(connection.down, Effect.fail(failure))
            return Effect.fail(failure)
          }))
        )
        : Effect.fail(error)
    ),
    Effect.catch((error) => {
      const failure = callError(target, connection, error)
      // A dead transport fails pending calls at once (the SDK rejects them once it has marked
      // the connection down): they answer with the reason it died.
      return failure.reason._tag === "TransportDown" && Deferred.isDoneUnsafe(connection.down) ? Deferred.await(connection.down) : Effect.fail(failure)
    }),
    Effect.flatMap((answer) => settle(target, connection, answer))
  )
}

/**
 * The `tools/call` of `wire` (the MCP name) on a connection of `declaration`'s server, as a
 * function of the connection and the arguments; an `isError` result fails with its text, which
 * the model reads as `Error: <text>`. `definition`, the tool as listed, lets the SDK check the
 * result against its `outputSchema` and, on a 2026-07-28 Streamable HTTP connection, send the
 * arguments its schema marks `x-mcp-header` as `Mcp-Param-*` headers (SEP-2243).
 *
 * An answered call is the hot path (issue 7's benchmark: within 1.1x of the raw SDK `Client`): one
 * request, whose timeout is the SDK's own and whose abort signal cancels it when the call is
 * interrupted (the SDK then sends `notifications/cancelled`). The retries run only after a failure.
 * The span `McpClient.tools/call` is made only when a tracer other than Effect's native one is
 * installed: the native tracer exports nothing, and no span is opened under this one on the hot
 * path, so none could observe it.
 */
export const caller = (declaration: Declaration, wire: string, definition?: McpTool) => {
  const target: Target = {
    definition,
    server: declaration.name,
    wire,
    timeoutMs: durationMs(declaration.requestTimeout, 60_000),
    maxResultChars: declaration.maxResultChars ?? MAX_RESULT_CHARS,
    url: declaration.transport === "stdio" ? undefined : declaration.url,
    span: { attributes: { server: declaration.name, tool: wire }, captureStackTrace: false }
  }
  return (connection: Connection, args: Readonly<Record<string, unknown>>): Effect.Effect<string | Tool.Images, McpError | string> =>
    Effect.withFiber((fiber) => {
      // The session the request goes to: a 404 re-initialises only the session it was sent on.
      const generation = connection.generation()
      const call = (span: Tracer.Span | undefined) =>
        Effect.matchEffect(send(target, connection, args), {
          onSuccess: (answer) => settle(target, connection, answer),
          onFailure: (error) => {
            const recovering = recover(target, connection, args, generation)(error)
            // Spans the retries open (a new session's `initialize`) are children of this call's.
            return span === undefined ? recovering : Effect.withParentSpan(recovering, span)
          }
        })
      return fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer ? call(undefined) : Effect.useSpan("McpClient.tools/call", target.span, call)
    })
}

/** Whether the connection's transport has died. */
export const isDown = (connection: Connection): boolean => Deferred.isDoneUnsafe(connection.down)

/** Exits of a connection's life: it ends only when its transport dies. */
export const awaitDown = (connection: Connection): Effect.Effect<never, McpError> => Deferred.await(connection.down)

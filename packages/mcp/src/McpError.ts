/**
 * McpError — the one error of the MCP seam: which server failed (`server`) and why (`reason`, a
 * fact with the fields a caller can act on). Its `message` is the sentence the model reads when a
 * tool's call cannot be answered, or the one line of why a connection could not be opened.
 * `Effect.catchReason(effect, "McpError", "TransportDown", …)` handles one reason.
 */
import { Schema } from "effect"

/**
 * The server's transport died (or was never up); its tools answer this until it is back. `final`:
 * it will not be back in this session (it ended cleanly and its restart policy is not
 * `permanent`, or its session's supervisor gave up on the servers).
 */
export class TransportDown extends Schema.TaggedError<TransportDown>()("TransportDown", {
  description: Schema.String,
  final: Schema.optional(Schema.Boolean)
}) {}

/** The server did not answer `tool` within its `requestTimeout`. */
export class RequestTimeout extends Schema.TaggedError<RequestTimeout>()("RequestTimeout", {
  tool: Schema.String,
  timeoutMs: Schema.Finite
}) {}

/** The server answered the call with a JSON-RPC error (an unknown tool, invalid arguments…). */
export class McpCallFailed extends Schema.TaggedError<McpCallFailed>()("McpCallFailed", {
  tool: Schema.String,
  description: Schema.String
}) {}

/** The server's answer to a call was larger than its `maxMessageBytes`: it was skipped unread. */
export class ResultTooLarge extends Schema.TaggedError<ResultTooLarge>()("ResultTooLarge", {
  tool: Schema.String,
  maxBytes: Schema.Finite
}) {}

/**
 * The server's answer to a call broke a bound of JSON from outside (`JsonLimits`: nesting, keys,
 * a string's length); it was dropped unread, the server stays up.
 */
export class ResultRefused extends Schema.TaggedError<ResultRefused>()("ResultRefused", {
  tool: Schema.String,
  /** Which bound: completes "the answer holds …" (`more than 64 levels of nesting`). */
  description: Schema.String
}) {}

/** An HTTP server answered one call with an error status; the server is not down for it. */
export class HttpCallFailed extends Schema.TaggedError<HttpCallFailed>()("HttpCallFailed", {
  tool: Schema.String,
  status: Schema.Finite,
  body: Schema.String
}) {}

/** A connection could not be opened; `description` is one line, without secrets. */
export class ConnectFailed extends Schema.TaggedError<ConnectFailed>()("ConnectFailed", {
  description: Schema.String
}) {
  override get message() {
    return this.description
  }
}

/** A token endpoint (client credentials) refused, or could not be reached. */
export class TokenRequestFailed extends Schema.TaggedError<TokenRequestFailed>()("TokenRequestFailed", {
  tokenUrl: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `token request to ${this.tokenUrl} failed: ${this.description}`
  }
}

/** A secret of the server's auth or env could not be resolved; names the source, never a value. */
export class AuthSecretUnavailable extends Schema.TaggedError<AuthSecretUnavailable>()("AuthSecretUnavailable", {
  description: Schema.String
}) {
  override get message() {
    return this.description
  }
}

/** Why a call failed: what the model reads about it. */
export const CallReason = Schema.Union([TransportDown, RequestTimeout, McpCallFailed, ResultTooLarge, ResultRefused, HttpCallFailed])
export type CallReason = typeof CallReason.Type

/** @since 0.1.0 @category errors */
export const Reason = Schema.Union([
  TransportDown,
  RequestTimeout,
  McpCallFailed,
  ResultTooLarge,
  ResultRefused,
  HttpCallFailed,
  ConnectFailed,
  TokenRequestFailed,
  AuthSecretUnavailable
])
export type Reason = typeof Reason.Type

const sentence = (server: string, reason: Reason): string => {
  switch (reason._tag) {
    case "TransportDown":
      return reason.final === true
        ? `MCP server ${server} is down (${reason.description}) and will not come back in this session`
        : `MCP server ${server} is down (${reason.description}); its tools cannot be called until it is back`
    case "RequestTimeout":
      return `MCP server ${server} did not answer ${reason.tool} within ${reason.timeoutMs}ms`
    case "McpCallFailed":
      return `MCP server ${server} refused ${reason.tool}: ${reason.description}`
    case "ResultTooLarge":
      return `MCP server ${server} answered ${reason.tool} with more than ${reason.maxBytes} bytes (its maxMessageBytes); the answer was dropped`
    case "ResultRefused":
      return `MCP server ${server} answered ${reason.tool} with JSON that holds ${reason.description}, past what Condukt takes from a server; the answer was dropped`
    case "HttpCallFailed":
      return `MCP server ${server} failed ${reason.tool}: HTTP ${reason.status}${reason.body === "" ? "" : ` ${reason.body}`}`
    case "ConnectFailed":
    case "TokenRequestFailed":
    case "AuthSecretUnavailable":
      return reason.message
  }
}

/**
 * The one error of the seam. A call's reasons (`TransportDown`, `RequestTimeout`,
 * `McpCallFailed`, `ResultTooLarge`, `ResultRefused`, `HttpCallFailed`) read "MCP server <server> …"; a connection's
 * (`ConnectFailed`, `TokenRequestFailed`, `AuthSecretUnavailable`) are the one line of why.
 *
 * @since 0.1.0
 * @category errors
 */
export class McpError extends Schema.TaggedError<McpError>()("McpError", {
  server: Schema.String,
  reason: Reason
}) {
  override get message() {
    return sentence(this.server, this.reason)
  }
}

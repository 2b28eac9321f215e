/**
 * providerFailure — turns a provider's refusal (an HTTP status with its body, or an `error` event
 * in the middle of a stream) into a `ModelError` reason, for every vendor.
 *
 * Vendors agree on statuses and differ only in where the message sits in the body, so one
 * classifier reads them all: `error.message` (Anthropic, OpenAI and its compatibles), `message`,
 * a bare `error` string, or the first line of the text. The reason keeps the status and the
 * provider's own message; nothing from the request (headers, key) goes into it (the stream names
 * the URL of a 404 and of a network failure, without user, password or query), and what the
 * server said passes through the model's redaction (`redact`) before it reaches an error: a
 * gateway may echo the key it was sent.
 */
import { Duration } from "effect"
import * as ModelError from "@condukt/core/ModelError"

/** What a provider said when it refused: its message and its own type or code, when it gave them. */
export interface Said {
  readonly description: string
  readonly type: string | undefined
}

/** Longest provider message kept in an error, in UTF-16 units: an error page is not a message. */
export const MAX_DESCRIPTION = 1_000

const str = (u: unknown): string | undefined => (typeof u === "string" && u !== "" ? u : undefined)

/** Control characters a terminal would act on (escape sequences), tab and line breaks aside. */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g

/**
 * A server's text as an error keeps it: redacted first, then cut to `max` characters with `…`
 * (cut first, a key straddling the cut would keep its head), control characters shown as `�`.
 */
export const sanitize = (text: string, redactText: (text: string) => string, max = MAX_DESCRIPTION): string => {
  const redacted = redactText(text)
  const cut = redacted.length > max ? `${redacted.slice(0, max)}…` : redacted
  return cut.replace(CONTROL, "\uFFFD")
}

/** The message and type in a vendor's JSON error, whatever its shape. */
export const fromJson = (json: unknown): Said | undefined => {
  if (typeof json !== "object" || json === null) return undefined
  const body = json as Record<string, unknown>
  const inner = typeof body.error === "object" && body.error !== null ? body.error as Record<string, unknown> : undefined
  const description = str(inner?.message) ?? str(body.message) ?? str(body.error) ?? str(body.detail)
  if (description === undefined) return undefined
  const type = str(inner?.type) ?? str(inner?.code) ?? str(inner?.status) ?? str(body.type) ?? str(body.code)
  return { description: description.trim(), type }
}

/** What a response body says: its JSON error, or its text, or the status alone. */
export const fromBody = (status: number, text: string): Said => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  const said = fromJson(json)
  if (said !== undefined) return said
  const line = text.trim().split("\n")[0] ?? ""
  return { description: line === "" ? `HTTP ${status} with no message` : line, type: undefined }
}

const contextOverflow = /prompt is too long|context[ _]length|context window|maximum context|too many (input )?tokens|input is too long/i

/** `retry-after-ms`, then `retry-after` in seconds or as an HTTP date, relative to `now`. */
export const retryAfter = (headers: Readonly<Record<string, string | undefined>>, now: number): Duration.Duration | undefined => {
  const ms = Number(headers["retry-after-ms"])
  if (headers["retry-after-ms"] !== undefined && Number.isFinite(ms) && ms >= 0) return Duration.millis(ms)
  const value = headers["retry-after"]
  if (value === undefined || value.trim() === "") return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return seconds >= 0 ? Duration.millis(seconds * 1000) : undefined
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Duration.millis(Math.max(0, date - now))
}

/**
 * The reason for a refused request. 408/425/429/5xx (and overload, however said) may be tried
 * again; 400/401/403/404 and the other 4xx never.
 */
export const classify = (
  provider: string,
  status: number | undefined,
  said: Said,
  wait: Duration.Duration | undefined
): ModelError.ModelErrorReason => {
  const wire = { provider, status, description: said.description }
  const type = said.type ?? ""
  if (status === 529 || status === 503 || /overloaded/i.test(type)) return new ModelError.Overloaded({ ...wire, retryAfter: wait })
  if (type === "insufficient_quota") return new ModelError.InvalidRequest(wire)
  if (status === 429 || /rate_limit/i.test(type)) return new ModelError.RateLimited({ ...wire, retryAfter: wait })
  if (status === 401 || status === 403 || /authentication|permission/i.test(type)) return new ModelError.Unauthorized(wire)
  if (status === 408 || /timeout/i.test(type)) return new ModelError.Timeout({ provider, description: said.description })
  if (contextOverflow.test(said.description) || type === "context_length_exceeded") return new ModelError.ContextOverflow(wire)
  if (status === undefined) {
    // An error event inside a stream: only the vendor's type says whether it is transient.
    const transient = /api_error|server_error|internal/i.test(type)
    return new ModelError.ProviderFailed({ description: `${provider}: ${said.description}`, retryable: transient })
  }
  if (status === 425 || status >= 500) {
    return new ModelError.ProviderFailed({ description: `${provider}: ${said.description}`, retryable: true, status })
  }
  return new ModelError.InvalidRequest(wire)
}

/**
 * `reason` with every text a server may have written (`description`) passed through `redact`, then
 * bounded (`sanitize`): the one pass each provider error takes before it is raised.
 */
export const redact = (reason: ModelError.ModelErrorReason, redact: (text: string) => string): ModelError.ModelErrorReason => {
  const redactText = (text: string) => sanitize(text, redact)
  switch (reason._tag) {
    case "ProviderFailed":
      return new ModelError.ProviderFailed({ ...reason, description: redactText(reason.description) })
    case "RateLimited":
      return new ModelError.RateLimited({ ...reason, description: redactText(reason.description) })
    case "Overloaded":
      return new ModelError.Overloaded({ ...reason, description: redactText(reason.description) })
    case "Unauthorized":
      return new ModelError.Unauthorized({ ...reason, description: redactText(reason.description) })
    case "InvalidRequest":
      return new ModelError.InvalidRequest({ ...reason, description: redactText(reason.description) })
    case "ContextOverflow":
      return new ModelError.ContextOverflow({ ...reason, description: redactText(reason.description) })
    case "Network":
      return new ModelError.Network({ ...reason, description: redactText(reason.description) })
    case "Timeout":
      return new ModelError.Timeout({ ...reason, description: redactText(reason.description) })
    case "MissingApiKey":
    case "UnknownProvider":
      return reason
  }
}

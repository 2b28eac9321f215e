/**
 * credentials — what one MCP server was given to prove itself (its bearer token, an OAuth client
 * secret and the access tokens sent since, the credentials in a stdio server's environment), and
 * the one way a text the server controls enters an error, an event or a log line.
 *
 * `reason` redacts a text with these credentials and then the session's redaction, and makes it
 * one line of at most `MAX_REASON_CHARS` code points ending in `…` when cut, so neither a
 * secret nor a 9 MB message reaches a reader. The set grows (a refreshed token joins it when it is
 * first sent); `secrets` is what it holds now, by label `<server>.<what>`, for the session's own
 * redaction. Which environment values count: `Secret.isCredentialName` and `Secret.isOrdinaryVariable` (ADR 0038).
 */
import { Redacted } from "effect"
import { Redactor } from "@condukt/core"

/** The longest server text an error, event or log line carries (code points). */
export const MAX_REASON_CHARS = 1000

/** How much of a text is redacted before the cut: far more than the cut keeps. */
const REDACT_CHARS = 100_000

/** One line of at most `max` code points, `…` at the end when cut; whitespace runs become one space. */
export const oneLine = (text: string, max: number = MAX_REASON_CHARS): string => {
  const line = text.slice(0, max * 4).replace(/\s+/g, " ").trim()
  const points = Array.from(line)
  return points.length <= max && text.length <= max * 4 ? line : `${points.slice(0, max - 1).join("")}…`
}

export class Credentials {
  private readonly server: string
  private readonly outer: (text: string) => string
  /** Each value once, with its label. */
  private readonly labels = new Map<string, string>()
  private own: Redactor.Service = Redactor.none

  constructor(server: string, outer: (text: string) => string) {
    this.server = server
    this.outer = outer
  }

  /** Adds a value the server was given, labelled `<server>.<what>` (numbered when taken). */
  add(what: string, value: string): void {
    if (value === "" || this.labels.has(value)) return
    const taken = new Set(this.labels.values())
    let label = `${this.server}.${what}`
    for (let n = 2; taken.has(label); n++) label = `${this.server}.${what}_${n}`
    this.labels.set(value, label)
    this.own = Redactor.secrets(this.secrets())
  }

  /** The values held now, by label. */
  secrets(): Record<string, Redacted.Redacted<string>> {
    const record: Record<string, Redacted.Redacted<string>> = {}
    for (const [value, label] of this.labels) record[label] = Redacted.make(value)
    return record
  }

  /** Whether any value is held. */
  get isEmpty(): boolean {
    return this.labels.size === 0
  }

  /** With these credentials only (a tool's result, which the session redacts after). */
  readonly redactOwn = (text: string): string => this.own.redact(text)

  /** With these credentials, then the session's redaction. */
  readonly redact = (text: string): string => this.outer(this.own.redact(text))

  /** A server's text as an error, event or log line carries it: redacted, one bounded line. */
  readonly reason = (text: string): string => oneLine(this.redact(text.length > REDACT_CHARS ? text.slice(0, REDACT_CHARS) : text))
}

/**
 * Redactor — what the model must not read is replaced before it reads it.
 *
 * A redactor is a pure `redact(text)`. A session always runs the exact-match redactor of its own
 * secrets first (every value of 4 bytes or more becomes `[REDACTED:NAME]`), then the `Redactor`
 * provided around the program, if any: the regex redactor with the default patterns (private keys,
 * JWTs, provider keys, emails), a custom one, or several composed. They apply to tool results
 * before they are stored, streamed or sent, and to the user's prompts; at a session's exits (events,
 * errors, logs, spans, stores) to everything else, the model's reply text included, exact values
 * only, as it streams (`chunks`). The system prompt the model reads is never rewritten.
 *
 * Everything here runs on text a tool produced, which a model can steer: patterns run on RE2
 * (linear time), and the secret values are matched in one left-to-right pass, longest first, so a
 * replacement is never matched again.
 */
import { Cause, Context, Layer, Predicate, Redacted } from "effect"
import { RE2JS } from "re2js"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface Service {
  readonly redact: (text: string) => string
  /**
   * How many characters at the end of `text` could begin a value this redactor replaces: a text
   * streamed in chunks holds them back until the next chunk shows whether the value completes
   * (`chunks`). Absent: nothing is held back.
   */
  readonly pending?: ((text: string) => number) | undefined
}

/**
 * A pattern of the regex redactor: RE2 syntax, and the label of its replacement
 * (`[REDACTED:<label>]`). `anchor`, when given, is a literal every match contains: only the lines
 * holding it are searched (the whole text, for a pattern that `spansLines`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Pattern {
  readonly pattern: string
  readonly label: string
  readonly anchor?: string | undefined
  /** A match may hold line breaks (a PEM key): the text is searched whole. */
  readonly spansLines?: boolean | undefined
}

/**
 * The redactor of a program, run after each session's own secrets. None by default.
 *
 * @since 0.1.0
 * @category services
 */
export class Redactor extends Context.Service<Redactor, Service>()("@condukt/core/Redactor") {}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category constructors */
export const none: Service = { redact: (text) => text }

/** Values shorter than this (in UTF-8 bytes) are not redacted: they would match ordinary text. */
export const MIN_SECRET_BYTES = 4

const encoder = new TextEncoder()

/**
 * Replaces every value of `secrets` of at least `MIN_SECRET_BYTES` bytes by `[REDACTED:NAME]`, in
 * one pass: at each position the longest value that starts there wins (a value that is a prefix
 * of another never cuts the longer one), and a replacement is never searched again. Several
 * records (a session's own secrets, its MCP servers' credentials, its ancestors' secrets) are
 * matched in the same pass, and a name two of them give different values redacts both: one pass,
 * not one redactor after another, so a value inside another is never cut out of it first.
 *
 * @since 0.1.0
 * @category constructors
 */
export const secrets = (...records: ReadonlyArray<Readonly<Record<string, Redacted.Redacted<string>>>>): Service => {
  // A value given twice (under two names, or by two records) is matched once, under its first name.
  const seen = new Set<string>()
  const entries = records.flatMap((values) => Object.entries(values))
    .map(([name, value]) => ({ name, value: Redacted.value(value) }))
    .filter(({ value }) => !seen.has(value) && seen.add(value) && encoder.encode(value).length >= MIN_SECRET_BYTES)
    .sort((a, b) => b.value.length - a.value.length)
  if (entries.length === 0) return none
  const byFirst = new Map<string, Array<{ readonly name: string; readonly value: string }>>()
  for (const entry of entries) {
    const first = entry.value[0]!
    const list = byFirst.get(first)
    if (list === undefined) byFirst.set(first, [entry])
    else list.push(entry)
  }
  return {
    pending: (text) => {
      // The longest end of `text` that is a proper prefix of a value (values are longest first).
      let longest = 0
      const last = text.charCodeAt(text.length - 1)
      for (const { value } of entries) {
        for (let k = Math.min(value.length - 1, text.length); k > longest; k--) {
          if (value.charCodeAt(k - 1) === last && text.endsWith(value.slice(0, k))) {
            longest = k
            break
          }
        }
      }
      return longest
    },
    redact: (text) => {
      // Jump between candidate positions with indexOf on each value, always taking the leftmost.
      let out = ""
      let from = 0
      const next = new Map<string, number>()
      for (const { value } of entries) next.set(value, text.indexOf(value))
      while (true) {
        let at = -1
        for (const position of next.values()) if (position !== -1 && (at === -1 || position < at)) at = position
        if (at === -1) break
        const hit = byFirst.get(text[at]!)!.find(({ value }) => text.startsWith(value, at))!
        out += text.slice(from, at) + `[REDACTED:${hit.name}]`
        from = at + hit.value.length
        for (const [value, position] of next) if (position !== -1 && position < from) next.set(value, text.indexOf(value, from))
      }
      return from === 0 ? text : out + text.slice(from)
    }
  }
}

/** @since 0.1.0 @category models */
export interface RegexOptions {
  /** Replaces the default patterns. */
  readonly patterns?: ReadonlyArray<Pattern> | undefined
  /** Added after the patterns. */
  readonly extraPatterns?: ReadonlyArray<Pattern> | undefined
}

/**
 * The default patterns, in the order they apply: PEM private keys, JWTs, Anthropic and other `sk-`
 * keys, GitHub, Slack, Google and AWS keys, emails.
 *
 * @since 0.1.0
 * @category constructors
 */
export const DEFAULT_PATTERNS: ReadonlyArray<Pattern> = [
  {
    pattern: "-----BEGIN [A-Z ]*PRIVATE KEY-----[\\s\\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    label: "PRIVATE_KEY",
    anchor: "PRIVATE KEY-----",
    spansLines: true
  },
  { pattern: "eyJ[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+", label: "JWT", anchor: "eyJ" },
  { pattern: "sk-ant-[A-Za-z0-9_-]{20,}", label: "ANTHROPIC_KEY", anchor: "sk-ant-" },
  { pattern: "sk-[A-Za-z0-9_-]{20,}", label: "API_KEY", anchor: "sk-" },
  { pattern: "gh[oprsu]_[A-Za-z0-9]{30,}", label: "GITHUB_TOKEN", anchor: "gh" },
  { pattern: "xox[abprs]-[A-Za-z0-9-]{10,}", label: "SLACK_TOKEN", anchor: "xox" },
  { pattern: "AIza[0-9A-Za-z_-]{35}", label: "GOOGLE_API_KEY", anchor: "AIza" },
  { pattern: "AKIA[0-9A-Z]{16}", label: "AWS_ACCESS_KEY", anchor: "AKIA" },
  { pattern: "[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}", label: "EMAIL", anchor: "@" }
]

/**
 * A redactor replacing every match of each pattern, in order, by `[REDACTED:<label>]`. An invalid
 * pattern throws when the redactor is made (it is configuration, not input).
 *
 * @since 0.1.0
 * @category constructors
 */
export const regex = (options: RegexOptions = {}): Service => {
  const compiled = [...(options.patterns ?? DEFAULT_PATTERNS), ...(options.extraPatterns ?? [])].map((p) => {
    const re = RE2JS.compile(p.pattern)
    const replacement = `[REDACTED:${p.label}]`
    const whole = (text: string) => re.matcher(text).replaceAll(replacement, true)
    return p.anchor === undefined ? whole : p.spansLines === true ? anchored(p.anchor, whole) : lineByLine(p.anchor, whole)
  })
  return { redact: (text) => compiled.reduce((out, redact) => redact(out), text) }
}

/** Searches the whole text, when it holds the anchor. */
const anchored = (anchor: string, redact: (text: string) => string) => (text: string): string =>
  text.includes(anchor) ? redact(text) : text

/**
 * Searches only the lines holding the anchor: RE2 costs far more per character than `indexOf`, and
 * tool output is mostly lines none of the patterns could match.
 */
const lineByLine = (anchor: string, redact: (text: string) => string) => (text: string): string => {
  let at = text.indexOf(anchor)
  if (at === -1) return text
  let out = ""
  let from = 0
  while (at !== -1) {
    const start = text.lastIndexOf("\n", at) + 1
    const newline = text.indexOf("\n", at)
    const end = newline === -1 ? text.length : newline
    out += text.slice(from, start) + redact(text.slice(start, end))
    from = end
    at = text.indexOf(anchor, end)
  }
  return out + text.slice(from)
}

// ---------------------------------------------------------------------------------------------
// Combinators
// ---------------------------------------------------------------------------------------------

/**
 * Redactors applied one after the other.
 *
 * @since 0.1.0
 * @category combinators
 */
export const compose = (...redactors: ReadonlyArray<Service>): Service => {
  const active = redactors.filter((r) => r !== none)
  if (active.length === 0) return none
  if (active.length === 1) return active[0]!
  const holding = active.flatMap((r) => (r.pending === undefined ? [] : [r.pending]))
  return {
    redact: (text) => active.reduce((acc, r) => r.redact(acc), text),
    ...(holding.length === 0 ? {} : { pending: (text: string) => Math.max(...holding.map((pending) => pending(text))) })
  }
}

/**
 * Redacts a text that arrives in chunks (a model's streamed reply): `next` gives what of the text
 * so far can be shown, redacted, holding back an end that could begin a value (`pending`), so a
 * value split across chunks is replaced whole; `end` gives what was held back.
 *
 * @since 0.1.0
 * @category combinators
 */
export const chunks = (redactor: Service): { readonly next: (chunk: string) => string; readonly end: () => string } => {
  let held = ""
  return {
    next: (chunk) => {
      const text = redactor.redact(held + chunk)
      const keep = redactor.pending?.(text) ?? 0
      held = text.slice(text.length - keep)
      return text.slice(0, text.length - keep)
    },
    end: () => {
      const rest = held
      held = ""
      return rest
    }
  }
}

/**
 * Redacts every string inside a value that is about to leave the runtime: a JSON value (the `data`
 * of a structured result, assigns), keys included, or an error with its fields, reason and cause
 * (a copy with the same class, so `_tag`, `instanceof` and a `message` computed from the fields
 * still hold). `Redacted` values, and objects of other classes, are kept as they are. The value
 * is returned as it is when `redact` is the identity of a session without secrets.
 *
 * @since 0.1.0
 * @category combinators
 */
export const redactValue = <A>(redact: (text: string) => string, value: A): A =>
  redact === none.redact ? value : deep(redact, value, 0) as A

/**
 * A cause with its failures and defects redacted (`redactValue`), its interruptions kept: what a
 * span, a log line or a caller receives when an effect that saw secrets fails.
 *
 * @since 0.1.0
 * @category combinators
 */
export const redactCause = <E>(redact: (text: string) => string, cause: Cause.Cause<E>): Cause.Cause<E> =>
  redact === none.redact ? cause : Cause.fromReasons(cause.reasons.map((reason): Cause.Reason<E> =>
    Cause.isFailReason(reason)
      ? Cause.makeFailReason(redactValue(redact, reason.error))
      : Cause.isDieReason(reason)
      ? Cause.makeDieReason(redactValue(redact, reason.defect))
      : reason
  ))

/**
 * Deeper than any error chain or JSON a tool returns: what is below is replaced by
 * `TOO_DEEP`, never kept raw (a cycle ends here too).
 */
const MAX_DEPTH = 64

/** What stands for a part of a value nested deeper than `MAX_DEPTH` levels. */
export const TOO_DEEP = "[REDACTED:TOO_DEEP]"

const deep = (redact: (text: string) => string, value: unknown, depth: number): unknown => {
  if (typeof value === "string") return redact(value)
  if (typeof value !== "object" || value === null || Redacted.isRedacted(value)) return value
  if (depth >= MAX_DEPTH) return TOO_DEEP
  if (Array.isArray(value)) return value.map((item) => deep(redact, item, depth + 1))
  const proto = Object.getPrototypeOf(value)
  if (proto === Object.prototype || proto === null) {
    const out: Record<string, unknown> = proto === null ? Object.create(null) : {}
    // Defined, not assigned: a key named `__proto__` stays a key (assigned, it would set the prototype).
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(out, redact(key), { value: deep(redact, item, depth + 1), enumerable: true, writable: true, configurable: true })
    }
    return out
  }
  if (!(value instanceof Error) && !Predicate.hasProperty(value, "_tag")) return value
  // An error (or a tagged reason): the same class, each own field redacted (`message` and `stack`
  // of a plain Error are own fields; a tagged error computes its message from the others).
  // V8's `stack` is an own accessor reading the original's internal slot: the copy gets its value.
  const copy = Object.create(proto)
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key)!
    const own = "value" in descriptor ? descriptor.value : Reflect.get(value, key)
    Object.defineProperty(copy, key, {
      value: deep(redact, own, depth + 1),
      enumerable: descriptor.enumerable ?? false,
      writable: true,
      configurable: true
    })
  }
  return copy
}

// ---------------------------------------------------------------------------------------------
// Layers
// ---------------------------------------------------------------------------------------------

/**
 * These redactors, applied in order, for every session of the program.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (...redactors: ReadonlyArray<Service>): Layer.Layer<Redactor> => Layer.succeed(Redactor, compose(...redactors))

/**
 * The regex redactor (default patterns, or yours) for every session of the program.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerRegex = (options: RegexOptions = {}): Layer.Layer<Redactor> => Layer.succeed(Redactor, regex(options))

/**
 * JsonLimits — the bounds of a JSON value that comes from outside the program: a model's tool-call
 * arguments and typed answers, an MCP server's messages, a workflow's inputs and HTTP bodies, a
 * stored snapshot read back. Every place that parses such JSON checks it here, and a value past a
 * bound is refused with one typed error (`JsonLimitError`) its caller turns into what its reader
 * acts on: the model reads it as a tool call's error result, a workflow names the input.
 *
 * Why: V8's `JSON.parse` is iterative and takes any depth, but `JSON.stringify`, Schema's
 * encoders, redaction and every other walk over a value recurse. A 10,000-deep tool argument
 * parsed without complaint, then made every later save of its session throw `Maximum call stack
 * size exceeded` (docs/decisions/0077-bounds-of-json-from-outside.md). The check itself never
 * recurses: the text is scanned for its nesting before it is parsed, a value is walked with a
 * stack of its own.
 *
 * The bounds: nesting (`MAX_DEPTH`, 64 levels: the depth `Redactor.redactValue` keeps, far past
 * any real tool's arguments or API body), the keys of one object (`MAX_KEYS`), the characters of
 * one string (`MAX_STRING_CHARS`) and of the whole (`MAX_CHARS`). A store reads back what it
 * writes under `stored`: twice the depth (its envelope around values from outside, and the
 * program's own assigns) and no other bound. Keys named `__proto__` are kept as keys: `JSON.parse`
 * defines them as own properties and this module never assigns.
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * The most levels of nesting (objects and arrays) of a JSON value from outside.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_DEPTH = 64

/**
 * The most keys of one object of a JSON value from outside.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_KEYS = 100_000

/**
 * The most characters of one string of a JSON value from outside (16 Mi).
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_STRING_CHARS = 16 * 1024 * 1024

/**
 * The most characters of a whole JSON value from outside, as text (64 Mi: a provider's `maxReplyBytes`).
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_CHARS = 64 * 1024 * 1024

/**
 * The bounds one check applies.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  /** Levels of objects and arrays: `{}` is one, `{"a":[]}` two. */
  readonly maxDepth: number
  /** Keys of one object. */
  readonly maxKeys: number
  /** Characters (UTF-16 code units) of one string, a key included. */
  readonly maxStringChars: number
  /** Characters of the whole value as JSON text (for a value, about: its strings, keys and one per scalar). */
  readonly maxChars: number
}

/**
 * The bounds of JSON from outside.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: Limits = { maxDepth: MAX_DEPTH, maxKeys: MAX_KEYS, maxStringChars: MAX_STRING_CHARS, maxChars: MAX_CHARS }

/**
 * What a session store writes and reads back: twice `MAX_DEPTH` (a snapshot's envelope around
 * values from outside, and the program's assigns), no other bound (a long history is large).
 *
 * @since 0.1.0
 * @category constants
 */
export const stored: Limits = { maxDepth: 2 * MAX_DEPTH, maxKeys: Infinity, maxStringChars: Infinity, maxChars: Infinity }

/**
 * A JSON value refused. `description` completes "the value holds …" (`more than 64 levels of
 * nesting`), so a caller names its own subject: "the arguments hold …", "input `config` holds …".
 *
 * @since 0.1.0
 * @category errors
 */
export class JsonLimitError extends Schema.TaggedError<JsonLimitError>()("JsonLimitError", {
  reason: Schema.Literals(["TooDeep", "TooManyKeys", "StringTooLong", "TooLarge", "NotJson"]),
  description: Schema.String,
  /** What `JSON.parse` or `JSON.stringify` threw, for `NotJson`. */
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `JsonLimits: the value holds ${this.description}`
  }
}

const tooDeep = (limits: Limits) =>
  new JsonLimitError({ reason: "TooDeep", description: `more than ${limits.maxDepth} levels of nesting` })
const tooManyKeys = (limits: Limits) =>
  new JsonLimitError({ reason: "TooManyKeys", description: `an object of more than ${limits.maxKeys} keys` })
const stringTooLong = (limits: Limits) =>
  new JsonLimitError({ reason: "StringTooLong", description: `a string of more than ${limits.maxStringChars} characters` })
const tooLarge = (limits: Limits) =>
  new JsonLimitError({ reason: "TooLarge", description: `more than ${limits.maxChars} characters of JSON` })

const oneLine = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause)).replace(/\s*\n\s*/g, " ")

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/**
 * Why `value` (already parsed, or made by a model's client) breaks `limits`, or `undefined`.
 * Walked with a stack of its own; a cycle is refused as too deep.
 *
 * @since 0.1.0
 * @category validation
 */
export const check = (value: unknown, limits: Limits = defaults): JsonLimitError | undefined => {
  if (typeof value !== "object" || value === null) {
    if (typeof value === "string" && value.length > limits.maxStringChars) return stringTooLong(limits)
    return typeof value === "string" && value.length + 2 > limits.maxChars ? tooLarge(limits) : undefined
  }
  const values: Array<unknown> = [value]
  const depths: Array<number> = [1]
  let chars = 0
  while (values.length > 0) {
    const item = values.pop()
    const depth = depths.pop()!
    if (typeof item === "string") {
      if (item.length > limits.maxStringChars) return stringTooLong(limits)
      chars += item.length + 3
    } else if (typeof item !== "object" || item === null) {
      chars += 2
    } else {
      if (depth > limits.maxDepth) return tooDeep(limits)
      if (Array.isArray(item)) {
        chars += 2
        for (let i = item.length - 1; i >= 0; i--) {
          values.push(item[i])
          depths.push(depth + 1)
        }
      } else {
        const keys = Object.keys(item)
        if (keys.length > limits.maxKeys) return tooManyKeys(limits)
        chars += 2
        for (const key of keys) {
          if (key.length > limits.maxStringChars) return stringTooLong(limits)
          chars += key.length + 3
          values.push((item as Record<string, unknown>)[key])
          depths.push(depth + 1)
        }
      }
    }
    if (chars > limits.maxChars) return tooLarge(limits)
  }
  return undefined
}

/**
 * Whether `text` holds at most `max` opening brackets, in strings or not: then it cannot nest
 * deeper than `max`. `indexOf` runs in native code, so the usual text (a stream's event, a tool's
 * arguments: a few brackets) is cleared without a character-by-character walk in JavaScript,
 * which halved a provider stream's decoding rate (bench/providers-sse).
 */
const fewBrackets = (text: string, max: number): boolean => {
  let count = 0
  for (const bracket of ["{", "["]) {
    for (let i = text.indexOf(bracket); i !== -1; i = text.indexOf(bracket, i + 1)) {
      if (++count > max) return false
    }
  }
  return true
}

/** The index in `text` where its nesting passes `maxDepth`, or -1: brackets counted outside strings. */
const tooDeepAt = (text: string, maxDepth: number): number => {
  if (fewBrackets(text, maxDepth)) return -1
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91) {
      if (++depth > maxDepth) return i
    } else if (c === 125 || c === 93) depth--
  }
  return -1
}

/**
 * The value of JSON `text` within `limits`, or why not: `NotJson` with the parser's message, or
 * the bound it breaks. The nesting is checked on the text before anything is built; keys and
 * strings once parsed (skipped when the text is too short to break them). `envelope`: the levels
 * the text adds around the value the limits are for (a store's file around its snapshot), or takes
 * below it when negative (a row holding one message of the snapshot); errors name `limits` as given.
 *
 * @since 0.1.0
 * @category decoding
 */
export const parse = (text: string, limits: Limits = defaults, envelope = 0): Result.Result<unknown, JsonLimitError> => {
  if (text.length > limits.maxChars) return Result.fail(tooLarge(limits))
  if (tooDeepAt(text, limits.maxDepth + envelope) !== -1) return Result.fail(tooDeep(limits))
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (cause) {
    return Result.fail(new JsonLimitError({ reason: "NotJson", description: `text that is not JSON (${oneLine(cause)})`, cause }))
  }
  // Each key takes at least four characters (`"":0`), each string two more than its own.
  if (text.length <= limits.maxStringChars && text.length < 4 * limits.maxKeys) return Result.succeed(value)
  const refused = check(value, { ...limits, maxChars: Infinity })
  return refused === undefined ? Result.succeed(value) : Result.fail(refused)
}

/**
 * `value` as JSON text within `limits`, or why it cannot be written: `NotJson` for what JSON
 * cannot hold (a cycle, a BigInt, nothing at all), `TooDeep` for a nesting past the bound or
 * past what the stack holds. What a store writes with it, `parse` with the same limits reads back.
 * `envelope` as `parse`'s.
 *
 * @since 0.1.0
 * @category combinators
 */
export const stringify = (value: unknown, limits: Limits = stored, envelope = 0): Result.Result<string, JsonLimitError> => {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (cause) {
    // V8 overflows its stack on a value nested some thousands of levels deep.
    if (cause instanceof RangeError && /call stack/i.test(cause.message)) return Result.fail(tooDeep(limits))
    return Result.fail(new JsonLimitError({ reason: "NotJson", description: `what JSON cannot write (${oneLine(cause)})`, cause }))
  }
  if (text === undefined) return Result.fail(new JsonLimitError({ reason: "NotJson", description: "nothing JSON can write (undefined or a function)" }))
  if (text.length > limits.maxChars) return Result.fail(tooLarge(limits))
  return tooDeepAt(text, limits.maxDepth + envelope) === -1 ? Result.succeed(text) : Result.fail(tooDeep(limits))
}

// ---------------------------------------------------------------------------------------------
// Stand-ins
// ---------------------------------------------------------------------------------------------

const STAND_IN = "[refused JSON: the value holds "

/**
 * What a message keeps in place of a refused value it must hold (a tool call's arguments): a
 * short text saying why, which `refusal` reads back, so the call's result, after a restart too,
 * tells the model what was wrong.
 *
 * @since 0.1.0
 * @category constructors
 */
export const standIn = (error: JsonLimitError): string => `${STAND_IN}${error.description}]`

/**
 * The description a stand-in carries (`more than 64 levels of nesting`), or `undefined` for
 * any other value.
 *
 * @since 0.1.0
 * @category guards
 */
export const refusal = (value: unknown): string | undefined =>
  typeof value === "string" && value.startsWith(STAND_IN) && value.endsWith("]") ? value.slice(STAND_IN.length, -1) : undefined

/**
 * ToolCall — one tool call as the model sent it, its result, and the exact texts a model reads of
 * it: a result encoded (text, structured data, images) and cut to the tool's limit, a failure or
 * defect in one line, a timeout, a refusal of its caller. The `Executor` runs calls; this module
 * owns the only rendering of their outcomes into model-facing text.
 */
import { Cause, Effect, Exit, Formatter, Option } from "effect"
import type { ImagePart } from "./Message.ts"
import * as Redactor from "./Redactor.ts"
import * as Tool from "./Tool.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** One tool call as the model sent it. */
export interface Call {
  readonly id: string
  readonly name: string
  readonly input: unknown
  /** Who made the call: the model directly (`human`, the default) or code it runs. */
  readonly caller?: Tool.Caller | undefined
}

/** One call's result, ready for the model (`content`) and for events (`data`). */
export interface Result {
  readonly callId: string
  readonly name: string
  readonly content: string
  readonly isError: boolean
  /** The `data` of a `Tool.structured` result; absent otherwise. */
  readonly data?: unknown
  /** The images of a `Tool.images` result, for the model; absent otherwise. */
  readonly images?: ReadonlyArray<ImagePart>
}

/** A call's result, with what it sets in the assigns (patches never reach the model). */
export interface Done {
  readonly result: Result
  readonly patch?: Readonly<Record<string, unknown>> | undefined
}

// ---------------------------------------------------------------------------------------------
// Rendering: the exact texts a model reads
// ---------------------------------------------------------------------------------------------

/**
 * Cuts `text` to `max` code points: 80 % head, the marker, 20 % tail. The marker is not counted.
 *
 * @since 0.1.0
 * @category combinators
 */
export const truncate = (text: string, max: number | undefined): string => {
  // A string of at most `max` UTF-16 units has at most `max` code points: skip the split.
  if (max === undefined || !Number.isInteger(max) || max <= 0 || text.length <= max) return text
  const points = Array.from(text)
  if (points.length <= max) return text
  const head = Math.floor((max * 4) / 5)
  const tail = max - head
  return `${points.slice(0, head).join("")}\n\n[truncated ${points.length} -> ${max} chars]\n\n${
    points.slice(points.length - tail).join("")
  }`
}

/** One line for whatever a tool failed or died with: its message when it has one. */
const describe = (u: unknown): string => {
  if (typeof u === "string") return u
  if (typeof u === "object" && u !== null && typeof (u as { message?: unknown }).message === "string") {
    return (u as { message: string }).message
  }
  return Formatter.format(u)
}

/** A call's error result; `redact` given for a call that ran (a failure's text can quote what the tool saw). */
export const errorResult = (call: Call, content: string, redact?: (text: string) => string): Done => ({
  result: { callId: call.id, name: call.name, content: redact === undefined ? content.toWellFormed() : redact(content.toWellFormed()), isError: true }
})

interface Encoded {
  readonly text: string
  readonly data?: unknown
  readonly images?: ReadonlyArray<ImagePart>
}

/** Encodes a successful output; a value JSON cannot encode is the tool's bug: a defect. */
const encode = (output: Tool.Output): Effect.Effect<Encoded> => {
  if (output === undefined) return Effect.succeed({ text: "" })
  if (typeof output === "string") return Effect.succeed({ text: output })
  if (output instanceof Tool.Structured) return Effect.succeed({ text: output.text, data: output.data })
  if (output instanceof Tool.Images) return Effect.succeed({ text: output.text, images: output.images })
  if (output instanceof Tool.Assign) return encode(output.value)
  return Effect.map(json(output), (text) => ({ text }))
}

const json = (value: unknown): Effect.Effect<string> =>
  Effect.try({ try: () => JSON.stringify(value), catch: (cause) => cause }).pipe(
    Effect.orDie,
    Effect.flatMap((text) =>
      text === undefined ? Effect.die(new TypeError(`the result is not JSON (${typeof value})`)) : Effect.succeed(text)
    )
  )

/**
 * What the model reads when a tool is called by a caller it does not allow: the model directly
 * (`human`) or code it runs (`code_execution`).
 */
export const refusal = (tool: string, caller: Tool.Caller): string =>
  caller === "human"
    ? `Tool ${tool} cannot be called directly: call it from code execution`
    : `Tool ${tool} cannot be called from code execution: call it directly`

/**
 * A structured tool answers code (a programmatic caller) with its data as JSON, which the code
 * can parse; the model reading it directly gets the text.
 */
const encodeFor = (tool: Tool.Tool<unknown>, call: Call, output: Tool.Output): Effect.Effect<Encoded> =>
  call.caller === "code_execution" && tool.resultType === "structured" && output instanceof Tool.Structured
    ? Effect.map(json(output.data ?? null), (text) => ({ text, data: output.data }))
    : encode(output)

export const render = (
  tool: Tool.Tool<unknown>,
  call: Call,
  timeoutMs: number,
  exit: Exit.Exit<Option.Option<Tool.Output>, Tool.Failure>,
  redact: (text: string) => string
): Effect.Effect<Done> => {
  if (Exit.isSuccess(exit)) {
    if (Option.isNone(exit.value)) return Effect.succeed(errorResult(call, `Tool ${tool.name} timed out after ${timeoutMs}ms`, redact))
    const output = exit.value.value
    return encodeFor(tool, call, output).pipe(
      Effect.map(({ data, images, text }): Done => ({
        result: {
          callId: call.id,
          name: call.name,
          // Redacted before the cut: a cut must not leave half a secret behind.
          content: truncate(redact(text), tool.maxResultChars).toWellFormed(),
          isError: false,
          ...(data === undefined ? {} : { data: Redactor.redactValue(redact, data) }),
          ...(images === undefined || images.length === 0 ? {} : { images })
        },
        patch: output instanceof Tool.Assign ? output.patch : undefined
      })),
      Effect.catchCause((cause) => crashed(tool, call, cause, redact))
    )
  }
  const error = Cause.findErrorOption(exit.cause)
  if (Option.isSome(error)) return Effect.succeed(errorResult(call, `Error: ${describe(error.value)}`, redact))
  if (Cause.hasDies(exit.cause)) return crashed(tool, call, exit.cause, redact)
  return Effect.succeed(errorResult(call, `Tool ${tool.name} was interrupted`, redact))
}

/**
 * A defect is a bug: the model gets one line, the log gets the whole defect — redacted, as
 * everything leaving the runtime (the defect's message can quote what the tool saw).
 */
const crashed = (
  tool: Tool.Tool<unknown>,
  call: Call,
  cause: Cause.Cause<unknown>,
  redact: (text: string) => string
): Effect.Effect<Done> => {
  const defect = Cause.findDefect(cause)
  const message = defect._tag === "Success" ? describe(defect.success) : "unknown defect"
  return Effect.as(
    Effect.logError(`Tool ${tool.name} crashed`, Redactor.redactCause(redact, cause)).pipe(Effect.annotateLogs({ tool: tool.name, callId: call.id })),
    errorResult(call, `Tool ${tool.name} crashed: ${message}`, redact)
  )
}

/**
 * Output — a run's typed answer: the Schema a caller passes as `run(prompt, { output })`, what
 * the model is shown of it, and how its reply is decoded.
 *
 * A provider with a native mechanism (`Model.Service.nativeOutput`) receives the answer's JSON
 * Schema with the request and the final reply's text is decoded; any other model is offered a
 * `submit` tool whose arguments are the answer, so tool calls and a typed answer share one run.
 * A reply that does not decode is sent back to the model with the Schema's error, up to
 * `maxRetries` times (docs/decisions/0062-structured-output.md); an answer past `JsonLimits` is
 * sent back the same way, before the Schema walks it. This module refuses to talk
 * to a model: the session's conversation does.
 */
import { Result, Schema } from "effect"
import * as JsonLimits from "./JsonLimits.ts"
import type * as Model from "./Model.ts"
import { jsonSchema } from "./Tool.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * A Schema a run's answer decodes with: its JSON encoding is what the model writes.
 *
 * @since 0.1.0
 * @category models
 */
export type Output = Schema.Top & { readonly DecodingServices: never }

/** The tool a model without a native mechanism calls with its answer. */
export const SUBMIT_TOOL = "submit"

/** How many replies that do not decode are sent back to the model before the run fails. */
export const DEFAULT_MAX_RETRIES = 2

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

const specs = new WeakMap<Output, Model.Output>()

/**
 * What the model is shown of `schema` (made once per Schema: a run sends it every turn).
 *
 * @since 0.1.0
 * @category constructors
 */
export const spec = (schema: Output): Model.Output => {
  let out = specs.get(schema)
  if (out === undefined) {
    out = { name: "answer", schema: jsonSchema(schema) }
    specs.set(schema, out)
  }
  return out
}

const submitTools = new WeakMap<Output, Model.ToolSpec>()

/**
 * The `submit` tool offered to a model without a native mechanism.
 *
 * @since 0.1.0
 * @category constructors
 */
export const submitTool = (schema: Output): Model.ToolSpec => {
  let tool = submitTools.get(schema)
  if (tool === undefined) {
    tool = {
      name: SUBMIT_TOOL,
      description: "Submit your final answer. Call it once, when you are done, with the answer as its arguments.",
      parameters: spec(schema).schema
    }
    submitTools.set(schema, tool)
  }
  return tool
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/**
 * The answer in `input` (JSON already parsed), or the Schema's error as the model reads it.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = (schema: Output, input: unknown): Result.Result<unknown, string> => {
  // Past JsonLimits (or a message's stand-in for such arguments): refused before the Schema walks it.
  const why = JsonLimits.refusal(input) ?? JsonLimits.check(input)?.description
  if (why !== undefined) return Result.fail(`The answer holds ${why}, past what an answer may be: answer with flatter, smaller JSON.`)
  const decoded = Schema.decodeUnknownResult(Schema.toCodecJson(schema) as unknown as Schema.Decoder<unknown>)(input, {
    errors: "all",
    onExcessProperty: "error"
  })
  return Result.mapError(decoded, (error) => error.message)
}

/**
 * The answer in a reply's text (JSON), or why it is none.
 *
 * @since 0.1.0
 * @category decoding
 */
export const parse = (schema: Output, text: string): Result.Result<unknown, string> =>
  Result.flatMap(
    Result.mapError(JsonLimits.parse(text), (error) =>
      error.reason === "NotJson"
        ? "The reply is not JSON: reply with only the JSON of the answer."
        : `The answer holds ${error.description}, past what an answer may be: answer with flatter, smaller JSON.`),
    (input) => decode(schema, input)
  )

/**
 * What the model reads when its answer did not decode.
 *
 * @since 0.1.0
 * @category decoding
 */
export const retryPrompt = (error: string): string => `Your answer does not match the required schema:\n${error}\nAnswer again.`

/** What a model on the submit path reads when it replied with text instead of calling `submit`. */
export const SUBMIT_REQUIRED = `No answer was submitted: call the ${SUBMIT_TOOL} tool with your answer.`

/** The result a model reads for a `submit` call that was accepted. */
export const SUBMITTED = "Answer received."

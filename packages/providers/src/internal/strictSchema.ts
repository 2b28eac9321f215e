/**
 * strictSchema — OpenAI's strict mode at the wire boundary, in both directions.
 *
 * Strict function calling wants every object closed and every key required; a key our schema
 * makes optional becomes required and nullable (`anyOf [X, null]`), and the model then sends
 * `null` for it. `toStrict` rewrites a tool's JSON Schema that way (or says it cannot: an open
 * object), and `fromStrict` drops those nulls from the arguments, so tools see absence as their
 * schema means it; `answer` does the same for a typed answer's text. Nothing outside the OpenAI providers sees either form.
 */
import type * as Model from "@condukt/core/Model"
import type * as ModelError from "@condukt/core/ModelError"
import { type JsonSchema, Stream } from "effect"
import { parseJson, toolInput as inputOf } from "./providerStream.ts"

type Schema = Record<string, unknown>

const isObject = (u: unknown): u is Schema => typeof u === "object" && u !== null && !Array.isArray(u)

const nullable = (schema: Schema): Schema => ({ anyOf: [schema, { type: "null" }] })

/** Keywords strict mode does not take: a schema holding one is sent as it is, not strict. */
const UNSUPPORTED = ["allOf", "oneOf", "not", "if", "patternProperties", "dependentRequired", "dependentSchemas"]

const convert = (schema: Schema): Schema | undefined => {
  if (UNSUPPORTED.some((keyword) => keyword in schema)) return undefined
  const out: Schema = { ...schema }
  if (isObject(schema.properties) || schema.type === "object") {
    // An open object cannot be strict: the model could not send the keys it may add.
    if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) return undefined
    const properties = isObject(schema.properties) ? schema.properties : {}
    const required = new Set(Array.isArray(schema.required) ? schema.required : [])
    const converted: Schema = {}
    for (const [key, value] of Object.entries(properties)) {
      if (!isObject(value)) return undefined
      const strict = convert(value)
      if (strict === undefined) return undefined
      converted[key] = required.has(key) ? strict : nullable(strict)
    }
    out.properties = converted
    out.required = Object.keys(properties)
    out.additionalProperties = false
  }
  if (isObject(schema.items)) {
    const items = convert(schema.items)
    if (items === undefined) return undefined
    out.items = items
  }
  if (Array.isArray(schema.anyOf)) {
    const members: Array<Schema> = []
    for (const member of schema.anyOf) {
      const strict = isObject(member) ? convert(member) : undefined
      if (strict === undefined) return undefined
      members.push(strict)
    }
    out.anyOf = members
  }
  return out
}

/** The strict form of a tool's parameters, or `undefined` when the schema cannot be strict. */
export const toStrict = (schema: JsonSchema.JsonSchema): JsonSchema.JsonSchema | undefined =>
  convert(schema as Schema) as JsonSchema.JsonSchema | undefined

/** The model's arguments with the nulls strict mode made it send for optional keys removed. */
export const fromStrict = (schema: JsonSchema.JsonSchema, value: unknown): unknown => {
  const s = schema as Schema
  if (Array.isArray(value)) return isObject(s.items) ? value.map((item) => fromStrict(s.items as Schema, item)) : value
  if (!isObject(value) || !isObject(s.properties)) return value
  const properties = s.properties
  const required = new Set(Array.isArray(s.required) ? s.required : [])
  const out: Schema = {}
  for (const [key, item] of Object.entries(value)) {
    if (item === null && !required.has(key)) continue
    out[key] = isObject(properties[key]) ? fromStrict(properties[key] as JsonSchema.JsonSchema, item) : item
  }
  return out
}

/** A tool as a strict request sends it: its parameters, strict when they could be made so. */
export interface StrictTool {
  readonly tool: Model.ToolSpec
  readonly parameters: JsonSchema.JsonSchema
  readonly strict: boolean
}

/**
 * A request's tools and typed answer as OpenAI's two APIs send them: with `strict`, each schema
 * that can be strict is; `strict` maps each tool that went strict to its own parameters (its
 * arguments lose strict mode's nulls, `toolInput`), and `answer` is the typed answer's own schema
 * when it went strict (its text loses them, `answer`).
 */
export const forRequest = (request: Model.Request, strict: boolean): {
  readonly tools: ReadonlyArray<StrictTool>
  readonly strict: ReadonlyMap<string, JsonSchema.JsonSchema>
  /** The typed answer's schema as sent (strict when it could be), if the request wants one. */
  readonly output: JsonSchema.JsonSchema | undefined
  readonly answer: JsonSchema.JsonSchema | undefined
} => {
  const originals = new Map<string, JsonSchema.JsonSchema>()
  const tools = request.tools.map((tool): StrictTool => {
    const parameters = strict ? toStrict(tool.parameters) : undefined
    if (parameters !== undefined) originals.set(tool.name, tool.parameters)
    return { tool, parameters: parameters ?? tool.parameters, strict: parameters !== undefined }
  })
  const output = request.output === undefined || !strict ? undefined : toStrict(request.output.schema)
  return {
    tools,
    strict: originals,
    output: output ?? request.output?.schema,
    answer: output === undefined ? undefined : request.output?.schema
  }
}

/** A call's arguments from their streamed text (`providerStream.toolInput`), strict mode's nulls out when its tool went strict. */
export const toolInput = (strict: ReadonlyMap<string, JsonSchema.JsonSchema>, name: string, text: string): unknown => {
  const schema = strict.get(name)
  return inputOf(text, (value) => (schema === undefined ? value : fromStrict(schema, value)))
}

/**
 * A reply to a request whose typed answer went strict: its text (the answer's JSON) is held and
 * let out once, before the finish, with strict mode's nulls taken out. An answer is one value, so
 * nothing is lost by not streaming it; text that is not JSON goes out as it came.
 */
export const answer = (schema: JsonSchema.JsonSchema, parts: Stream.Stream<Model.Part, ModelError.ModelError>): Stream.Stream<Model.Part, ModelError.ModelError> =>
  Stream.suspend(() => {
    let text = ""
    const held = (): Array<Model.Part> => {
      if (text === "") return []
      // Not JSON: it goes as it came, and the session's decoding says so to the model.
      const parsed = parseJson(text)
      const out = parsed.ok ? JSON.stringify(fromStrict(schema, parsed.value)) : text
      text = ""
      return [{ _tag: "TextDelta", text: out }]
    }
    return Stream.concat(
      Stream.flatMap(parts, (part) => {
        if (part._tag === "TextDelta") {
          text += part.text
          return Stream.empty
        }
        return part._tag === "Finish" ? Stream.fromIterable([...held(), part]) : Stream.succeed(part)
      }),
      Stream.suspend(() => Stream.fromIterable(held()))
    )
  })

/**
 * strictSchema — OpenAI's strict mode at the wire boundary, in both directions.
 *
 * Strict function calling wants every object closed and every key required; a key our schema
 * makes optional becomes required and nullable (`anyOf [X, null]`), and the model then sends
 * `null` for it. `toStrict` rewrites a tool's JSON Schema that way (or says it cannot: an open
 * object), and `fromStrict` drops those nulls from the arguments, so tools see absence as their
 * schema means it. Nothing outside the OpenAI providers sees either form.
 */
import type { JsonSchema } from "effect"

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

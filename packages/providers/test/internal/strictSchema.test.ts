import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Tool from "@condukt/core/Tool"
import * as strictSchema from "../../src/internal/strictSchema.ts"

describe("strictSchema.toStrict", () => {
  it("makes every key required, the optional ones nullable, every object closed", () => {
    const schema = Tool.jsonSchema(Schema.Struct({ a: Schema.String, b: Schema.optionalKey(Schema.String) }))
    assert.deepStrictEqual(strictSchema.toStrict(schema), {
      type: "object",
      properties: { a: { type: "string" }, b: { anyOf: [{ type: "string" }, { type: "null" }] } },
      required: ["a", "b"],
      additionalProperties: false
    })
  })

  it("gives up on what strict mode refuses: an open object, allOf, not", () => {
    const withRest = Tool.jsonSchema(Schema.StructWithRest(Schema.Struct({ a: Schema.String }), [Schema.Record(Schema.String, Schema.Number)]))
    assert.deepStrictEqual(
      [withRest, { type: "object", properties: { a: { not: { type: "null" } } } }, Tool.jsonSchema(Schema.Record(Schema.String, Schema.String))].map(
        (schema) => strictSchema.toStrict(schema as Tool.Tool["parameters"])
      ),
      [undefined, undefined, undefined]
    )
  })
})

import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, type JsonSchema, Schema } from "effect"
import * as Tool from "../src/Tool.ts"

const Params = Schema.Struct({
  path: Schema.String.annotate({ description: "File to read, relative to the workspace" }),
  offset: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({ description: "First line" })),
  limit: Schema.optional(Schema.Int),
  mode: Schema.Literals(["text", "base64"]),
  filter: Schema.Struct({
    glob: Schema.optionalKey(Schema.String),
    tags: Schema.Array(Schema.String).annotate({ description: "Tags to match" })
  }).annotate({ description: "What to include" })
}).annotate({ description: "Reads a file" })

const Read = Tool.make("read_file", {
  description: "Reads a file",
  parameters: Params,
  call: ({ path, offset, mode }) => Effect.succeed(`${path}:${offset ?? 1}:${mode}`)
})

describe("Tool", () => {
  it("derives a closed, inline JSON Schema that providers accept", () => {
    assert.deepStrictEqual(Read.parameters, {
      type: "object",
      description: "Reads a file",
      properties: {
        path: { type: "string", description: "File to read, relative to the workspace" },
        offset: { type: "integer", minimum: 1, description: "First line" },
        limit: { type: "integer" },
        mode: { type: "string", enum: ["text", "base64"] },
        filter: {
          type: "object",
          description: "What to include",
          properties: {
            glob: { type: "string" },
            tags: { type: "array", items: { type: "string" }, description: "Tags to match" }
          },
          required: ["tags"],
          additionalProperties: false
        }
      },
      required: ["path", "mode", "filter"],
      additionalProperties: false
    })
    const text = JSON.stringify(Read.parameters)
    assert.notInclude(text, "$ref")
    assert.notInclude(text, "null")
    assert.notInclude(text, "anyOf")
  })

  it("fills the optional fields with their defaults", () => {
    assert.deepStrictEqual(
      [Read.concurrent, Read.maxResultChars, Read.allowedCallers, Read.resultType, Read.timeout],
      [true, undefined, ["human"], "text", undefined]
    )
  })

  it.effect("decodes model JSON: an optional key may be null, excess keys and bad types name their fields", () =>
    Effect.gen(function*() {
      const args = yield* Read.decode({ path: "a.ts", limit: null, mode: "text", filter: { tags: [] } })
      assert.deepStrictEqual(args, { path: "a.ts", limit: undefined, mode: "text", filter: { tags: [] } })
      const error = yield* Effect.flip(Read.decode({ path: "a.ts", offset: 0, mode: "hex", filter: { tags: [1] }, x: 1 }))
      assert.strictEqual(
        error.message,
        "Invalid arguments for tool read_file: x: Expected no excess property; offset: Expected a value greater than or equal to 1; mode: Expected \"text\" | \"base64\"; filter.tags[0]: Expected string"
      )
    }))

  it.effect("accepts a raw JSON Schema and checks the object shape and required keys", () =>
    Effect.gen(function*() {
      const raw = Tool.make("echo", {
        description: "Echoes",
        parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        call: (args) => Effect.succeed(String(args.text))
      })
      assert.deepStrictEqual(raw.parameters, { type: "object", properties: { text: { type: "string" } }, required: ["text"] })
      assert.deepStrictEqual(yield* raw.decode({ text: "hi" }), { text: "hi" })
      assert.strictEqual((yield* Effect.flip(raw.decode({}))).message, "Invalid arguments for tool echo: text: Missing key")
      assert.strictEqual(
        (yield* Effect.flip(raw.decode([1]))).message,
        "Invalid arguments for tool echo: Expected a JSON object, got [1]"
      )
    }))

  it("makes parameterized tools with functions", () => {
    const Query = (table: string) =>
      Tool.make(`query_${table}`, {
        description: `Queries the ${table} table`,
        parameters: Schema.Struct({ where: Schema.String }),
        call: ({ where }) => Effect.succeed(`SELECT * FROM ${table} WHERE ${where}`)
      })
    assert.deepStrictEqual([Query("users").name, Query("orders").description], ["query_users", "Queries the orders table"])
  })

  it("rejects names providers refuse", () => {
    assert.throws(
      () => Tool.make("has space", { description: "", parameters: Schema.Struct({}), call: () => Effect.void }),
      "Tool name \"has space\" must be 1-128 characters of letters, digits, _ . -"
    )
  })

  describe("parameters' root: an object for every provider", () => {
    const parametersOf = (parameters: Schema.Top & { readonly DecodingServices: never }) =>
      Tool.make("t", { description: "t", parameters, call: () => Effect.void }).parameters

    it("no parameters (an empty Struct) is an empty closed object", () => {
      assert.deepStrictEqual(parametersOf(Schema.Struct({})), { type: "object", properties: {}, additionalProperties: false })
    })

    it("a Struct of optional keys is an object requiring nothing", () => {
      assert.deepStrictEqual(parametersOf(Schema.Struct({ a: Schema.optionalKey(Schema.String) })), {
        type: "object",
        properties: { a: { type: "string" } },
        additionalProperties: false
      })
    })

    it.effect("a union of Structs is one object: each key once, required when every member requires it; decoding checks the union", () =>
      Effect.gen(function*() {
        const tool = Tool.make("shape", {
          description: "t",
          parameters: Schema.Union([
            Schema.Struct({ kind: Schema.Literal("circle"), radius: Schema.Int }),
            Schema.Struct({ kind: Schema.Literal("square"), side: Schema.Int })
          ]).annotate({ description: "A shape" }),
          call: () => Effect.void
        })
        assert.deepStrictEqual(tool.parameters, {
          type: "object",
          description: "A shape",
          properties: {
            kind: { anyOf: [{ type: "string", enum: ["circle"] }, { type: "string", enum: ["square"] }] },
            radius: { type: "integer" },
            side: { type: "integer" }
          },
          required: ["kind"],
          additionalProperties: false
        })
        assert.deepStrictEqual(yield* tool.decode({ kind: "square", side: 2 }), { kind: "square", side: 2 })
        assert.strictEqual(
          (yield* Effect.flip(tool.decode({ kind: "square" }))).message,
          "Invalid arguments for tool shape: side: Missing key"
        )
      }))

    it("a Record is an object with properties and the values' schema", () => {
      assert.deepStrictEqual(parametersOf(Schema.Record(Schema.String, Schema.String)), {
        type: "object",
        properties: {},
        additionalProperties: { type: "string" }
      })
    })

    it("a raw JSON Schema gets the type and properties it lacks", () => {
      const raw = (parameters: Record<string, unknown>) =>
        Tool.make("t", { description: "t", parameters: parameters as JsonSchema.JsonSchema, call: () => Effect.void }).parameters
      assert.deepStrictEqual(
        [raw({}), raw({ type: "object" }), raw({ properties: { a: { type: "string" } } })],
        [
          { type: "object", properties: {} },
          { type: "object", properties: {} },
          { type: "object", properties: { a: { type: "string" } } }
        ]
      )
    })

    it("refuses a root no provider can carry, with the schema it got and what to do", () => {
      const refusal = (parameters: Schema.Top & { readonly DecodingServices: never }) => {
        try {
          parametersOf(parameters)
        } catch (error) {
          return error instanceof Tool.ToolDefinitionError ? [error.reason, error.message] : ["not a ToolDefinitionError", String(error)]
        }
        return ["accepted"]
      }
      assert.deepStrictEqual(refusal(Schema.String), [
        "ParametersNotObject",
        "Tool t: parameters must describe a JSON object of named arguments (a Struct, a union of Structs, a Record), the only root every provider takes; got {\"type\":\"string\"}. Put the value under a key: Schema.Struct({ value: ... })"
      ])
      assert.deepStrictEqual(
        refusal(Schema.Union([Schema.Struct({ a: Schema.String }), Schema.Array(Schema.String)]))[0],
        "ParametersNotObject"
      )
    })
  })

  it("keeps the optional fields given", () => {
    const tool = Tool.make("t", {
      description: "t",
      parameters: Schema.Struct({}),
      concurrent: false,
      maxResultChars: 100,
      allowedCallers: ["code_execution"],
      resultType: "structured",
      timeout: "2 seconds",
      call: () => Effect.succeed(Tool.structured("text", { n: 1 }))
    })
    assert.deepStrictEqual(
      [tool.concurrent, tool.maxResultChars, tool.allowedCallers, tool.resultType, tool.timeout?.toJSON()],
      [false, 100, ["code_execution"], "structured", { _id: "Duration", _tag: "Millis", millis: 2000 }]
    )
    assert.strictEqual(tool.timeoutOf, undefined)
  })

  it("reads a call's own timeout from its decoded arguments when given a function", () => {
    const tool = Tool.make("t", {
      description: "t",
      parameters: Schema.Struct({ seconds: Schema.Int }),
      timeout: ({ seconds }) => `${seconds} seconds`,
      call: () => Effect.void
    })
    assert.strictEqual(tool.timeout, undefined)
    assert.deepStrictEqual(tool.timeoutOf?.({ seconds: 90 }), Duration.seconds(90))
  })
})

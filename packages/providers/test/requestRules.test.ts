/**
 * The request validator's own tests: each rule it reads from the vendors' types and docs refuses a
 * body that breaks it, saying where, and passes one that keeps it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Rules from "./requestRules.ts"

const EMPTY_STRUCT_TODAY = { not: { type: "null" } }
const closed = { type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false }
const optional = { type: "object", properties: { a: { type: "string" } }, additionalProperties: false }
const PNG = "iVBORw0KGgo="

describe("requestRules", () => {
  it("Anthropic: a tool's name pattern, an object input_schema, no union at its root; code execution's versions; image and tool_result blocks", () => {
    assert.deepStrictEqual(Rules.anthropic({ tools: [{ name: "Read", input_schema: closed }, { type: "code_execution_20260521", name: "code_execution" }] }), [])
    assert.deepStrictEqual(
      Rules.anthropic({
        tools: [
          { name: "github.create_issue", input_schema: EMPTY_STRUCT_TODAY },
          { name: "union", input_schema: { type: "object", anyOf: [closed] } },
          { type: "code_execution_20250522", name: "code_execution" }
        ],
        messages: [{
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "" }] },
            { type: "image", source: { type: "base64", media_type: "image/bmp", data: PNG } }
          ]
        }]
      }),
      [
        "tools[0].name: Expected a string matching the RegExp ^[a-zA-Z0-9_-]{1,64}$",
        "tools[0].input_schema.type: Missing key",
        "tools[0].input_schema.type: the root must be \"object\", got undefined",
        "tools[1].input_schema: no anyOf at the root",
        "tools[2].type: Expected \"code_execution_20250825\" | \"code_execution_20260120\" | \"code_execution_20260521\"",
        "messages[0].content[0].content.0.text: Expected a value with a length of at least 1",
        "messages[0].content[1].source.media_type: Expected \"image/jpeg\" | \"image/png\" | \"image/gif\" | \"image/webp\""
      ]
    )
  })

  it("OpenAI Chat: the name pattern, an object at the parameters' root, and strict mode's closed objects with every key required", () => {
    const tool = (parameters: unknown, strict?: boolean) => ({
      type: "function",
      function: { name: "t", parameters, ...(strict === undefined ? {} : { strict }) }
    })
    assert.deepStrictEqual(Rules.openAiChat({ tools: [tool(closed, true), tool(optional, false), tool({ type: "object" })] }), [])
    assert.deepStrictEqual(
      Rules.openAiChat({
        tools: [tool(EMPTY_STRUCT_TODAY, false), tool(optional, true), tool({ ...closed, allOf: [] }, true)],
        messages: [{ role: "tool", tool_call_id: "c", content: [{ type: "text", text: "x" }] }, {
          role: "user",
          content: [{ type: "image_url", image_url: { url: "file:///etc/passwd" } }]
        }]
      }),
      [
        "tools[0].function.parameters.type: the root must be \"object\", got undefined",
        "tools[1].function.parameters: strict mode needs every key required (not: a)",
        "tools[2].function.parameters: no allOf at the root",
        "tools[2].function.parameters: strict mode does not support allOf",
        "messages[0].content: a tool message's content is text here",
        "messages[1].content[0].image_url.url: Expected a string matching the RegExp ^(https?:|data:image\\/(jpeg|png|gif|webp);base64,)"
      ]
    )
  })

  it("OpenAI Responses: function tools as the SDK types them, strict mode, the programmatic tool, input_image with its detail", () => {
    const fn = { type: "function", name: "t", parameters: closed, strict: true }
    assert.deepStrictEqual(Rules.openAiResponses({ tools: [fn, { type: "programmatic_tool_calling" }] }), [])
    assert.deepStrictEqual(
      Rules.openAiResponses({
        tools: [{ ...fn, parameters: { type: "object", properties: { a: optional } } }, { type: "function", name: "u", parameters: closed }],
        input: [{ role: "user", content: [{ type: "input_image", image_url: `data:image/png;base64,${PNG}` }] }]
      }),
      [
        "tools[0].parameters: strict mode needs additionalProperties: false",
        "tools[0].parameters: strict mode needs every key required (not: a)",
        "tools[0].parameters.properties.a: strict mode needs every key required (not: a)",
        "tools[1].strict: Missing key",
        "input[0].content[0].detail: Missing key"
      ]
    )
  })

  it("Gemini: a name starting with a letter or _, parametersJsonSchema describing an object, inlineData of an image", () => {
    assert.deepStrictEqual(Rules.google({ tools: [{ functionDeclarations: [{ name: "github.create_issue", parametersJsonSchema: optional }] }] }), [])
    assert.deepStrictEqual(
      Rules.google({
        tools: [{ functionDeclarations: [{ name: "1st", parametersJsonSchema: EMPTY_STRUCT_TODAY }] }],
        contents: [{ role: "user", parts: [{ inlineData: { mimeType: "text/plain", data: "" } }] }]
      }),
      [
        "tools[0].functionDeclarations[0].name: Expected a string matching the RegExp ^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$",
        "tools[0].functionDeclarations[0].parametersJsonSchema.type: the root must be \"object\", got undefined",
        "contents[0].parts[0].inlineData.mimeType: Expected a string matching the RegExp ^image\\/(jpeg|png|gif|webp)$"
      ]
    )
  })

  it("typed answers: OpenAI's json_schema formats (a safe name, an object root, strict rules), Gemini's JSON MIME type, no forced tool with Anthropic's thinking", () => {
    const format = { name: "answer", schema: closed, strict: true }
    assert.deepStrictEqual(Rules.openAiChat({ response_format: { type: "json_schema", json_schema: format } }), [])
    assert.deepStrictEqual(Rules.openAiResponses({ text: { format: { type: "json_schema", ...format } } }), [])
    assert.deepStrictEqual(Rules.google({ generationConfig: { responseMimeType: "application/json", responseJsonSchema: closed } }), [])
    assert.deepStrictEqual(Rules.anthropic({ tool_choice: { type: "any" } }), [])
    assert.deepStrictEqual(
      [
        Rules.openAiChat({ response_format: { type: "json_schema", json_schema: { name: "the answer", schema: optional, strict: true } } }),
        Rules.openAiResponses({ text: { format: { type: "json_schema", name: "answer", schema: { type: "string" }, strict: false } } }),
        Rules.google({ generationConfig: { responseJsonSchema: closed, responseSchema: closed } }),
        Rules.anthropic({ thinking: { type: "enabled", budget_tokens: 1024 }, tool_choice: { type: "any" } })
      ],
      [
        [
          "response_format.json_schema.name: 1 to 64 of a-z, A-Z, 0-9, _ and -",
          "response_format.json_schema.schema: strict mode needs every key required (not: a)"
        ],
        ["text.format.schema.type: the root must be \"object\", got \"string\""],
        ["generationConfig.responseMimeType: a response schema needs application/json", "generationConfig: responseSchema and responseJsonSchema together"],
        ["tool_choice: any cannot be used with thinking"]
      ]
    )
  })
})

/**
 * requestRules — what each vendor documents a request must be, checked on a body as a loopback
 * server received it: the tools (a name the API takes, an object at the parameters' root, strict
 * mode's rules) and the image blocks a conversation carries. A test asserts `[]`; each other entry
 * is one broken rule, named with where it broke.
 *
 * Sources, not our code: the official SDKs' request types — `@anthropic-ai/sdk` 1.14.0
 * (`Messages.Tool`, `CodeExecutionTool20250825/20260120/20260521`, `ImageBlockParam`,
 * `ToolResultBlockParam`), `openai` 7.57.0 (`ChatCompletionFunctionTool`, `FunctionDefinition`,
 * `ChatCompletionContentPartImage`, `Responses.FunctionTool`, `ResponseInputImage`), both
 * devDependencies of this package so the compiler checks every schema below against them
 * (`Checked`: whatever a schema accepts is a value of the SDK's type) — and where a type cannot say
 * it, their documentation: Anthropic's and OpenAI's name pattern `^[a-zA-Z0-9_-]{1,64}$`
 * (`FunctionDefinition.name`'s doc), Anthropic's "input_schema does not support oneOf, allOf, or
 * anyOf at the top level", OpenAI's strict mode (every object closed, every key required, no
 * `allOf`/`not`/`oneOf`/conditionals, an object at the root), and `@google/genai` 3.3.0's
 * `FunctionDeclaration` docs (a name starting with a letter or `_`, of letters, digits, `_ . : -`,
 * at most 128; `parametersJsonSchema` "must describe an object").
 */
import type Anthropic from "@anthropic-ai/sdk"
import { Schema, SchemaIssue } from "effect"
import type OpenAI from "openai"

type Json = Record<string, unknown>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

// ---------------------------------------------------------------------------------------------
// The SDKs' request types, as schemas
// ---------------------------------------------------------------------------------------------

const ProviderName = Schema.String.check(Schema.isPattern(/^[a-zA-Z0-9_-]{1,64}$/))
const GeminiName = Schema.String.check(Schema.isPattern(/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/))
const AnyJson = Schema.Record(Schema.String, Schema.Unknown)

const CodeExecutionVersion = Schema.Literals(["code_execution_20250825", "code_execution_20260120", "code_execution_20260521"])

const AnthropicInputSchema = Schema.StructWithRest(
  Schema.Struct({
    type: Schema.Literal("object"),
    properties: Schema.optionalKey(AnyJson),
    required: Schema.optionalKey(Schema.mutable(Schema.Array(Schema.String)))
  }),
  [AnyJson]
)

const AnthropicTool = Schema.Struct({
  name: ProviderName,
  description: Schema.optionalKey(Schema.String),
  input_schema: AnthropicInputSchema,
  allowed_callers: Schema.optionalKey(Schema.mutable(Schema.Array(Schema.Union([Schema.Literal("direct"), CodeExecutionVersion]))))
})

const AnthropicCodeExecution = Schema.Struct({ type: CodeExecutionVersion, name: Schema.Literal("code_execution") })

const AnthropicImage = Schema.Struct({
  type: Schema.Literal("image"),
  source: Schema.Struct({
    type: Schema.Literal("base64"),
    media_type: Schema.Literals(["image/jpeg", "image/png", "image/gif", "image/webp"]),
    data: Schema.String
  })
})

const AnthropicText = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String.check(Schema.isMinLength(1)) })

const AnthropicToolResult = Schema.Struct({
  type: Schema.Literal("tool_result"),
  tool_use_id: Schema.String,
  content: Schema.optionalKey(Schema.Union([Schema.String, Schema.mutable(Schema.Array(Schema.Union([AnthropicText, AnthropicImage])))])),
  is_error: Schema.optionalKey(Schema.Boolean)
})

const OpenAiChatTool = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: ProviderName,
    description: Schema.optionalKey(Schema.String),
    parameters: Schema.optionalKey(AnyJson),
    strict: Schema.optionalKey(Schema.NullOr(Schema.Boolean))
  })
})

const OpenAiChatImage = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({ url: Schema.String.check(Schema.isPattern(/^(https?:|data:image\/(jpeg|png|gif|webp);base64,)/)) })
})

const ResponsesTool = Schema.Struct({
  type: Schema.Literal("function"),
  name: ProviderName,
  description: Schema.optionalKey(Schema.NullOr(Schema.String)),
  parameters: Schema.NullOr(AnyJson),
  strict: Schema.NullOr(Schema.Boolean),
  allowed_callers: Schema.optionalKey(Schema.NullOr(Schema.mutable(Schema.Array(Schema.Literals(["direct", "programmatic"])))))
})

const ResponsesProgrammatic = Schema.Struct({ type: Schema.Literal("programmatic_tool_calling") })

const ResponsesImage = Schema.Struct({
  type: Schema.Literal("input_image"),
  detail: Schema.Literals(["low", "high", "auto", "original"]),
  image_url: Schema.String.check(Schema.isPattern(/^(https?:|data:image\/(jpeg|png|gif|webp);base64,)/))
})

const GeminiDeclaration = Schema.Struct({
  name: GeminiName,
  description: Schema.optionalKey(Schema.String),
  parametersJsonSchema: Schema.optionalKey(AnyJson)
})

const GeminiInlineData = Schema.Struct({
  inlineData: Schema.Struct({ mimeType: Schema.String.check(Schema.isPattern(/^image\/(jpeg|png|gif|webp)$/)), data: Schema.String })
})

/** `Ours` is accepted only if every value of it is a value of `Theirs`. */
type Accepts<Ours extends Theirs, Theirs> = [Ours, Theirs]

/** The compiler's proof that these schemas accept nothing the SDKs' request types refuse. */
export type Checked = [
  Accepts<typeof AnthropicTool.Type, Anthropic.Messages.Tool>,
  Accepts<
    typeof AnthropicCodeExecution.Type,
    Anthropic.Messages.CodeExecutionTool20250825 | Anthropic.Messages.CodeExecutionTool20260120 | Anthropic.Messages.CodeExecutionTool20260521
  >,
  Accepts<typeof AnthropicImage.Type, Anthropic.Messages.ImageBlockParam>,
  Accepts<typeof AnthropicToolResult.Type, Anthropic.Messages.ToolResultBlockParam>,
  Accepts<typeof OpenAiChatTool.Type, OpenAI.Chat.Completions.ChatCompletionFunctionTool>,
  Accepts<typeof OpenAiChatImage.Type, OpenAI.Chat.Completions.ChatCompletionContentPartImage>,
  Accepts<typeof ResponsesTool.Type, OpenAI.Responses.FunctionTool>,
  Accepts<typeof ResponsesProgrammatic.Type, OpenAI.Responses.Tool.ProgrammaticToolCalling>,
  Accepts<typeof ResponsesImage.Type, OpenAI.Responses.ResponseInputImage>
]

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** What `schema` refuses in `value`, each issue as `<where>.<path>: <message>`. */
const decodes = (where: string, schema: Schema.Top, value: unknown): Array<string> => {
  const result = Schema.decodeUnknownExit(schema as Schema.Decoder<unknown>)(value, { errors: "all" })
  if (result._tag === "Success") return []
  const error = result.cause.reasons.find((reason) => reason._tag === "Fail")?.error
  if (error === undefined) return [`${where}: the schema died`]
  return formatIssues(error.issue).issues.map((i) => `${[where, ...(i.path ?? []).map((p) => String(typeof p === "object" ? p.key : p))].join(".")}: ${i.message}`)
}

const COMBINATORS = ["anyOf", "oneOf", "allOf"]

/** A tool's parameters: an object schema at the root, no union there (Anthropic, OpenAI, Gemini). */
const objectRoot = (where: string, schema: unknown): Array<string> => {
  if (!isObject(schema)) return [`${where}: not a JSON Schema object`]
  const broken: Array<string> = []
  if (schema.type !== "object") broken.push(`${where}.type: the root must be "object", got ${JSON.stringify(schema.type)}`)
  for (const keyword of COMBINATORS) if (keyword in schema) broken.push(`${where}: no ${keyword} at the root`)
  return broken
}

const STRICT_UNSUPPORTED = ["allOf", "oneOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "patternProperties"]

/** OpenAI strict mode: every object closed with every key required, no unsupported keyword, anywhere. */
const strictRules = (where: string, schema: unknown): Array<string> => {
  if (!isObject(schema)) return []
  const broken: Array<string> = STRICT_UNSUPPORTED.filter((k) => k in schema).map((k) => `${where}: strict mode does not support ${k}`)
  if (schema.type === "object" || isObject(schema.properties)) {
    if (schema.additionalProperties !== false) broken.push(`${where}: strict mode needs additionalProperties: false`)
    const keys = Object.keys(isObject(schema.properties) ? schema.properties : {})
    const required = Array.isArray(schema.required) ? schema.required : []
    const missing = keys.filter((key) => !required.includes(key))
    if (missing.length > 0 || !Array.isArray(schema.required)) broken.push(`${where}: strict mode needs every key required (not: ${missing.join(", ")})`)
    for (const key of keys) broken.push(...strictRules(`${where}.properties.${key}`, (schema.properties as Json)[key]))
  }
  if (isObject(schema.items)) broken.push(...strictRules(`${where}.items`, schema.items))
  if (Array.isArray(schema.anyOf)) schema.anyOf.forEach((member, i) => broken.push(...strictRules(`${where}.anyOf[${i}]`, member)))
  return broken
}

const array = (u: unknown): ReadonlyArray<unknown> => (Array.isArray(u) ? u : [])

/** A structured-output format (OpenAI's `json_schema`): a safe name, an object root, strict rules when strict. */
const jsonSchemaFormat = (where: string, format: Json): Array<string> => [
  ...(typeof format.name === "string" && /^[a-zA-Z0-9_-]{1,64}$/.test(format.name) ? [] : [`${where}.name: 1 to 64 of a-z, A-Z, 0-9, _ and -`]),
  ...objectRoot(`${where}.schema`, format.schema),
  ...(format.strict === true ? strictRules(`${where}.schema`, format.schema) : [])
]

/** Every content block of the messages of `list` (named `name`), under `key`, with where it is. */
const blocks = (list: unknown, name: string, key: string): Array<readonly [string, Json]> =>
  array(list).flatMap((message, i) =>
    isObject(message) ? array(message[key]).flatMap((block, j) => (isObject(block) ? [[`${name}[${i}].${key}[${j}]`, block] as const] : [])) : []
  )

// ---------------------------------------------------------------------------------------------
// One function per wire
// ---------------------------------------------------------------------------------------------

/** Anthropic Messages (`POST /v1/messages`). */
export const anthropic = (body: Json): Array<string> => [
  ...array(body.tools).flatMap((tool, i) =>
    isObject(tool) && "input_schema" in tool
      ? [...decodes(`tools[${i}]`, AnthropicTool, tool), ...objectRoot(`tools[${i}].input_schema`, tool.input_schema)]
      : decodes(`tools[${i}]`, AnthropicCodeExecution, tool)
  ),
  ...blocks(body.messages, "messages", "content").flatMap(([where, block]) =>
    block.type === "image"
      ? decodes(where, AnthropicImage, block)
      : block.type === "tool_result"
      ? decodes(where, AnthropicToolResult, block)
      : []
  ),
  // Extended thinking takes tool_choice auto or none only.
  ...(isObject(body.thinking) && isObject(body.tool_choice) && (body.tool_choice.type === "any" || body.tool_choice.type === "tool")
    ? [`tool_choice: ${body.tool_choice.type} cannot be used with thinking`]
    : [])
]

/** OpenAI Chat Completions (`POST /chat/completions`), strict tools and not. */
export const openAiChat = (body: Json): Array<string> => [
  ...array(body.tools).flatMap((tool, i) => {
    const fn = isObject(tool) && isObject(tool.function) ? tool.function : {}
    return [
      ...decodes(`tools[${i}]`, OpenAiChatTool, tool),
      ...("parameters" in fn ? objectRoot(`tools[${i}].function.parameters`, fn.parameters) : []),
      ...(fn.strict === true ? strictRules(`tools[${i}].function.parameters`, fn.parameters) : [])
    ]
  }),
  ...array(body.messages).flatMap((message, i) =>
    isObject(message) && message.role === "tool" && typeof message.content !== "string"
      ? [`messages[${i}].content: a tool message's content is text here`]
      : []
  ),
  ...blocks(body.messages, "messages", "content").flatMap(([where, block]) => (block.type === "image_url" ? decodes(where, OpenAiChatImage, block) : [])),
  ...(isObject(body.response_format) && body.response_format.type === "json_schema"
    ? isObject(body.response_format.json_schema)
      ? jsonSchemaFormat("response_format.json_schema", body.response_format.json_schema)
      : ["response_format.json_schema: missing"]
    : [])
]

/** OpenAI Responses (`POST /responses`). */
export const openAiResponses = (body: Json): Array<string> => [
  ...array(body.tools).flatMap((tool, i) =>
    isObject(tool) && tool.type === "function"
      ? [
        ...decodes(`tools[${i}]`, ResponsesTool, tool),
        ...objectRoot(`tools[${i}].parameters`, tool.parameters),
        ...(tool.strict === true ? strictRules(`tools[${i}].parameters`, tool.parameters) : [])
      ]
      : decodes(`tools[${i}]`, ResponsesProgrammatic, tool)
  ),
  ...blocks(body.input, "input", "content").flatMap(([where, block]) => (block.type === "input_image" ? decodes(where, ResponsesImage, block) : [])),
  ...(isObject(body.text) && isObject(body.text.format) && body.text.format.type === "json_schema" ? jsonSchemaFormat("text.format", body.text.format) : [])
]

/** Gemini (`POST /v1beta/models/{model}:streamGenerateContent`). */
export const google = (body: Json): Array<string> => [
  ...array(body.tools).flatMap((tool, i) =>
    array(isObject(tool) ? tool.functionDeclarations : []).flatMap((declaration, j) => [
      ...decodes(`tools[${i}].functionDeclarations[${j}]`, GeminiDeclaration, declaration),
      ...(isObject(declaration) && "parametersJsonSchema" in declaration
        ? objectRoot(`tools[${i}].functionDeclarations[${j}].parametersJsonSchema`, declaration.parametersJsonSchema)
        : [])
    ])
  ),
  ...blocks(body.contents, "contents", "parts").flatMap(([where, part]) => ("inlineData" in part ? decodes(where, GeminiInlineData, part) : [])),
  // A response schema needs the JSON MIME type; only one of the two schema fields.
  ...(isObject(body.generationConfig) && ("responseJsonSchema" in body.generationConfig || "responseSchema" in body.generationConfig)
    ? [
      ...(body.generationConfig.responseMimeType === "application/json" ? [] : ["generationConfig.responseMimeType: a response schema needs application/json"]),
      ...("responseJsonSchema" in body.generationConfig && "responseSchema" in body.generationConfig ? ["generationConfig: responseSchema and responseJsonSchema together"] : [])
    ]
    : [])
]

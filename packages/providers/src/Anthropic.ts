/**
 * Anthropic — the Messages API, streamed: the only module that knows its wire format.
 *
 * A request becomes `POST {baseUrl}/v1/messages` with `stream: true`: the system prompt, the
 * history as alternating user/assistant messages (a turn's tool results in one user message,
 * errors flagged `is_error`; signed and redacted thinking sent back as it came), the tools and the
 * shared options. The stream's events become parts: text and thinking deltas, signatures, tool
 * calls once their JSON is complete, usage (cache tokens apart) and the stop reason. Programmatic
 * tool calling, as the generally available Messages API has it (no beta header): a tool callable
 * from code execution is sent with `allowed_callers`, the code-execution server tool (the newest
 * version unless `codeExecution` picks an older one) joins the request, a `tool_use` made by code
 * carries that caller and goes back with it as it came, and server tool blocks and the container
 * come back on the next request.
 */
import { Effect, Layer, Stream } from "effect"
import type { Sse } from "effect/encoding"
import { HttpClient } from "effect/http"
import * as anthropicTextDelta from "./internal/anthropicTextDelta.ts"
import * as providerConfig from "./internal/providerConfig.ts"
import * as providerFailure from "./internal/providerFailure.ts"
import * as providerStream from "./internal/providerStream.ts"
import type { ImagePart, Message } from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as ModelError from "@condukt/core/ModelError"
import type * as Provider from "./Provider.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface Options extends Provider.Options {
  /** `anthropic-version` (default `2023-06-01`). */
  readonly version?: string | undefined
  /** The code-execution tool version programmatic tool calling uses (default `CODE_EXECUTION_TOOL`, the newest). */
  readonly codeExecution?: CodeExecutionVersion | undefined
}

/** The code-execution tool versions whose code may call tools (the API's `allowed_callers` values). */
export const CODE_EXECUTION_VERSIONS = ["code_execution_20250825", "code_execution_20260120", "code_execution_20260521"] as const

/** @since 0.1.0 @category models */
export type CodeExecutionVersion = typeof CODE_EXECUTION_VERSIONS[number]

/** The default base URL; `ANTHROPIC_BASE_URL` or `baseUrl` replace it. */
export const DEFAULT_BASE_URL = "https://api.anthropic.com"
export const DEFAULT_VERSION = "2023-06-01"
/** `max_tokens` is required by the API; this is sent when the request sets none. */
export const DEFAULT_MAX_TOKENS = 8192
/** The code-execution server tool a tool's `allowed_callers` names by default: the newest. */
export const CODE_EXECUTION_TOOL: CodeExecutionVersion = "code_execution_20260521"
/** The caller a `tool_use` made by code goes back with when the reply's own was not kept (a history from before it was). */
const FALLBACK_CALLER = "code_execution_20250825"
/** Thinking budgets for a reasoning effort (the API takes tokens only). */
export const THINKING_BUDGETS = { minimal: 1024, low: 2048, medium: 8192, high: 24576 } as const

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

type Block = Record<string, unknown>
interface WireMessage {
  readonly role: "user" | "assistant"
  readonly content: Array<Block>
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const assistantBlocks = (parts: Extract<Message, { _tag: "AssistantMessage" }>["parts"], container: { id?: string }) => {
  const blocks: Array<Block> = []
  for (const part of parts) {
    if (part._tag === "Text") {
      // The API refuses empty text blocks.
      if (part.text !== "") blocks.push({ type: "text", text: part.text })
    } else if (part._tag === "Thinking") {
      if (part.redacted !== undefined) blocks.push({ type: "redacted_thinking", data: part.redacted })
      // Unsigned thinking (another provider's) cannot be sent: the API checks signatures.
      else if (part.signature !== undefined) blocks.push({ type: "thinking", thinking: part.text, signature: part.signature })
    } else if (part._tag === "ToolCall") {
      blocks.push({
        type: "tool_use",
        id: part.id,
        name: part.name,
        // Arguments that were not JSON arrive as their text; the API wants an object back.
        input: isObject(part.input) ? part.input : {},
        ...(part.caller === "code_execution"
          ? { caller: { type: FALLBACK_CALLER, ...(part.callerId === undefined ? {} : { tool_id: part.callerId }) } }
          : {})
      })
    } else if (part.provider === "anthropic" && isObject(part.value)) {
      const value = part.value
      if (value.type === "container" && typeof value.id === "string") container.id = value.id
      else if (value.type === "caller") {
        // The caller exactly as the reply gave it: its type names the code-execution version.
        const call = blocks.find((block) => block.type === "tool_use" && block.id === value.id)
        if (call !== undefined && isObject(value.caller)) call.caller = value.caller
      } else blocks.push(value)
    }
  }
  return blocks
}

const imageBlock = (image: ImagePart): Block => ({
  type: "image",
  source: { type: "base64", media_type: image.mediaType, data: image.data }
})

/** The history as the API wants it: roles alternating, a turn's tool results in one user message. */
export const toWireMessages = (history: Iterable<Message>): { messages: Array<WireMessage>; container: string | undefined } => {
  const messages: Array<WireMessage> = []
  const container: { id?: string } = {}
  const push = (role: WireMessage["role"], blocks: ReadonlyArray<Block>) => {
    if (blocks.length === 0) return
    const last = messages.at(-1)
    if (last?.role === role) last.content.push(...blocks)
    else messages.push({ role, content: [...blocks] })
  }
  for (const message of history) {
    if (message._tag === "UserMessage") {
      // Images before the text, as Anthropic advises; an empty text block would be refused.
      push("user", message.images === undefined
        ? [{ type: "text", text: message.content }]
        : [...message.images.map(imageBlock), ...(message.content === "" ? [] : [{ type: "text", text: message.content }])])
    } else if (message._tag === "ToolResultMessage") {
      push("user", [{
        type: "tool_result",
        tool_use_id: message.callId,
        content: message.images === undefined
          ? message.content
          : [...(message.content === "" ? [] : [{ type: "text", text: message.content }]), ...message.images.map(imageBlock)],
        ...(message.isError ? { is_error: true } : {})
      }])
    } else push("assistant", assistantBlocks(message.parts, container))
  }
  return { messages, container: container.id }
}

const toolChoice = (choice: Model.ToolChoice) =>
  choice === "auto"
    ? { type: "auto" }
    : choice === "none"
    ? { type: "none" }
    : choice === "required"
    ? { type: "any" }
    : { type: "tool", name: choice.tool }

const thinkingBudget = (reasoning: Model.Reasoning | undefined): number | undefined =>
  reasoning?.budgetTokens ?? (reasoning?.effort === undefined ? undefined : THINKING_BUDGETS[reasoning.effort])

/** The request body; programmatic tool calling uses the code-execution tool `codeExecution`. */
export const toWireBody = (
  model: string,
  request: Model.Request,
  codeExecution: CodeExecutionVersion = CODE_EXECUTION_TOOL
): Record<string, unknown> => {
  const options = request.options ?? {}
  const { container, messages } = toWireMessages(request.messages)
  const programmatic = request.tools.some((tool) => tool.allowedCallers?.includes("code_execution") === true)
  const tools: Array<Block> = request.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.parameters,
    ...(tool.allowedCallers === undefined
      ? {}
      : { allowed_callers: tool.allowedCallers.map((caller) => (caller === "human" ? "direct" : codeExecution)) })
  }))
  if (programmatic) tools.push({ type: codeExecution, name: "code_execution" })
  const output = request.output
  if (output !== undefined) tools.push({ name: output.name, description: ANSWER_DESCRIPTION, input_schema: output.schema })
  const budget = thinkingBudget(options.reasoning)
  // A typed answer forces a tool call each turn (the answer is one), except with extended thinking,
  // which takes no forced tool: the model is then asked through the tool's description alone.
  const choice = output !== undefined && budget === undefined ? { type: "any" } : options.toolChoice === undefined ? undefined : toolChoice(options.toolChoice)
  const maxTokens = options.maxTokens ?? (budget === undefined ? DEFAULT_MAX_TOKENS : budget + DEFAULT_MAX_TOKENS)
  return {
    model,
    max_tokens: maxTokens,
    stream: true,
    ...(request.system === undefined || request.system === "" ? {} : { system: request.system }),
    messages,
    ...(tools.length === 0 ? {} : { tools }),
    ...(choice === undefined ? {} : { tool_choice: choice }),
    ...(budget === undefined ? {} : { thinking: { type: "enabled", budget_tokens: budget } }),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    ...(options.topP === undefined ? {} : { top_p: options.topP }),
    ...(options.stopSequences === undefined ? {} : { stop_sequences: options.stopSequences }),
    ...(container === undefined ? {} : { container })
  }
}

/** What the model reads of the forced final tool a typed answer is sent through. */
const ANSWER_DESCRIPTION = "Give your final answer: call this tool once, when you are done, with the answer as its arguments."

/**
 * A reply whose call of the answer tool becomes the answer's JSON text, as on the vendors with a
 * native response format; a reply with no other call then finishes as `stop`.
 */
const answered = (parts: Stream.Stream<Model.Part, ModelError.ModelError>, answer: string): Stream.Stream<Model.Part, ModelError.ModelError> =>
  Stream.suspend(() => {
    let answeredOnly = false
    let otherCalls = false
    return Stream.map(parts, (part): Model.Part => {
      if (part._tag === "ToolCall") {
        if (part.name !== answer) otherCalls = true
        else {
          answeredOnly = !otherCalls
          return { _tag: "TextDelta", text: typeof part.input === "string" ? part.input : JSON.stringify(part.input) }
        }
      }
      return part._tag === "Finish" && answeredOnly && !otherCalls ? { _tag: "Finish", reason: "stop" } : part
    })
  })

// ---------------------------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------------------------

type Open =
  | { readonly type: "text" | "thinking" }
  | {
    readonly type: "tool_use"
    readonly id: string
    readonly name: string
    readonly caller: unknown
    readonly json: Array<string>
  }
  | { readonly type: "server"; readonly block: Block; readonly json: Array<string> }

const finishReason = (stop: unknown): Model.FinishReason =>
  stop === "end_turn" || stop === "stop_sequence"
    ? "stop"
    : stop === "tool_use"
    ? "tool-calls"
    : stop === "max_tokens"
    ? "length"
    : stop === "refusal"
    ? "content-filter"
    : "other"

const num = (u: unknown): number => (typeof u === "number" && Number.isFinite(u) ? u : 0)

const parseInput = (json: ReadonlyArray<string>): unknown => providerStream.toolInput(json.join(""))

/** A decoder for one streamed reply. */
export const decoder = (): providerStream.Decoder => {
  const open = new Map<number, Open>()
  let usage: Record<string, unknown> = {}
  let stop: unknown
  let done = false
  return {
    event: (event: Sse.Event, out) => {
      if (event.event === "ping") return undefined
      // Most of a reply: a text delta, its text read without parsing the whole event.
      const text = event.event === "content_block_delta" ? anthropicTextDelta.textOf(event.data, providerStream.EVENT_LIMITS.maxStringChars) : undefined
      if (text !== undefined) return void out.push({ _tag: "TextDelta", text })
      const parsed = providerStream.parseEvent("anthropic", event.data)
      if (!parsed.ok) return parsed.failure
      const data = parsed.value
      const index = num(data.index)
      switch (event.event) {
        case "message_start": {
          const message = isObject(data.message) ? data.message : {}
          if (isObject(message.usage)) usage = message.usage
          if (isObject(message.container)) out.push({ _tag: "ProviderData", provider: "anthropic", value: { type: "container", id: message.container.id } })
          return undefined
        }
        case "content_block_start": {
          const block = isObject(data.content_block) ? data.content_block : {}
          if (block.type === "text" || block.type === "thinking") {
            open.set(index, { type: block.type })
            const text = block.type === "text" ? block.text : block.thinking
            if (typeof text === "string" && text !== "") {
              out.push({ _tag: block.type === "text" ? "TextDelta" : "ThinkingDelta", text })
            }
          } else if (block.type === "redacted_thinking") {
            out.push({ _tag: "RedactedThinking", data: String(block.data ?? "") })
          } else if (block.type === "tool_use") {
            open.set(index, { type: "tool_use", id: String(block.id ?? ""), name: String(block.name ?? ""), caller: block.caller, json: [] })
          } else if (block.type === "server_tool_use") {
            open.set(index, { type: "server", block, json: [] })
          } else {
            // A server tool's result (code execution, web search): sent back whole next turn.
            out.push({ _tag: "ProviderData", provider: "anthropic", value: block })
          }
          return undefined
        }
        case "content_block_delta": {
          const delta = isObject(data.delta) ? data.delta : {}
          const block = open.get(index)
          if (delta.type === "text_delta" && typeof delta.text === "string") out.push({ _tag: "TextDelta", text: delta.text })
          else if (delta.type === "thinking_delta" && typeof delta.thinking === "string") {
            out.push({ _tag: "ThinkingDelta", text: delta.thinking })
          } else if (delta.type === "signature_delta" && typeof delta.signature === "string") {
            out.push({ _tag: "ThinkingSignature", signature: delta.signature })
          } else if (delta.type === "input_json_delta" && typeof delta.partial_json === "string" && block !== undefined && "json" in block) {
            block.json.push(delta.partial_json)
          }
          return undefined
        }
        case "content_block_stop": {
          const block = open.get(index)
          open.delete(index)
          if (block?.type === "tool_use") {
            const caller = isObject(block.caller) ? block.caller : undefined
            const fromCode = typeof caller?.type === "string" && caller.type.startsWith("code_execution")
            out.push({
              _tag: "ToolCall",
              id: block.id,
              name: block.name,
              input: parseInput(block.json),
              ...(fromCode
                ? { caller: "code_execution" as const, ...(typeof caller.tool_id === "string" ? { callerId: caller.tool_id } : {}) }
                : {})
            })
            if (fromCode) out.push({ _tag: "ProviderData", provider: "anthropic", value: { type: "caller", id: block.id, caller } })
          } else if (block?.type === "server") {
            out.push({ _tag: "ProviderData", provider: "anthropic", value: { ...block.block, input: parseInput(block.json) } })
          }
          return undefined
        }
        case "message_delta": {
          const delta = isObject(data.delta) ? data.delta : {}
          stop = delta.stop_reason
          if (isObject(delta.container)) out.push({ _tag: "ProviderData", provider: "anthropic", value: { type: "container", id: delta.container.id } })
          // message_delta's counts are cumulative: they replace message_start's.
          if (isObject(data.usage)) usage = { ...usage, ...Object.fromEntries(Object.entries(data.usage).filter(([, v]) => v !== null)) }
          return undefined
        }
        case "message_stop": {
          done = true
          const cacheRead = num(usage.cache_read_input_tokens)
          const cacheWrite = num(usage.cache_creation_input_tokens)
          out.push({
            _tag: "Usage",
            inputTokens: num(usage.input_tokens),
            outputTokens: num(usage.output_tokens),
            ...(cacheRead === 0 ? {} : { cacheReadTokens: cacheRead }),
            ...(cacheWrite === 0 ? {} : { cacheWriteTokens: cacheWrite })
          })
          out.push({ _tag: "Finish", reason: finishReason(stop) })
          return undefined
        }
        case "error": {
          const said = providerFailure.fromJson(data) ?? { description: "an error event with no message", type: undefined }
          return providerFailure.classify("anthropic", undefined, said, undefined)
        }
        default:
          return undefined
      }
    },
    end: () =>
      done ? undefined : new ModelError.Network({ provider: "anthropic", description: "the stream ended before the reply was complete" })
  }
}

// ---------------------------------------------------------------------------------------------
// Layers
// ---------------------------------------------------------------------------------------------

const source: providerConfig.Source = { provider: "anthropic", defaultBaseUrl: DEFAULT_BASE_URL }

/**
 * Registers `anthropic:<model>`. The key (`apiKey`, else `ANTHROPIC_API_KEY`) and the base URL
 * (`baseUrl`, else `ANTHROPIC_BASE_URL`, else the API's) are read when a model is resolved.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Model.Providers, never, HttpClient.HttpClient> =>
  Layer.unwrap(Effect.map(Effect.service(HttpClient.HttpClient), (http) => {
    const settings = providerStream.settings(http, options)
    const version = options?.version ?? DEFAULT_VERSION
    return Model.layerProviders({
      anthropic: (name) => {
        const model = `anthropic:${name}`
        return Effect.map(providerConfig.resolve(source, options, model), (resolved): Model.Service => ({
          name: model,
          secrets: resolved.secrets,
          nativeOutput: true,
          stream: (request) => {
            const body = toWireBody(name, request, options?.codeExecution)
            const streamed = providerStream.stream(settings, {
              provider: "anthropic",
              model,
              baseUrl: resolved.baseUrl,
              redact: resolved.redact,
              url: `${resolved.baseUrl}/v1/messages`,
              headers: { "anthropic-version": version },
              auth: { header: "x-api-key", prefix: "", key: resolved.key },
              body,
              decoder
            })
            return request.output === undefined ? streamed : answered(streamed, request.output.name)
          }
        }))
      }
    })
  }))

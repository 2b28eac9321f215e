/**
 * OpenAiResponses — OpenAI's Responses API, streamed: the only module that knows its wire format.
 *
 * A request becomes `POST {baseUrl}/responses` with `stream: true`: the system prompt as
 * `instructions`, the history as input items (user and assistant messages, `function_call` items
 * with their arguments as JSON text, one `function_call_output` per result, and the reasoning and
 * program items the API produced, sent back as they came), flat function tools with strict schemas
 * (as the Chat Completions path sends them, nulls taken back out of the arguments here), and the
 * shared options. Events become parts: output text deltas, reasoning summary deltas (shown as
 * thinking), function calls once their item is done (arguments assembled from their pieces),
 * usage and the finish reason from `response.completed` / `response.incomplete`, and
 * `response.failed` / `error` as typed failures. Programmatic tool calling: a tool callable from
 * code is sent with `allowed_callers` and the `programmatic_tool_calling` tool; a call whose
 * `caller` is a program reaches the tool as a call from `code_execution`.
 */
import type { Layer } from "effect"
import type { Sse } from "effect/encoding"
import { HttpClient } from "effect/http"
import type { History } from "@condukt/core/History"
import type { ImagePart } from "@condukt/core/Message"
import * as openAiLayer from "./internal/openAiLayer.ts"
import * as providerFailure from "./internal/providerFailure.ts"
import * as providerStream from "./internal/providerStream.ts"
import * as Model from "@condukt/core/Model"
import * as ModelError from "@condukt/core/ModelError"
import * as images from "./internal/images.ts"
import * as reasoningEffort from "./internal/reasoningEffort.ts"
import * as strictSchema from "./internal/strictSchema.ts"
import type * as Provider from "./Provider.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface Options extends Provider.Options {
  /** Send strict function schemas (default true). */
  readonly strict?: boolean | undefined
}

/** The default base URL, shared with the Chat Completions provider; `OPENAI_BASE_URL` or `baseUrl` replace it. */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1"
/** The `provider` of the parts this API wants back verbatim (reasoning and program items). */
export const WIRE = "openai-responses"
/** The tool that lets the model write programs calling the tools that allow it. */
export const PROGRAMMATIC_TOOL = "programmatic_tool_calling"

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

type Json = Record<string, unknown>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const programCaller = (callerId: string | undefined) => ({ type: "program", ...(callerId === undefined ? {} : { caller_id: callerId }) })

// `detail` is required by the SDK's `ResponseInputImage` (the API's default is `auto`).
const inputImage = (image: ImagePart): Json => ({ type: "input_image", detail: "auto", image_url: images.dataUrl(image) })

/**
 * The history as input items. A result made for a program goes back with that program as its
 * caller, so the API can resume it.
 */
export const toWireInput = (history: History): Array<Json> => {
  const input: Array<Json> = []
  const callers = new Map<string, Json>()
  const toolImages = new images.AfterResults<Json>()
  for (const message of history) {
    if (message._tag !== "ToolResultMessage") toolImages.flush(input)
    if (message._tag === "UserMessage") {
      input.push({
        role: "user",
        content: message.images === undefined
          ? message.content
          : [...(message.content === "" ? [] : [{ type: "input_text", text: message.content }]), ...message.images.map(inputImage)]
      })
    } else if (message._tag === "ToolResultMessage") {
      const caller = callers.get(message.callId)
      input.push({ type: "function_call_output", call_id: message.callId, output: message.content, ...(caller === undefined ? {} : { caller }) })
      if (message.images !== undefined) {
        toolImages.hold({ type: "input_text", text: images.caption(message.name, message.callId) }, message.images.map(inputImage))
      }
    } else {
      let text = ""
      const flush = () => {
        if (text !== "") input.push({ role: "assistant", content: text })
        text = ""
      }
      for (const part of message.parts) {
        if (part._tag === "Text") text += part.text
        else if (part._tag === "ToolCall") {
          flush()
          const caller = part.caller === "code_execution" ? programCaller(part.callerId) : undefined
          if (caller !== undefined) callers.set(part.id, caller)
          input.push({
            type: "function_call",
            call_id: part.id,
            name: part.name,
            arguments: typeof part.input === "string" ? part.input : JSON.stringify(part.input),
            ...(caller === undefined ? {} : { caller })
          })
        } else if (part._tag === "Provider" && part.provider === WIRE && isObject(part.value)) {
          flush()
          input.push(part.value)
        }
        // Thinking parts are the summaries shown to the user; the reasoning item itself is the Provider part.
      }
      flush()
    }
  }
  toolImages.flush(input)
  return input
}

const toolChoice = (choice: Model.ToolChoice) => (typeof choice === "string" ? choice : { type: "function", name: choice.tool })


/**
 * What one request sends, and each strict tool's schema to take nulls back out with. The API has
 * no stop sequences: `stopSequences` is not sent.
 */
export const toWireBody = (
  model: string,
  request: Model.Request,
  strict: boolean
): openAiLayer.WireBody => {
  const options = request.options ?? {}
  const sent = strictSchema.forRequest(request, strict)
  const tools: Array<Json> = sent.tools.map(({ tool, ...spec }) => ({
    type: "function",
    name: tool.name,
    description: tool.description,
    parameters: spec.parameters,
    strict: spec.strict,
    ...(tool.allowedCallers === undefined
      ? {}
      : { allowed_callers: tool.allowedCallers.map((caller) => (caller === "human" ? "direct" : "programmatic")) })
  }))
  if (request.tools.some((tool) => tool.allowedCallers?.includes("code_execution") === true)) tools.push({ type: PROGRAMMATIC_TOOL })
  const effort = reasoningEffort.of(options.reasoning)
  const body: Json = {
    model,
    ...(request.system === undefined || request.system === "" ? {} : { instructions: request.system }),
    input: toWireInput(request.messages),
    stream: true,
    ...(tools.length === 0 ? {} : { tools }),
    ...(options.toolChoice === undefined ? {} : { tool_choice: toolChoice(options.toolChoice) }),
    ...(options.maxTokens === undefined ? {} : { max_output_tokens: options.maxTokens }),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    ...(options.topP === undefined ? {} : { top_p: options.topP }),
    ...(effort === undefined ? {} : { reasoning: { effort, summary: "auto" } }),
    ...(request.output === undefined
      ? {}
      : { text: { format: { type: "json_schema", name: request.output.name, schema: sent.output, strict: sent.answer !== undefined } } })
  }
  return { body, strict: sent.strict, answer: sent.answer }
}

// ---------------------------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------------------------

const num = (u: unknown): number => (typeof u === "number" && Number.isFinite(u) ? u : 0)
const str = (u: unknown): string => (typeof u === "string" ? u : "")

const incompleteReason = (response: Json): Model.FinishReason => {
  const reason = isObject(response.incomplete_details) ? response.incomplete_details.reason : undefined
  return reason === "max_output_tokens" ? "length" : reason === "content_filter" ? "content-filter" : "other"
}

const usageOf = (response: Json): Model.Part | undefined => {
  if (!isObject(response.usage)) return undefined
  const usage = response.usage
  const cached = isObject(usage.input_tokens_details) ? num(usage.input_tokens_details.cached_tokens) : 0
  return {
    _tag: "Usage",
    inputTokens: num(usage.input_tokens) - cached,
    outputTokens: num(usage.output_tokens),
    ...(cached === 0 ? {} : { cacheReadTokens: cached })
  }
}

/** A decoder for one streamed reply; `strict` names the tools whose arguments lose strict mode's nulls. */
export const decoder = (provider: string, strict: ReadonlyMap<string, Model.ToolSpec["parameters"]>) => (): providerStream.Decoder => {
  // Argument pieces by output index: several calls may be open at once.
  const args = new Map<number, Array<string>>()
  let calls = 0
  let done = false
  const failed = (said: providerFailure.Said) => providerFailure.classify(provider, undefined, said, undefined)

  const itemDone = (item: Json, index: number, out: Array<Model.Part>) => {
    if (item.type === "function_call") {
      calls++
      const pieces = args.get(index)
      args.delete(index)
      const text = pieces === undefined || pieces.length === 0 ? str(item.arguments) : pieces.join("")
      const name = str(item.name)
      const input = strictSchema.toolInput(strict, name, text)
      const caller = isObject(item.caller) && item.caller.type === "program" ? item.caller : undefined
      out.push({
        _tag: "ToolCall",
        id: str(item.call_id),
        name,
        input,
        ...(caller === undefined
          ? {}
          : { caller: "code_execution" as const, ...(typeof caller.caller_id === "string" ? { callerId: caller.caller_id } : {}) })
      })
    } else if (item.type === "reasoning") {
      // Sent back on the next request so the model keeps its reasoning across tool calls.
      out.push({
        _tag: "ProviderData",
        provider: WIRE,
        value: {
          type: "reasoning",
          id: item.id,
          summary: Array.isArray(item.summary) ? item.summary : [],
          ...(typeof item.encrypted_content === "string" ? { encrypted_content: item.encrypted_content } : {})
        }
      })
    } else if (item.type !== "message") {
      // A program and whatever else the API adds: opaque items it wants back as they came.
      const { status: _status, ...rest } = item
      out.push({ _tag: "ProviderData", provider: WIRE, value: rest })
    }
  }

  return {
    event: (event: Sse.Event, out) => {
      if (done) return undefined
      const parsed = providerStream.parseEvent(provider, event.data)
      if (!parsed.ok) return parsed.failure
      const data = parsed.value
      const index = num(data.output_index)
      switch (data.type) {
        case "response.output_text.delta":
        case "response.refusal.delta": {
          if (typeof data.delta === "string" && data.delta !== "") out.push({ _tag: "TextDelta", text: data.delta })
          return undefined
        }
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta": {
          if (typeof data.delta === "string" && data.delta !== "") out.push({ _tag: "ThinkingDelta", text: data.delta })
          return undefined
        }
        case "response.function_call_arguments.delta": {
          if (typeof data.delta !== "string") return undefined
          const pieces = args.get(index)
          if (pieces === undefined) args.set(index, [data.delta])
          else pieces.push(data.delta)
          return undefined
        }
        case "response.output_item.done": {
          if (isObject(data.item)) itemDone(data.item, index, out)
          return undefined
        }
        case "response.completed":
        case "response.incomplete": {
          done = true
          const response = isObject(data.response) ? data.response : {}
          const usage = usageOf(response)
          if (usage !== undefined) out.push(usage)
          const reason = data.type === "response.incomplete" ? incompleteReason(response) : calls > 0 ? "tool-calls" : "stop"
          out.push({ _tag: "Finish", reason })
          return undefined
        }
        case "response.failed": {
          const response = isObject(data.response) ? data.response : {}
          return failed(providerFailure.fromJson(response) ?? { description: "the response failed with no message", type: undefined })
        }
        case "error": {
          // `{type: "error", code, message}`: the code, not the event's type, says what went wrong.
          const error = isObject(data.error) ? data : { error: { message: data.message, code: data.code } }
          return failed(providerFailure.fromJson(error) ?? { description: "an error event with no message", type: undefined })
        }
        default:
          return undefined
      }
    },
    end: () => (done ? undefined : new ModelError.Network({ provider, description: "the stream ended before the reply was complete" }))
  }
}

// ---------------------------------------------------------------------------------------------
// Layers
// ---------------------------------------------------------------------------------------------

/**
 * The Responses API registered under `prefix` (`prefix:<model>`), reading `OPENAI_API_KEY` / `OPENAI_BASE_URL`
 * (the OpenAI provider's `api: "responses"` uses it for `openai:`).
 */
export const layerAs = (prefix: string, options: Options | undefined): Layer.Layer<Model.Providers, never, HttpClient.HttpClient> =>
  openAiLayer.register({ provider: prefix, defaultBaseUrl: DEFAULT_BASE_URL, variables: "openai" }, options, {
    path: "/responses",
    nativeOutput: true,
    body: (model, request) => toWireBody(model, request, options?.strict ?? true),
    decoder
  })

/**
 * Registers `openai-responses:<model>`. The key (`apiKey`, else `OPENAI_API_KEY`) and base URL
 * (`baseUrl`, else `OPENAI_BASE_URL`) are read when a model is resolved.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Model.Providers, never, HttpClient.HttpClient> => layerAs("openai-responses", options)

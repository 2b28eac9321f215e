/**
 * OpenAi — the Chat Completions API, streamed, for OpenAI and every OpenAI-compatible server
 * (the presets `ollama`, `openrouter`, `groq`, `deepseek`, `mistral`, `xai`, `together`, `vllm`,
 * `lmstudio`): the only module that knows this wire format.
 *
 * A request becomes `POST {baseUrl}/chat/completions` with `stream: true` and usage requested:
 * the system prompt as the first message, the history (assistant tool calls with their arguments
 * as JSON text, one `tool` message per result), the tools and the shared options. Chunks become
 * parts: content deltas, reasoning deltas where a server sends them (`reasoning_content`,
 * `reasoning`), tool calls assembled by index from their pieces (ids once, arguments in pieces,
 * several interleaved), usage and the finish reason. OpenAI itself gets strict function schemas
 * (optional keys required and nullable), and the nulls are taken back out of the arguments here.
 * Thinking is never sent back: these servers refuse or ignore it.
 */
import { Layer } from "effect"
import type { Sse } from "effect/encoding"
import { HttpClient } from "effect/http"
import * as openAiLayer from "./internal/openAiLayer.ts"
import * as providerFailure from "./internal/providerFailure.ts"
import * as providerStream from "./internal/providerStream.ts"
import type { ImagePart, Message } from "@condukt/core/Message"
import * as Model from "@condukt/core/Model"
import * as ModelError from "@condukt/core/ModelError"
import * as images from "./internal/images.ts"
import * as reasoningEffort from "./internal/reasoningEffort.ts"
import * as strictSchema from "./internal/strictSchema.ts"
import * as OpenAiResponses from "./OpenAiResponses.ts"
import type * as Provider from "./Provider.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface Options extends Provider.Options {
  /** Send strict function schemas (default: true for OpenAI, false for the compatible servers). */
  readonly strict?: boolean | undefined
  /** Which API `openai:` speaks: Chat Completions (default) or the Responses API (`providers/OpenAiResponses.ts`). */
  readonly api?: "chat" | "responses" | undefined
}

/** An OpenAI-compatible server: where it listens and whether it needs a key. */
export interface Preset {
  readonly baseUrl: string
  /** Sent when no key is set: local servers take any key, or none. */
  readonly keyOptional?: string | undefined
  /** The server takes no image parts (DeepSeek's API): a message's images become a notice in its text. */
  readonly images?: false | undefined
}

export const DEFAULT_BASE_URL = OpenAiResponses.DEFAULT_BASE_URL

/** The compatible servers registered as `<name>:<model>`; `<NAME>_API_KEY` and `<NAME>_BASE_URL` apply to each. */
export const PRESETS = {
  ollama: { baseUrl: "http://localhost:11434/v1", keyOptional: "ollama" },
  openrouter: { baseUrl: "https://openrouter.ai/api/v1" },
  groq: { baseUrl: "https://api.groq.com/openai/v1" },
  deepseek: { baseUrl: "https://api.deepseek.com/v1", images: false },
  mistral: { baseUrl: "https://api.mistral.ai/v1" },
  xai: { baseUrl: "https://api.x.ai/v1" },
  together: { baseUrl: "https://api.together.xyz/v1" },
  vllm: { baseUrl: "http://localhost:8000/v1", keyOptional: "vllm" },
  lmstudio: { baseUrl: "http://localhost:1234/v1", keyOptional: "lmstudio" }
} as const satisfies Record<string, Preset>

export type PresetName = keyof typeof PRESETS

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

type Json = Record<string, unknown>

const imageUrl = (image: ImagePart): Json => ({ type: "image_url", image_url: { url: images.dataUrl(image) } })

/** A message's text with the notice that stands for the images a server takes none of. */
const withNotice = (text: string, count: number): string => (text === "" ? "" : `${text}\n\n`) + images.notCarried(count)

/**
 * The history as chat messages: the system prompt first, one `tool` message per result. A `tool`
 * message takes text only, so the images of a turn's tool results follow its last `tool` message
 * in one `user` message, each result's images after a line naming its call. A server that takes
 * no images (`carriesImages` false) gets a notice in their place.
 */
export const toWireMessages = (system: string | undefined, history: Iterable<Message>, carriesImages = true): Array<Json> => {
  const messages: Array<Json> = system === undefined || system === "" ? [] : [{ role: "system", content: system }]
  const toolImages = new images.AfterResults<Json>()
  for (const message of history) {
    if (message._tag !== "ToolResultMessage") toolImages.flush(messages)
    if (message._tag === "UserMessage") {
      messages.push({
        role: "user",
        content: message.images === undefined
          ? message.content
          : !carriesImages
          ? withNotice(message.content, message.images.length)
          : [...(message.content === "" ? [] : [{ type: "text", text: message.content }]), ...message.images.map(imageUrl)]
      })
    } else if (message._tag === "ToolResultMessage") {
      const content = message.images === undefined || carriesImages ? message.content : withNotice(message.content, message.images.length)
      messages.push({ role: "tool", tool_call_id: message.callId, content })
      if (message.images !== undefined && carriesImages) {
        toolImages.hold({ type: "text", text: images.caption(message.name, message.callId) }, message.images.map(imageUrl))
      }
    } else {
      const text = message.parts.flatMap((part) => (part._tag === "Text" ? [part.text] : [])).join("")
      const calls = message.parts.flatMap((part) =>
        part._tag === "ToolCall"
          ? [{
            id: part.id,
            type: "function",
            function: { name: part.name, arguments: typeof part.input === "string" ? part.input : JSON.stringify(part.input) }
          }]
          : []
      )
      messages.push({ role: "assistant", content: text === "" ? null : text, ...(calls.length === 0 ? {} : { tool_calls: calls }) })
    }
  }
  toolImages.flush(messages)
  return messages
}

const toolChoice = (choice: Model.ToolChoice) =>
  typeof choice === "string" ? choice : { type: "function", function: { name: choice.tool } }

/** How one server speaks the wire: strict schemas, the name of the token bound, whether it takes images. */
interface Flavour {
  readonly strict: boolean
  readonly maxTokensKey: "max_completion_tokens" | "max_tokens"
  readonly images: boolean
  /** Whether a run's typed answer goes as `response_format` (OpenAI itself; the compatible servers get a submit tool). */
  readonly nativeOutput: boolean
}


/** What one request sends, and each strict tool's schema to take nulls back out with. */
export const toWireBody = (
  model: string,
  request: Model.Request,
  flavour: Flavour
): openAiLayer.WireBody => {
  const options = request.options ?? {}
  const { tools: specs, strict, output, answer } = strictSchema.forRequest(request, flavour.strict)
  const tools = specs.map((spec) => ({
    type: "function",
    function: {
      name: spec.tool.name,
      description: spec.tool.description,
      parameters: spec.parameters,
      ...(flavour.strict ? { strict: spec.strict } : {})
    }
  }))
  const effort = reasoningEffort.of(options.reasoning)
  const body: Json = {
    model,
    messages: toWireMessages(request.system, request.messages, flavour.images),
    stream: true,
    stream_options: { include_usage: true },
    ...(tools.length === 0 ? {} : { tools }),
    ...(options.toolChoice === undefined ? {} : { tool_choice: toolChoice(options.toolChoice) }),
    ...(options.maxTokens === undefined ? {} : { [flavour.maxTokensKey]: options.maxTokens }),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    ...(options.topP === undefined ? {} : { top_p: options.topP }),
    ...(options.stopSequences === undefined ? {} : { stop: options.stopSequences }),
    ...(effort === undefined ? {} : { reasoning_effort: effort }),
    ...(request.output === undefined
      ? {}
      : {
        response_format: {
          type: "json_schema",
          json_schema: { name: request.output.name, schema: output, strict: answer !== undefined }
        }
      })
  }
  return { body, strict, answer }
}

// ---------------------------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------------------------

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)
const num = (u: unknown): number => (typeof u === "number" && Number.isFinite(u) ? u : 0)

const finishReason = (reason: unknown): Model.FinishReason =>
  reason === "stop"
    ? "stop"
    : reason === "tool_calls" || reason === "function_call"
    ? "tool-calls"
    : reason === "length"
    ? "length"
    : reason === "content_filter"
    ? "content-filter"
    : "other"

interface Pending {
  id: string
  name: string
  readonly args: Array<string>
}

/** A decoder for one streamed reply; `strict` names the tools whose arguments lose strict mode's nulls. */
export const decoder = (provider: string, strict: ReadonlyMap<string, Model.ToolSpec["parameters"]>) => (): providerStream.Decoder => {
  const calls = new Map<number, Pending>()
  let finish: unknown
  let usage: Json | undefined
  let flushed = false
  const flush = (out: Array<Model.Part>) => {
    flushed = true
    for (const index of [...calls.keys()].sort((a, b) => a - b)) {
      const call = calls.get(index)!
      out.push({ _tag: "ToolCall", id: call.id, name: call.name, input: strictSchema.toolInput(strict, call.name, call.args.join("")) })
    }
    if (usage !== undefined) {
      const details = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {}
      const cached = num(usage.prompt_cache_hit_tokens) || num(details.cached_tokens)
      out.push({
        _tag: "Usage",
        inputTokens: num(usage.prompt_tokens) - cached,
        outputTokens: num(usage.completion_tokens),
        ...(cached === 0 ? {} : { cacheReadTokens: cached })
      })
    }
    out.push({ _tag: "Finish", reason: finishReason(finish) })
    return undefined
  }
  return {
    event: (event: Sse.Event, out) => {
      if (flushed) return undefined
      if (event.data === "[DONE]") return flush(out)
      const parsed = providerStream.parseEvent(provider, event.data)
      if (!parsed.ok) return parsed.failure
      const chunk = parsed.value
      if (chunk.error !== undefined) {
        const said = providerFailure.fromJson(chunk) ?? { description: "an error event with no message", type: undefined }
        return providerFailure.classify(provider, undefined, said, undefined)
      }
      if (isObject(chunk.usage)) usage = chunk.usage
      const choice = Array.isArray(chunk.choices) && isObject(chunk.choices[0]) ? chunk.choices[0] : undefined
      if (choice === undefined) return undefined
      const delta = isObject(choice.delta) ? choice.delta : {}
      const reasoning = delta.reasoning_content ?? delta.reasoning
      if (typeof reasoning === "string" && reasoning !== "") out.push({ _tag: "ThinkingDelta", text: reasoning })
      if (typeof delta.content === "string" && delta.content !== "") out.push({ _tag: "TextDelta", text: delta.content })
      if (Array.isArray(delta.tool_calls)) {
        for (const piece of delta.tool_calls) {
          if (!isObject(piece)) continue
          const index = num(piece.index)
          const fn = isObject(piece.function) ? piece.function : {}
          let call = calls.get(index)
          if (call === undefined) calls.set(index, call = { id: "", name: "", args: [] })
          if (typeof piece.id === "string" && piece.id !== "") call.id = piece.id
          if (typeof fn.name === "string" && fn.name !== "") call.name = fn.name
          if (typeof fn.arguments === "string") call.args.push(fn.arguments)
        }
      }
      if (choice.finish_reason !== undefined && choice.finish_reason !== null) finish = choice.finish_reason
      return undefined
    },
    // Some servers end without `[DONE]`; a finish reason says the reply was complete.
    end: (out) =>
      flushed
        ? undefined
        : finish !== undefined
        ? flush(out)
        : new ModelError.Network({ provider, description: "the stream ended before the reply was complete" })
  }
}

// ---------------------------------------------------------------------------------------------
// Layers
// ---------------------------------------------------------------------------------------------

const register = (provider: string, preset: Preset, options: Options | undefined, flavour: Flavour) =>
  openAiLayer.register({ provider, defaultBaseUrl: preset.baseUrl, keyOptional: preset.keyOptional }, options, {
    path: "/chat/completions",
    nativeOutput: flavour.nativeOutput,
    body: (model, request) => toWireBody(model, request, flavour),
    decoder
  })

/**
 * Registers `openai:<model>` on Chat Completions (or, with `api: "responses"`, on the Responses
 * API), with strict function schemas. The key
 * (`apiKey`, else `OPENAI_API_KEY`) and base URL (`baseUrl`, else `OPENAI_BASE_URL`) are read
 * when a model is resolved.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Model.Providers, never, HttpClient.HttpClient> =>
  options?.api === "responses" ? OpenAiResponses.layerAs("openai", options) : register("openai", { baseUrl: DEFAULT_BASE_URL }, options, {
    strict: options?.strict ?? true,
    maxTokensKey: "max_completion_tokens",
    images: true,
    nativeOutput: true
  })

/**
 * Registers one OpenAI-compatible preset as `<name>:<model>` (`ollama:llama3.2`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerCompatible = (name: PresetName, options?: Options): Layer.Layer<Model.Providers, never, HttpClient.HttpClient> => {
  const preset: Preset = PRESETS[name]
  return register(name, preset, options, {
    strict: options?.strict ?? false,
    maxTokensKey: "max_tokens",
    images: preset.images !== false,
    nativeOutput: false
  })
}

/**
 * Registers every preset with its defaults and the environment's keys and base URLs.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPresets: Layer.Layer<Model.Providers, never, HttpClient.HttpClient> = (Object.keys(PRESETS) as Array<PresetName>)
  .map((name) => layerCompatible(name))
  .reduce((all, next) => Layer.merge(all, next))

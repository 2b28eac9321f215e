/**
 * Google — the Gemini API's `streamGenerateContent`, as Server-Sent Events: the only module that
 * knows its wire format.
 *
 * A request becomes `POST {baseUrl}/v1beta/models/{model}:streamGenerateContent?alt=sse`: the
 * system prompt as `systemInstruction`, the history as `user` / `model` contents (a model turn's
 * calls as `functionCall` parts, a turn's results in one `user` content of `functionResponse`
 * parts, errors under `error`, output under `output`), the tools as function declarations with
 * their JSON Schema as it is (`parametersJsonSchema`), and the shared options in
 * `generationConfig` / `toolConfig`. Chunks become parts: text and thought deltas, function calls
 * (Gemini sends each whole; one without an id gets `gemini_<responseId>_<n>`, which is never sent
 * back as if Gemini had made it), thought signatures kept and returned on the part they came with,
 * usage (the last chunk's counts, thoughts counted as output) and the finish reason.
 */
import { Effect, Layer } from "effect"
import type { Sse } from "effect/encoding"
import { HttpClient } from "effect/http"
import type { History } from "@condukt/core/History"
import type { ImagePart } from "@condukt/core/Message"
import * as providerConfig from "./internal/providerConfig.ts"
import * as providerFailure from "./internal/providerFailure.ts"
import * as providerStream from "./internal/providerStream.ts"
import * as Model from "@condukt/core/Model"
import * as ModelError from "@condukt/core/ModelError"
import { THINKING_BUDGETS } from "./Anthropic.ts"
import type * as Provider from "./Provider.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** The default base URL; `GOOGLE_BASE_URL` or `baseUrl` replace it. */
export const DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
/** The prefix of the ids given to calls Gemini sent without one. */
export const GENERATED_ID_PREFIX = "gemini_"

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

type Json = Record<string, unknown>
interface Content {
  readonly role: "user" | "model"
  readonly parts: Array<Json>
}

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const inlineData = (image: ImagePart): Json => ({ inlineData: { mimeType: image.mediaType, data: image.data } })

/** The history as contents: roles alternating, a turn's function responses in one user content. */
export const toWireContents = (history: History): Array<Content> => {
  const contents: Array<Content> = []
  const push = (role: Content["role"], parts: ReadonlyArray<Json>) => {
    if (parts.length === 0) return
    const last = contents.at(-1)
    if (last?.role === role) last.parts.push(...parts)
    else contents.push({ role, parts: [...parts] })
  }
  // A turn's tool-result images follow all its function responses, in the same user content.
  let toolImages: Array<Json> = []
  for (const message of history) {
    if (message._tag !== "ToolResultMessage" && toolImages.length > 0) {
      push("user", toolImages)
      toolImages = []
    }
    if (message._tag === "UserMessage") {
      push("user", message.images === undefined
        ? [{ text: message.content }]
        : [...message.images.map(inlineData), ...(message.content === "" ? [] : [{ text: message.content }])])
    } else if (message._tag === "ToolResultMessage") {
      const id = message.callId.startsWith(GENERATED_ID_PREFIX) ? undefined : message.callId
      push("user", [{
        functionResponse: {
          ...(id === undefined ? {} : { id }),
          name: message.name,
          response: message.isError ? { error: message.content } : { output: message.content }
        }
      }])
      if (message.images !== undefined) toolImages.push(...message.images.map(inlineData))
    } else {
      const parts: Array<Json> = []
      for (const part of message.parts) {
        if (part._tag === "Text") {
          if (part.text !== "") parts.push({ text: part.text })
        } else if (part._tag === "ToolCall") {
          const id = part.id.startsWith(GENERATED_ID_PREFIX) ? undefined : part.id
          // Arguments that were not JSON arrive as their text; the API wants an object back.
          parts.push({ functionCall: { ...(id === undefined ? {} : { id }), name: part.name, args: isObject(part.input) ? part.input : {} } })
        } else if (part._tag === "Provider" && part.provider === "google" && isObject(part.value)) {
          // A thought signature belongs to the part before it.
          const last = parts.at(-1)
          if (last !== undefined && typeof part.value.thoughtSignature === "string") last.thoughtSignature = part.value.thoughtSignature
        }
      }
      push("model", parts)
    }
  }
  push("user", toolImages)
  return contents
}

const toolConfig = (choice: Model.ToolChoice) =>
  choice === "auto"
    ? { mode: "AUTO" }
    : choice === "none"
    ? { mode: "NONE" }
    : choice === "required"
    ? { mode: "ANY" }
    : { mode: "ANY", allowedFunctionNames: [choice.tool] }

/**
 * Whether the model takes a response schema together with function declarations: Gemini 3 does,
 * Gemini 2.x and before refuse the pair, so their typed answers go through the submit tool.
 */
export const nativeOutput = (model: string): boolean => !/^gemini-[012](\.|-)/.test(model)

/** The request body. */
export const toWireBody = (request: Model.Request): Json => {
  const options = request.options ?? {}
  const reasoning = options.reasoning
  const budget = reasoning?.budgetTokens ?? (reasoning?.effort === undefined ? undefined : THINKING_BUDGETS[reasoning.effort])
  const generationConfig: Json = {
    ...(options.maxTokens === undefined ? {} : { maxOutputTokens: options.maxTokens }),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    ...(options.topP === undefined ? {} : { topP: options.topP }),
    ...(options.stopSequences === undefined ? {} : { stopSequences: options.stopSequences }),
    ...(budget === undefined ? {} : { thinkingConfig: { thinkingBudget: budget, includeThoughts: true } }),
    ...(request.output === undefined ? {} : { responseMimeType: "application/json", responseJsonSchema: request.output.schema })
  }
  const declarations = request.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    parametersJsonSchema: tool.parameters
  }))
  return {
    contents: toWireContents(request.messages),
    ...(request.system === undefined || request.system === "" ? {} : { systemInstruction: { parts: [{ text: request.system }] } }),
    ...(declarations.length === 0 ? {} : { tools: [{ functionDeclarations: declarations }] }),
    ...(options.toolChoice === undefined ? {} : { toolConfig: { functionCallingConfig: toolConfig(options.toolChoice) } }),
    ...(Object.keys(generationConfig).length === 0 ? {} : { generationConfig })
  }
}

// ---------------------------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------------------------

const num = (u: unknown): number => (typeof u === "number" && Number.isFinite(u) ? u : 0)

const FILTERED = new Set(["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"])

const finishReason = (reason: string, calls: number): Model.FinishReason =>
  reason === "STOP" ? (calls > 0 ? "tool-calls" : "stop") : reason === "MAX_TOKENS" ? "length" : FILTERED.has(reason) ? "content-filter" : "other"

/** A decoder for one streamed reply. */
export const decoder = (): providerStream.Decoder => {
  let usage: Json | undefined
  let finish: string | undefined
  let calls = 0
  return {
    event: (event: Sse.Event, out) => {
      const parsed = providerStream.parseEvent("google", event.data)
      if (!parsed.ok) return parsed.failure
      const chunk = parsed.value
      if (isObject(chunk.error)) {
        const said = providerFailure.fromJson(chunk) ?? { description: "an error event with no message", type: undefined }
        const code = chunk.error.code
        return providerFailure.classify("google", typeof code === "number" && code >= 400 ? code : undefined, said, undefined)
      }
      // Counts are cumulative: the last chunk's replace the earlier ones.
      if (isObject(chunk.usageMetadata)) usage = chunk.usageMetadata
      const candidate = Array.isArray(chunk.candidates) && isObject(chunk.candidates[0]) ? chunk.candidates[0] : undefined
      if (candidate === undefined) {
        // A prompt refused before any candidate: nothing more will come.
        const feedback = isObject(chunk.promptFeedback) ? chunk.promptFeedback : undefined
        if (typeof feedback?.blockReason === "string") finish = "SAFETY"
        return undefined
      }
      const content = isObject(candidate.content) ? candidate.content : {}
      const parts = Array.isArray(content.parts) ? content.parts : []
      for (const part of parts) {
        if (!isObject(part)) continue
        if (typeof part.text === "string" && part.text !== "") {
          out.push({ _tag: part.thought === true ? "ThinkingDelta" : "TextDelta", text: part.text })
        } else if (isObject(part.functionCall)) {
          const call = part.functionCall
          const id = typeof call.id === "string" && call.id !== ""
            ? call.id
            : `${GENERATED_ID_PREFIX}${typeof chunk.responseId === "string" ? chunk.responseId : "call"}_${calls}`
          calls++
          out.push({ _tag: "ToolCall", id, name: typeof call.name === "string" ? call.name : "", input: call.args ?? {} })
        }
        if (typeof part.thoughtSignature === "string") {
          out.push({ _tag: "ProviderData", provider: "google", value: { thoughtSignature: part.thoughtSignature } })
        }
      }
      if (typeof candidate.finishReason === "string" && candidate.finishReason !== "") finish = candidate.finishReason
      return undefined
    },
    // Gemini has no closing event: the body's end closes the reply, complete only if a finish reason came.
    end: (out) => {
      if (finish === undefined) return new ModelError.Network({ provider: "google", description: "the stream ended before the reply was complete" })
      if (usage !== undefined) {
        const cached = num(usage.cachedContentTokenCount)
        out.push({
          _tag: "Usage",
          inputTokens: num(usage.promptTokenCount) - cached,
          outputTokens: num(usage.candidatesTokenCount) + num(usage.thoughtsTokenCount),
          ...(cached === 0 ? {} : { cacheReadTokens: cached })
        })
      }
      out.push({ _tag: "Finish", reason: finishReason(finish, calls) })
      return undefined
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Layers
// ---------------------------------------------------------------------------------------------

const source: providerConfig.Source = {
  provider: "google",
  defaultBaseUrl: DEFAULT_BASE_URL,
  alternateKeyVariable: "GEMINI_API_KEY"
}

/**
 * Registers `google:<model>` (Gemini). The key (`apiKey`, else `GOOGLE_API_KEY`, else
 * `GEMINI_API_KEY`) and the base URL (`baseUrl`, else `GOOGLE_BASE_URL`, else the API's) are read
 * when a model is resolved.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Provider.Options): Layer.Layer<Model.Providers, never, HttpClient.HttpClient> =>
  Layer.unwrap(Effect.map(Effect.service(HttpClient.HttpClient), (http) => {
    const settings = providerStream.settings(http, options)
    return Model.layerProviders({
      google: (name) => {
        const model = `google:${name}`
        return Effect.map(providerConfig.resolve(source, options, model), (resolved): Model.Service => ({
          name: model,
          secrets: resolved.secrets,
          ...(nativeOutput(name) ? { nativeOutput: true } : {}),
          stream: (request) =>
            providerStream.stream(settings, {
              provider: "google",
              model,
              baseUrl: resolved.baseUrl,
              redact: resolved.redact,
              url: `${resolved.baseUrl}/v1beta/models/${encodeURIComponent(name)}:streamGenerateContent?alt=sse`,
              headers: {},
              auth: { header: "x-goog-api-key", prefix: "", key: resolved.key },
              body: toWireBody(request),
              decoder
            })
        }))
      }
    })
  }))

/**
 * languageModel — an `effect/ai` `LanguageModel` behind our `Model` seam, in both directions.
 *
 * Our request becomes its prompt (system, user, assistant text / reasoning / tool calls, one tool
 * message per result; a result's images, which it has no part for, as a notice) and its tools: each of ours is a `Tool.dynamic` with our JSON Schema as it
 * is, in a toolkit whose calls are never resolved there (`disableToolCallResolution`, validation
 * deferred): the session's executor runs and checks them, as it does for every provider. Its
 * stream parts become ours: text and reasoning deltas, tool calls with their parameters, the
 * finish part's usage and reason; its `AiError` reasons become `ModelError` reasons. Options it has
 * no place for (max tokens, temperature, stop sequences, reasoning) are the language model's own
 * configuration, not a request's, and are not sent.
 */
import { Effect, Stream } from "effect"
import { AiError, type LanguageModel, Prompt, type Response, Tool, type Toolkit } from "effect/ai"
import type { History } from "@condukt/core/History"
import type * as Model from "@condukt/core/Model"
import * as ModelError from "@condukt/core/ModelError"
import * as images from "./images.ts"

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

/** Our history as the prompt's encoded messages, the system prompt first. */
export const toPromptMessages = (system: string | undefined, history: History): Array<Prompt.MessageEncoded> => {
  const messages: Array<Prompt.MessageEncoded> = system === undefined || system === "" ? [] : [{ role: "system", content: system }]
  for (const message of history) {
    if (message._tag === "UserMessage") messages.push({ role: "user", content: message.content })
    else if (message._tag === "ToolResultMessage") {
      const result: Prompt.ToolResultPartEncoded = {
        type: "tool-result",
        id: message.callId,
        name: message.name,
        isFailure: message.isError,
        // The prompt has no image part for a tool result: the model reads that there were some.
        result: message.images === undefined
          ? message.content
          : [message.content, images.notCarried(message.images.length)].filter((text) => text !== "").join("\n\n")
      }
      const last = messages.at(-1)
      // A turn's results travel in one tool message.
      if (last?.role === "tool") messages[messages.length - 1] = { ...last, content: [...last.content, result] }
      else messages.push({ role: "tool", content: [result] })
    } else {
      const content: Array<Prompt.AssistantMessagePartEncoded> = []
      for (const part of message.parts) {
        if (part._tag === "Text") {
          if (part.text !== "") content.push({ type: "text", text: part.text })
        } else if (part._tag === "Thinking") {
          if (part.text !== "") content.push({ type: "reasoning", text: part.text })
        } else if (part._tag === "ToolCall") {
          content.push({ type: "tool-call", id: part.id, name: part.name, params: part.input, providerExecuted: false })
        }
      }
      if (content.length > 0) messages.push({ role: "assistant", content })
    }
  }
  return messages
}

/**
 * Our tools as a toolkit that only describes them: `Tool.dynamic` takes a raw JSON Schema, and
 * `handle` is never called because tool calls come back unresolved.
 */
export const toToolkit = (tools: ReadonlyArray<Model.ToolSpec>): Toolkit.WithHandler<Record<string, Tool.Any>> => ({
  tools: Object.fromEntries(
    tools.map((tool) => [tool.name, Tool.dynamic(tool.name, { description: tool.description, parameters: tool.parameters })])
  ),
  handle: (name) => Effect.die(`the tool ${String(name)} is run by the session, not by the language model`)
})

// ---------------------------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------------------------

const finishReason = (reason: Response.FinishReason): Model.FinishReason =>
  reason === "stop" || reason === "length" || reason === "content-filter" || reason === "tool-calls" ? reason : "other"

/** A stream part as ours, if it has a counterpart. */
export const toParts = (part: Response.StreamPart<Record<string, Tool.Any>, "deferred">): ReadonlyArray<Model.Part> => {
  switch (part.type) {
    case "text-delta":
      return part.delta === "" ? [] : [{ _tag: "TextDelta", text: part.delta }]
    case "reasoning-delta":
      return part.delta === "" ? [] : [{ _tag: "ThinkingDelta", text: part.delta }]
    case "tool-call":
      // Provider-executed calls (a vendor's server tools) were run there: nothing for the executor.
      return part.providerExecuted ? [] : [{ _tag: "ToolCall", id: part.id, name: part.name, input: part.params }]
    case "finish": {
      const input = part.usage.inputTokens
      const cacheRead = input.cacheRead ?? 0
      const cacheWrite = input.cacheWrite ?? 0
      const uncached = input.uncached ?? Math.max(0, (input.total ?? 0) - cacheRead - cacheWrite)
      return [
        {
          _tag: "Usage",
          inputTokens: uncached,
          outputTokens: part.usage.outputTokens.total ?? 0,
          ...(cacheRead === 0 ? {} : { cacheReadTokens: cacheRead }),
          ...(cacheWrite === 0 ? {} : { cacheWriteTokens: cacheWrite })
        },
        { _tag: "Finish", reason: finishReason(part.reason) }
      ]
    }
    default:
      return []
  }
}

/** An `AiError` as a `ModelError` reason: what it means for a retry, with the language model's own message. */
export const toReason = (provider: string, error: AiError.AiError): ModelError.ModelErrorReason => {
  const description = error.reason.message
  switch (error.reason._tag) {
    case "RateLimitError":
      return new ModelError.RateLimited({ provider, description, retryAfter: error.retryAfter })
    case "AuthenticationError":
      return new ModelError.Unauthorized({ provider, description })
    case "QuotaExhaustedError":
    case "InvalidRequestError":
    case "ContentPolicyError":
      return new ModelError.InvalidRequest({ provider, description })
    case "NetworkError":
      return new ModelError.Network({ provider, description })
    default:
      return new ModelError.ProviderFailed({ description: `${provider}: ${description}`, retryable: error.isRetryable })
  }
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/** The `Model` a language model makes, named `name` (`provider:model`) in events and errors. */
export const make = (name: string, languageModel: LanguageModel.LanguageModel): Model.Service => {
  const provider = name.includes(":") ? name.slice(0, name.indexOf(":")) : name
  const fail = (reason: ModelError.ModelErrorReason) => new ModelError.ModelError({ model: name, reason })
  return {
    name,
    stream: (request) =>
      Stream.unwrap(Effect.map(
        Effect.try({
          try: () => Prompt.make(toPromptMessages(request.system, request.messages)),
          catch: () =>
            fail(new ModelError.ProviderFailed({ description: `${provider}: the conversation could not be made into a prompt`, retryable: false }))
        }),
        (prompt) => {
          // The toolkit's handler services are typed `unknown` for any tool; none is ever run
          // (resolution is disabled), so the stream needs nothing.
          const parts = languageModel.streamText({
            prompt,
            toolkit: toToolkit(request.tools),
            ...(request.options?.toolChoice === undefined ? {} : { toolChoice: request.options.toolChoice }),
            disableToolCallResolution: true,
            toolCallValidation: "deferred"
          }) as Stream.Stream<Response.StreamPart<Record<string, Tool.Any>, "deferred">, AiError.AiError>
          return parts.pipe(
            Stream.mapError((error) =>
              AiError.isAiError(error)
                ? fail(toReason(provider, error))
                : fail(new ModelError.ProviderFailed({ description: `${provider}: the language model failed`, retryable: false }))
            ),
            Stream.flatMap((part) =>
              part.type === "error"
                ? Stream.fail(fail(new ModelError.ProviderFailed({ description: `${provider}: the language model reported an error`, retryable: false })))
                : Stream.fromIterable(toParts(part))
            )
          )
        }
      ))
  }
}

/**
 * genAi — the names and attributes of a run's spans in the OpenTelemetry GenAI semantic
 * conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/ and
 * gen-ai-agent-spans/), so any OTel backend reads a run as an agent invocation, its model requests
 * and its tool calls: `invoke_agent <agent>`, `chat <model>`, `execute_tool <tool>`.
 *
 * Names, ids, models and counts; a prompt, a reply, a tool's arguments or result only when the
 * program opts in (`TraceContent`), as the conventions' content attributes, each text redacted by
 * the caller's redaction and cut at `TraceContent.MAX_TEXT`. docs/decisions/0057-genai-spans-and-cost.md.
 */
import { Result, type Tracer } from "effect"
import type * as History from "../History.ts"
import * as JsonLimits from "../JsonLimits.ts"
import type * as Message from "../Message.ts"
import type * as Model from "../Model.ts"
import { redactValue } from "../Redactor.ts"
import { MAX_TEXT } from "../TraceContent.ts"

/**
 * The conventions' `gen_ai.provider.name` for a `provider:model` prefix: a well-known value where
 * ours differs (Gemini's is `gcp.gemini`), the prefix itself otherwise.
 */
const PROVIDERS: Readonly<Record<string, string>> = { google: "gcp.gemini" }

/** `provider:model` split; a name without a colon is a model of no known provider. */
const split = (model: string): { readonly provider: string; readonly model: string } => {
  const colon = model.indexOf(":")
  if (colon < 0) return { provider: "unknown", model }
  const prefix = model.slice(0, colon)
  return { provider: PROVIDERS[prefix] ?? prefix, model: model.slice(colon + 1) }
}

/** The span of one run of a session's agent (in process, so `internal`). */
export const invokeAgent = (agent: string, sessionId: string, runId: string): readonly [string, Tracer.SpanOptions] => [
  `invoke_agent ${agent}`,
  {
    kind: "internal",
    attributes: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": agent,
      "gen_ai.conversation.id": sessionId,
      sessionId,
      runId
    }
  }
]

/** The span of one model request: a call to a remote service (`client`), with the settings it was given. */
export const chat = (modelName: string, sessionId: string, options?: Model.Options): readonly [string, Tracer.SpanOptions] => {
  const { model, provider } = split(modelName)
  return [
    `chat ${model}`,
    {
      kind: "client",
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.conversation.id": sessionId,
        ...(options?.maxTokens === undefined ? {} : { "gen_ai.request.max_tokens": options.maxTokens }),
        ...(options?.temperature === undefined ? {} : { "gen_ai.request.temperature": options.temperature }),
        ...(options?.topP === undefined ? {} : { "gen_ai.request.top_p": options.topP })
      }
    }
  ]
}

/**
 * What a reply adds to its request's span. The conventions count cached tokens inside
 * `gen_ai.usage.input_tokens`; our `inputTokens` are the uncached ones, so the cache counts are
 * added to it and also given apart.
 */
export const replied = (reply: { readonly usage: Model.Usage; readonly finishReason: Model.FinishReason }): Readonly<Record<string, unknown>> => {
  const { cacheReadTokens, cacheWriteTokens, inputTokens, outputTokens } = reply.usage
  return {
    "gen_ai.response.finish_reasons": [reply.finishReason],
    "gen_ai.usage.input_tokens": inputTokens + (cacheReadTokens ?? 0) + (cacheWriteTokens ?? 0),
    "gen_ai.usage.output_tokens": outputTokens,
    ...(cacheReadTokens === undefined ? {} : { "gen_ai.usage.cache_read.input_tokens": cacheReadTokens }),
    ...(cacheWriteTokens === undefined ? {} : { "gen_ai.usage.cache_creation.input_tokens": cacheWriteTokens })
  }
}

/** The span of one tool call, run in process (`internal`). */
export const executeTool = (tool: string, callId: string): readonly [string, Tracer.SpanOptions] => [
  `execute_tool ${tool}`,
  {
    kind: "internal",
    attributes: {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": tool,
      "gen_ai.tool.call.id": callId,
      "gen_ai.tool.type": "function"
    }
  }
]

/** What a call's result adds to its span: `error.type` when the model got an error result. */
export const executed = (result: { readonly isError: boolean }): Readonly<Record<string, unknown>> =>
  result.isError ? { "error.type": "tool_error" } : {}

// ---------------------------------------------------------------------------------------------
// Content, when the program opts in (TraceContent)
// ---------------------------------------------------------------------------------------------

/** `text` redacted, then cut at `MAX_TEXT` characters, the cut said (cut first, a secret across the cut would leave its start). */
const bounded = (text: string, redact: (text: string) => string): string => {
  const shown = redact(text)
  return shown.length > MAX_TEXT ? `${shown.slice(0, MAX_TEXT)}… [${shown.length - MAX_TEXT} more characters]` : shown
}

/**
 * A value as JSON, redacted and cut (a tool's arguments): its strings redacted before they are
 * written as JSON (a value holding a quote or a backslash is escaped there, and would no longer
 * match), then the text as any other.
 */
const boundedJson = (value: unknown, redact: (text: string) => string): string => {
  // A value JSON cannot hold, or nested past JsonLimits (which overflows `JSON.stringify`), is
  // named, not written: a span attribute that throws would end the run as a defect.
  if (value === undefined) return "null"
  const written = JsonLimits.stringify(redactValue(redact, value), JsonLimits.defaults)
  return Result.isSuccess(written) ? bounded(written.success, redact) : `[not shown: the value holds ${written.failure.description}]`
}

/** The conventions' parts of an assistant message (`text`, `reasoning`, `tool_call`); provider blocks are left out. */
const assistantParts = (parts: ReadonlyArray<Message.AssistantPart>, redact: (text: string) => string) => {
  const out: Array<Record<string, unknown>> = []
  for (const part of parts) {
    if (part._tag === "Text") out.push({ type: "text", content: bounded(part.text, redact) })
    else if (part._tag === "Thinking" && part.text !== "") out.push({ type: "reasoning", content: bounded(part.text, redact) })
    else if (part._tag === "ToolCall") out.push({ type: "tool_call", id: part.id, name: part.name, arguments: boundedJson(part.input, redact) })
  }
  return out
}

/** One message in the conventions' shape (images are named by media type, not carried). */
const message = (m: Message.Message, redact: (text: string) => string): Record<string, unknown> => {
  if (m._tag === "UserMessage") {
    const images = (m.images ?? []).map((image) => ({ type: "blob", modality: "image", mime_type: image.mediaType }))
    return { role: "user", parts: [{ type: "text", content: bounded(m.content, redact) }, ...images] }
  }
  if (m._tag === "AssistantMessage") return { role: "assistant", parts: assistantParts(m.parts, redact) }
  return { role: "tool", parts: [{ type: "tool_call_response", id: m.callId, response: bounded(m.content, redact) }] }
}

/** What a `chat` span holds of its request when content is on: the system instructions and the messages sent. */
export const requestContent = (
  request: { readonly system: string | undefined; readonly messages: History.History },
  redact: (text: string) => string
): Readonly<Record<string, unknown>> => {
  const messages: Array<Record<string, unknown>> = []
  for (const m of request.messages) messages.push(message(m, redact))
  return {
    ...(request.system === undefined ? {} : { "gen_ai.system_instructions": JSON.stringify([{ type: "text", content: bounded(request.system, redact) }]) }),
    "gen_ai.input.messages": JSON.stringify(messages)
  }
}

/** What a `chat` span holds of its reply when content is on. */
export const replyContent = (
  reply: { readonly message: Message.AssistantMessage; readonly finishReason: Model.FinishReason },
  redact: (text: string) => string
): Readonly<Record<string, unknown>> => ({
  "gen_ai.output.messages": JSON.stringify([{ role: "assistant", parts: assistantParts(reply.message.parts, redact), finish_reason: reply.finishReason }])
})

/** What an `execute_tool` span holds of its call when content is on: the arguments. */
export const callContent = (input: unknown, redact: (text: string) => string): Readonly<Record<string, unknown>> => ({
  "gen_ai.tool.call.arguments": boundedJson(input, redact)
})

/** What an `execute_tool` span holds of its result when content is on (already redacted by the executor). */
export const resultContent = (result: { readonly content: string }, redact: (text: string) => string): Readonly<Record<string, unknown>> => ({
  "gen_ai.tool.call.result": bounded(result.content, redact)
})

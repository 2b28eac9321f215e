/**
 * genAi — the names and attributes of a run's spans in the OpenTelemetry GenAI semantic
 * conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/ and
 * gen-ai-agent-spans/), so any OTel backend reads a run as an agent invocation, its model requests
 * and its tool calls: `invoke_agent <agent>`, `chat <model>`, `execute_tool <tool>`.
 *
 * Only names, ids, models and counts: never a prompt, a reply, a tool's arguments or result (the
 * conventions' opt-in content attributes are not recorded), so no secret can reach a span this way.
 * docs/decisions/0057-genai-spans-and-cost.md.
 */
import type { Tracer } from "effect"
import type * as Model from "../Model.ts"

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

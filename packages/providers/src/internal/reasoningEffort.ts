/**
 * reasoningEffort — OpenAI's `reasoning_effort` / `reasoning.effort` for a request's reasoning
 * option, shared by the Chat Completions and Responses providers: an effort as given, or the
 * effort whose budget a token budget fits.
 */
import type * as Model from "@condukt/core/Model"

const EFFORTS = [[1024, "minimal"], [4096, "low"], [16384, "medium"]] as const

/** The effort to send, or `undefined` when the request asks for no reasoning setting. */
export const of = (reasoning: Model.Reasoning | undefined): string | undefined => {
  if (reasoning?.effort !== undefined) return reasoning.effort
  const budget = reasoning?.budgetTokens
  if (budget === undefined) return undefined
  return EFFORTS.find(([max]) => budget <= max)?.[1] ?? "high"
}

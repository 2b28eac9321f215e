/**
 * EffectAi — any `effect/ai` `LanguageModel` behind Condukt's `Model` seam (docs/decisions/0027),
 * retried as every provider's model is (`ModelRetry`, docs/decisions/0083).
 */
import type * as Model from "@condukt/core/Model"
import * as ModelRetry from "@condukt/core/ModelRetry"
import type { LanguageModel } from "effect/ai"
import * as languageModel from "./internal/languageModel.ts"
import * as Provider from "./Provider.ts"

/**
 * What `fromLanguageModel` takes besides the language model.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /**
   * As a provider layer's `retry`: absent, Condukt's policy retries a failure the language model's
   * `AiError` calls retryable (its `retryAfter` honoured) before the reply's first part; `false`
   * tries once; an object tunes the policy; a `Schedule` replaces it.
   */
  readonly retry?: Provider.Options["retry"]
}

/**
 * Any `effect/ai` `LanguageModel` (a user's own, or one of Effect's provider packages) as a
 * session's model, named `name` (`provider:model`) in events and errors. Tool calls come back
 * unresolved and run in the session's executor; options are the language model's own
 * configuration (see docs/providers.md), but for `retry`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const fromLanguageModel = (name: string, model: LanguageModel.LanguageModel, options?: Options): Model.Service =>
  ModelRetry.retrying(languageModel.make(name, model), Provider.retrySchedule(options?.retry))

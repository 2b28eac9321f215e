/**
 * EffectAi — any `effect/ai` `LanguageModel` behind Condukt's `Model` seam (docs/decisions/0027).
 */
import type * as Model from "@condukt/core/Model"
import type { LanguageModel } from "effect/ai"
import * as languageModel from "./internal/languageModel.ts"

/**
 * Any `effect/ai` `LanguageModel` (a user's own, or one of Effect's provider packages) as a
 * session's model, named `name` (`provider:model`) in events and errors. Tool calls come back
 * unresolved and run in the session's executor; options are the language model's own
 * configuration (see docs/providers.md).
 *
 * @since 0.2.0
 * @category constructors
 */
export const fromLanguageModel = (name: string, model: LanguageModel.LanguageModel): Model.Service => languageModel.make(name, model)

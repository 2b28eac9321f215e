/**
 * providerConfig — where a provider's key and base URL come from: the layer's options first, then
 * `<PROVIDER>_API_KEY` (read with `Config.Redacted`, so the value never becomes a plain string
 * outside the request that carries it) and `<PROVIDER>_BASE_URL`, then the vendor's default.
 *
 * It runs when a model is resolved, not when the layer is built: a program without a key for a
 * provider it never uses starts fine, and a missing key fails the first use, naming the variable.
 */
import { Config, Effect, Option, Redacted } from "effect"
import * as Model from "../Model.ts"
import type * as Provider from "../providers/Provider.ts"

/** How one provider finds its key and endpoint. */
export interface Source {
  /** The registry prefix (`anthropic`), also the variables' stem (`ANTHROPIC_API_KEY`). */
  readonly provider: string
  readonly defaultBaseUrl: string
  /** A local server (Ollama, vLLM, LM Studio) takes any key, or none: this one is sent then. */
  readonly keyOptional?: string | undefined
  /** The variables' stem when it is not the prefix (`openai-responses:` reads `OPENAI_API_KEY`). */
  readonly variables?: string | undefined
  /** A second key variable the vendor's own SDK also reads (`GEMINI_API_KEY`), tried after the first. */
  readonly alternateKeyVariable?: string | undefined
}

/** What a request needs: the key and the base URL without a trailing slash. */
export interface Resolved {
  readonly key: Redacted.Redacted<string>
  readonly baseUrl: string
}

const variable = (provider: string, suffix: string) => `${provider.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_${suffix}`

/** The key and base URL for `source`, or `MissingApiKey` naming the variable to set. */
export const resolve = (
  source: Source,
  options: Provider.Options | undefined,
  model: string
): Effect.Effect<Resolved, Model.ModelError> =>
  Effect.gen(function*() {
    const stem = source.variables ?? source.provider
    const keyVariable = variable(stem, "API_KEY")
    const fromEnv = (name: string) =>
      Config.option(Config.Redacted(name)).pipe(
        Effect.map(Option.filter((key) => Redacted.value(key) !== "")),
        Effect.orElseSucceed(() => Option.none())
      )
    const alternate = source.alternateKeyVariable
    let given = options?.apiKey
    if (given === undefined) given = Option.getOrUndefined(yield* fromEnv(keyVariable))
    if (given === undefined && alternate !== undefined) given = Option.getOrUndefined(yield* fromEnv(alternate))
    const key = given !== undefined && Redacted.value(given) !== ""
      ? given
      : source.keyOptional === undefined
      ? undefined
      : Redacted.make(source.keyOptional)
    if (key === undefined) {
      return yield* new Model.ModelError({
        model,
        reason: new Model.MissingApiKey({
          provider: source.provider,
          variable: alternate === undefined ? keyVariable : `${keyVariable} (or ${alternate})`
        })
      })
    }
    const fromBaseEnv = options?.baseUrl === undefined
      ? yield* Config.option(Config.String(variable(stem, "BASE_URL"))).pipe(Effect.orElseSucceed(() => Option.none()))
      : Option.none()
    const baseUrl = options?.baseUrl ?? Option.getOrElse(Option.filter(fromBaseEnv, (url) => url !== ""), () => source.defaultBaseUrl)
    return { key, baseUrl: baseUrl.replace(/\/+$/, "") }
  })

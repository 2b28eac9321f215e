/**
 * providerConfig — where a provider's key and base URL come from: the layer's options first, then
 * `<PROVIDER>_API_KEY` (read with `Config.Redacted`, so the value never becomes a plain string
 * outside the request that carries it) and `<PROVIDER>_BASE_URL`, then the vendor's default.
 *
 * It runs when a model is resolved, not when the layer is built: a program without a key for a
 * provider it never uses starts fine, and a missing key fails the first use, naming the variable.
 *
 * It also names the model's secrets: the key (under its variable's name) and the values of the
 * extra headers that look like credentials. A session redacts them from everything it emits, and
 * the provider from every error it builds out of what a server said (a gateway may echo them).
 */
import { Config, Effect, Option, Redacted } from "effect"
import * as ModelError from "@condukt/core/ModelError"
import type * as Provider from "../Provider.ts"
import * as Redactor from "@condukt/core/Redactor"
import * as Secret from "@condukt/core/Secret"

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

/** What a request needs: the key and the base URL without a trailing slash; the secrets and their redaction. */
export interface Resolved {
  readonly key: Redacted.Redacted<string>
  readonly baseUrl: string
  /** The key under its variable's name (unless it is a local server's placeholder), and credential headers. */
  readonly secrets: Readonly<Record<string, Redacted.Redacted<string>>>
  /** Replaces each of `secrets` in a text by `[REDACTED:NAME]`. */
  readonly redact: (text: string) => string
}


/** An `authorization` scheme: the credential is what follows it (a gateway may echo it alone). */
const SCHEME = /^(?:bearer|basic|token|bot)\s+/i

/**
 * The credentials among `headers`, each under its name in capitals (`x-portkey-api-key` is
 * `X_PORTKEY_API_KEY`), without an `authorization` scheme.
 */
export const credentialHeaders = (
  headers: Readonly<Record<string, string>> | undefined
): Record<string, Redacted.Redacted<string>> => {
  const found: Record<string, Redacted.Redacted<string>> = {}
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (Secret.isCredentialName(name)) found[name.toUpperCase().replace(/[^A-Z0-9]/g, "_")] = Redacted.make(value.replace(SCHEME, ""))
  }
  return found
}

const variable = (provider: string, suffix: string) => `${provider.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_${suffix}`

/** The key and base URL for `source`, or `MissingApiKey` naming the variable to set. */
export const resolve = (
  source: Source,
  options: Provider.Options | undefined,
  model: string
): Effect.Effect<Resolved, ModelError.ModelError> =>
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
    let keyName = keyVariable
    if (given === undefined) given = Option.getOrUndefined(yield* fromEnv(keyVariable))
    if (given === undefined && alternate !== undefined) {
      given = Option.getOrUndefined(yield* fromEnv(alternate))
      if (given !== undefined) keyName = alternate
    }
    const real = given !== undefined && Redacted.value(given) !== "" ? given : undefined
    const key = real ?? (source.keyOptional === undefined ? undefined : Redacted.make(source.keyOptional))
    if (key === undefined) {
      return yield* new ModelError.ModelError({
        model,
        reason: new ModelError.MissingApiKey({
          provider: source.provider,
          variable: alternate === undefined ? keyVariable : `${keyVariable} (or ${alternate})`
        })
      })
    }
    const fromBaseEnv = options?.baseUrl === undefined
      ? yield* Config.option(Config.String(variable(stem, "BASE_URL"))).pipe(Effect.orElseSucceed(() => Option.none()))
      : Option.none()
    const baseUrl = options?.baseUrl ?? Option.getOrElse(Option.filter(fromBaseEnv, (url) => url !== ""), () => source.defaultBaseUrl)
    // A local server's placeholder key ("ollama") is no secret: redacting it would hide every mention of the server.
    const secrets = { ...credentialHeaders(options?.headers), ...(real === undefined ? {} : { [keyName]: real }) }
    return { key, baseUrl: baseUrl.replace(/\/+$/, ""), secrets, redact: Redactor.secrets(secrets).redact }
  })

/**
 * openAiLayer — how OpenAI's two wire formats (Chat Completions, `OpenAi.ts`; Responses,
 * `OpenAiResponses.ts`) register a prefix: the key and base URL resolved per model, the key sent
 * as a bearer token, the request POSTed to one path, its reply decoded by the format's decoder and,
 * when the typed answer went strict, its text rid of strict mode's nulls (`strictSchema.answer`).
 * What differs between the two is the body, the decoder and the path; nothing here knows either format.
 */
import { Effect, Layer } from "effect"
import { HttpClient } from "effect/http"
import * as Model from "@condukt/core/Model"
import * as providerConfig from "./providerConfig.ts"
import * as providerStream from "./providerStream.ts"
import * as strictSchema from "./strictSchema.ts"
import type * as Provider from "../Provider.ts"

/** What one request sends, and what its reply needs to lose strict mode's nulls. */
export interface WireBody {
  readonly body: Record<string, unknown>
  /** Each tool that went strict, with its own parameters: its arguments lose strict mode's nulls. */
  readonly strict: ReadonlyMap<string, Model.ToolSpec["parameters"]>
  /** The typed answer's schema, when it went strict: its nulls are taken out of the reply's text. */
  readonly answer: Model.ToolSpec["parameters"] | undefined
}

/** One wire format as a prefix serves it. */
export interface Wire {
  /** Appended to the base URL (`/chat/completions`). */
  readonly path: string
  readonly nativeOutput: boolean
  /** The body for a model (the part after `prefix:`) and a request. */
  readonly body: (model: string, request: Model.Request) => WireBody
  /** A decoder factory for one reply, given the tools that went strict. */
  readonly decoder: (provider: string, strict: ReadonlyMap<string, Model.ToolSpec["parameters"]>) => () => providerStream.Decoder
}

/** Registers `source.provider:<model>` speaking `wire`, with the layer's `options`. */
export const register = (
  source: providerConfig.Source,
  options: Provider.Options | undefined,
  wire: Wire
): Layer.Layer<Model.Providers, never, HttpClient.HttpClient> =>
  Layer.unwrap(Effect.map(Effect.service(HttpClient.HttpClient), (http) => {
    const settings = providerStream.settings(http, options)
    const provider = source.provider
    return Model.layerProviders({
      [provider]: (name) => {
        const model = `${provider}:${name}`
        return Effect.map(providerConfig.resolve(source, options, model), (resolved): Model.Service => ({
          name: model,
          secrets: resolved.secrets,
          ...(wire.nativeOutput ? { nativeOutput: true } : {}),
          stream: (request) => {
            const { body, strict, answer } = wire.body(name, request)
            const streamed = providerStream.stream(settings, {
              provider,
              model,
              baseUrl: resolved.baseUrl,
              redact: resolved.redact,
              url: `${resolved.baseUrl}${wire.path}`,
              headers: {},
              auth: { header: "authorization", prefix: "Bearer ", key: resolved.key },
              body,
              decoder: wire.decoder(provider, strict)
            })
            return answer === undefined ? streamed : strictSchema.answer(answer, streamed)
          }
        }))
      }
    })
  }))

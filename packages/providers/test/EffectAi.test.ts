/**
 * EffectAi's retries against a loopback server: a program's own `effect/ai` LanguageModel that
 * streams its parts from an HTTP endpoint (a 429 as `AiError`'s `RateLimitError`, with the
 * server's `retry-after`) is retried as every provider's model is, each retry a `ModelRetry` event
 * of the session; a `Schedule` of the program's own replaces the policy.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Schedule, Stream } from "effect"
import { AiError, LanguageModel, type Response } from "effect/ai"
import { HttpClient, HttpClientRequest } from "effect/http"
import * as Condukt from "@condukt/node/Condukt"
import * as Model from "@condukt/core/Model"
import * as ModelError from "@condukt/core/ModelError"
import * as EffectAi from "../src/EffectAi.ts"
import * as Runs from "./agentRuns.ts"
import * as Loopback from "./loopback.ts"

const NAME = "custom:over-http"

const failure = (reason: AiError.AiErrorReason) => AiError.make({ module: "OverHttp", method: "streamText", reason })

/**
 * A language model streaming from `url`: each `data:` line of the reply is one encoded stream
 * part; a 429 is a rate limit (its `retry-after` in seconds), any other refusal an internal error.
 */
const overHttp = (url: string) =>
  Effect.flatMap(Effect.service(HttpClient.HttpClient), (http) =>
    LanguageModel.make({
      generateText: () => Effect.succeed([]),
      streamText: () =>
        Stream.unwrap(
          http.execute(HttpClientRequest.post(`${url}/stream`)).pipe(
            Effect.mapError(() => failure(new AiError.NetworkError({ reason: "TransportError", method: "POST", url }))),
            Effect.flatMap((response) => {
              if (response.status === 429) {
                const seconds = Number(response.headers["retry-after"])
                return Effect.fail(failure(new AiError.RateLimitError({ retryAfter: Duration.seconds(seconds) })))
              }
              return response.status === 200
                ? Effect.succeed(response)
                : Effect.fail(failure(new AiError.InternalProviderError({ description: `HTTP ${response.status}` })))
            }),
            Effect.map((response) =>
              response.stream.pipe(
                Stream.decodeText,
                Stream.splitLines,
                Stream.filter((line) => line.startsWith("data: ")),
                Stream.map((line) => JSON.parse(line.slice("data: ".length)) as Response.StreamPartEncoded),
                Stream.mapError(() => failure(new AiError.NetworkError({ reason: "TransportError", method: "POST", url })))
              )
            )
          )
        )
    }))

/** The model over the server, as a session's `Model`, with `options`. */
const modelOn = (server: Loopback.Server, options?: EffectAi.Options): Layer.Layer<Model.Model> =>
  Layer.effect(Model.Model, Effect.map(overHttp(server.url), (lm) => EffectAi.fromLanguageModel(NAME, lm, options))).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )

const answer = (text: string) =>
  [
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: text },
    { type: "text-end", id: "t1" },
    { type: "finish", reason: "stop", usage: { inputTokens: { uncached: 5, total: 5 }, outputTokens: { total: 2 } } }
  ].map((part) => `data: ${JSON.stringify(part)}\n\n`).join("")

const limited = Loopback.body(429, `{"error":{"message":"slow down"}}`, { "retry-after": "0" })
const REASON = "custom: rate limited: Rate limit exceeded. Retry after 0; retry after 0"

/** What the model streams for one request, and the failure it ended with. */
const outcome = (layer: Layer.Layer<Model.Model>) =>
  Effect.gen(function*() {
    const model = yield* Model.Model
    const seen: Array<Model.Part> = []
    const exit = yield* Effect.exit(Stream.runForEach(model.stream(Loopback.request()), (part) => Effect.sync(() => seen.push(part))))
    return { seen, error: exit._tag === "Failure" ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined }
  }).pipe(Effect.provide(layer))

const retried = (attempt: number): Model.Part => ({ _tag: "Retry", attempt, reason: REASON, delay: Duration.zero })
const ANSWER: ReadonlyArray<Model.Part> = [
  { _tag: "TextDelta", text: "Hello." },
  { _tag: "Usage", inputTokens: 5, outputTokens: 2 },
  { _tag: "Finish", reason: "stop" }
]

describe("EffectAi.fromLanguageModel: retries", () => {
  it.live("a rate limit is retried after its retry-after, a Retry part first, then the answer streams", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([limited, Loopback.sse(answer("Hello."))])
      const { seen, error } = yield* outcome(modelOn(server))
      assert.deepStrictEqual([seen, error, server.requests.length], [[retried(2), ...ANSWER], undefined, 2])
    }))

  it.live("each retry is a ModelRetry event of the session, before the reply's text", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([limited, Loopback.sse(answer("a.txt says alpha."))])
      const events = yield* Runs.streamed(Runs.reader(NAME), modelOn(server), yield* Runs.files, "What does a.txt say?")
      assert.deepStrictEqual(events.filter((e) => e._tag !== "AgentStart" && e._tag !== "AgentEnd").map((e) => e._tag), [
        "TurnStart",
        "ModelRetry",
        "TextDelta",
        "TurnEnd"
      ])
      const retry = events.find((e) => e._tag === "ModelRetry")
      assert.deepStrictEqual(retry?._tag === "ModelRetry" ? [retry.attempt, retry.reason, retry.delay] : [], [2, REASON, Duration.zero])
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("a program's own Schedule replaces the policy: recurs(0) tries once, recurs(3) four times", () =>
    Effect.gen(function*() {
      const once = yield* Loopback.start([limited, Loopback.sse(answer("Hello."))])
      const refused = yield* outcome(modelOn(once, { retry: Schedule.recurs(0) }))
      assert.instanceOf(refused.error, ModelError.ModelError)
      assert.deepStrictEqual([refused.seen, refused.error.reason._tag, once.requests.length], [[], "RateLimited", 1])

      const four = yield* Loopback.start([limited, limited, limited, Loopback.sse(answer("Hello."))])
      const answered = yield* outcome(modelOn(four, { retry: Schedule.recurs(3) }))
      assert.deepStrictEqual([answered.seen, answered.error, four.requests.length], [
        [retried(2), retried(3), retried(4), ...ANSWER],
        undefined,
        4
      ])
    }))
})

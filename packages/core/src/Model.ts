/**
 * Model — the seam between a session and a language model.
 *
 * A request (system prompt, messages, tool schemas, options) streams typed parts (`ModelReply`,
 * re-exported here): text and thinking deltas, complete tool calls, usage and the finish reason.
 * Providers alone know a vendor's wire format; `"provider:model"` strings resolve through the
 * `Providers` registry, a service every provider layer adds to. This module refuses to retry
 * (`ModelRetry` wraps a model for that) or to translate (each provider's job); its errors are
 * `ModelError`'s, spelled there only.
 */
import { Context, Effect, type JsonSchema, Layer, Option, type Redacted, type Scope, Stream } from "effect"
import { fromIterable as historyOf, type History } from "./History.ts"
import { assistant, type Message, toolResult } from "./Message.ts"
import { ModelError, UnknownProvider } from "./ModelError.ts"
import type { Part } from "./ModelReply.ts"
import * as Tracing from "./Tracing.ts"
import * as ToolName from "./ToolName.ts"
import type { Usage as UsageOf } from "./Usage.ts"

export { addUsage, emptyUsage, type FinishReason, type Part, toMessage, usageOf } from "./ModelReply.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** A tool as the model sees it. */
export interface ToolSpec {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema.JsonSchema
  /** Who may call the tool, when not only the model directly (programmatic tool calling). */
  readonly allowedCallers?: ReadonlyArray<"human" | "code_execution"> | undefined
}

/**
 * A tool as the model sees it: its callers only when not just the model directly.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolSpec = (tool: Pick<ToolSpec, "name" | "description" | "parameters"> & {
  readonly allowedCallers: ReadonlyArray<"human" | "code_execution">
}): ToolSpec => ({
  name: tool.name,
  description: tool.description,
  parameters: tool.parameters,
  ...(tool.allowedCallers.length === 1 && tool.allowedCallers[0] === "human" ? {} : { allowedCallers: tool.allowedCallers })
})

/** Settings of one request; a provider ignores those its vendor lacks. */
export interface Options {
  /** Most tokens the reply may have. */
  readonly maxTokens?: number | undefined
  readonly temperature?: number | undefined
  readonly topP?: number | undefined
  /** Texts that end the reply when the model writes them. */
  readonly stopSequences?: ReadonlyArray<string> | undefined
  /** Whether the model must call a tool: `auto` (default), `none`, `required`, or one tool by name. */
  readonly toolChoice?: ToolChoice | undefined
  /**
   * How hard a reasoning model thinks: an effort (OpenAI's `reasoning_effort`) or a token budget
   * (Anthropic's extended thinking). A provider given one derives the other (see docs/providers.md).
   */
  readonly reasoning?: Reasoning | undefined
}

/** @since 0.1.0 @category models */
export type ToolChoice = "auto" | "none" | "required" | { readonly tool: string }

/** @since 0.1.0 @category models */
export interface Reasoning {
  readonly effort?: "minimal" | "low" | "medium" | "high" | undefined
  readonly budgetTokens?: number | undefined
}

/** Tokens counted by the provider (`Usage.Usage`, the one shape of events, runs and sessions). */
export type Usage = UsageOf

/** @since 0.1.0 @category models */
export interface Request {
  readonly system: string | undefined
  /** The whole conversation, an immutable view the session does not copy per request. */
  readonly messages: History
  readonly tools: ReadonlyArray<ToolSpec>
  readonly options?: Options | undefined
  /**
   * The typed answer the run wants, sent only to a model whose provider has a native mechanism
   * (`Service.nativeOutput`): the final reply's text is then JSON of this schema.
   */
  readonly output?: Output | undefined
}

/**
 * The answer a run wants, as the model sees it: a name and the JSON Schema of its JSON encoding.
 *
 * @since 0.1.0
 * @category models
 */
export interface Output {
  readonly name: string
  readonly schema: JsonSchema.JsonSchema
}


// ---------------------------------------------------------------------------------------------
// Services
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface Service {
  /** The model's name, `provider:model` (for events and errors). */
  readonly name: string
  readonly stream: (request: Request) => Stream.Stream<Part, ModelError>
  /**
   * The credentials this model sends (its API key), by name: a session registers them as secrets,
   * so a gateway that echoes one back is redacted from every event, error, log and span.
   */
  readonly secrets?: Readonly<Record<string, Redacted.Redacted<string>>> | undefined
  /**
   * `true` when the provider honours `Request.output` natively (OpenAI's strict `json_schema`,
   * Gemini's response schema, Anthropic's forced final tool). Otherwise a run that wants a typed
   * answer offers the model a `submit` tool instead (docs/decisions/0062).
   */
  readonly nativeOutput?: boolean | undefined
}

/**
 * The model a session talks to. When provided around a program (a test's TestModel), it wins
 * over the agent's `"provider:model"` string.
 *
 * @since 0.1.0
 * @category services
 */
export class Model extends Context.Service<Model, Service>()("@condukt/core/Model") {}

/** Makes a model for the part after `provider:`. */
export type Provider = (model: string) => Effect.Effect<Service, ModelError>

/**
 * How a registration ranks: `explicit` (a provider layer the program provides) wins over `default`
 * (what a composition root registers from the environment, see `layerDefaults`).
 *
 * @since 0.1.0
 * @category models
 */
export type Rank = "explicit" | "default"

/** @since 0.1.0 @category models */
export interface Registry {
  /** Adds `provider` under `prefix` until the scope closes (the registering layer's scope). */
  readonly register: (prefix: string, provider: Provider, rank: Rank) => Effect.Effect<void, never, Scope.Scope>
  /** The provider serving `prefix`: the latest explicit registration, else the latest default. */
  readonly provider: (prefix: string) => Effect.Effect<Provider | undefined>
  /** The registered prefixes, sorted. */
  readonly prefixes: Effect.Effect<ReadonlyArray<string>>
}

/**
 * The provider registry: the one collection every provider layer of a program adds to, whatever
 * order they are merged or provided in.
 *
 * @since 0.1.0
 * @category services
 */
export class Providers extends Context.Service<Providers, Registry>()("@condukt/core/Model/Providers") {}

// An empty registry. Registrations of one prefix stack: removing the latest (its layer's scope
// closed) brings back the one before.
const makeRegistry: Effect.Effect<Registry> = Effect.sync(() => {
  const byPrefix = new Map<string, Array<{ readonly provider: Provider; readonly rank: Rank }>>()
  return Providers.of({
    register: (prefix, provider, rank) => {
      const entry = { provider, rank }
      return Effect.acquireRelease(
        Effect.sync(() => {
          byPrefix.set(prefix, [...(byPrefix.get(prefix) ?? []), entry])
        }),
        () =>
          Effect.sync(() => {
            const rest = (byPrefix.get(prefix) ?? []).filter((e) => e !== entry)
            if (rest.length === 0) byPrefix.delete(prefix)
            else byPrefix.set(prefix, rest)
          })
      )
    },
    provider: (prefix) =>
      Effect.sync(() => {
        const entries = byPrefix.get(prefix) ?? []
        return (entries.findLast((e) => e.rank === "explicit") ?? entries.at(-1))?.provider
      }),
    prefixes: Effect.sync(() => [...byPrefix.keys()].sort())
  })
})

// One value for the whole program: a layer build memoizes it, so every provider layer in one
// build (merged side by side, stacked, or in a nested provide, whose memo map forks the outer
// one) shares the same registry. A registry already in the context (built elsewhere) is reused.
const layerRegistry: Layer.Layer<Providers> = Layer.effect(
  Providers,
  Effect.flatMap(Effect.serviceOption(Providers), Option.match({ onNone: () => makeRegistry, onSome: Effect.succeed }))
)

// Set only while `layerDefaults` builds its layer; registrations read it then.
const CurrentRank = Context.Reference<Rank>("@condukt/core/Model/CurrentRank", { defaultValue: () => "explicit" })

/**
 * Adds providers to the program's registry, keyed by prefix (`{ anthropic: … }` serves
 * `"anthropic:…"`), for as long as the layer lives. The latest explicit registration of a prefix
 * wins, and any explicit one wins over a default (`layerDefaults`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerProviders = (providers: Readonly<Record<string, Provider>>): Layer.Layer<Providers> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const registry = yield* Providers
    const rank = yield* CurrentRank
    for (const [prefix, provider] of Object.entries(providers)) yield* registry.register(prefix, provider, rank)
  })).pipe(Layer.provideMerge(layerRegistry))

/**
 * `layer` with every provider it registers ranked as a default: a provider layer the program
 * provides itself wins over them, wherever it is provided (how `Condukt.layer` registers the
 * environment-configured providers).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDefaults = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.provide(layer, Layer.succeed(CurrentRank, "default"))

/**
 * The model for a `"provider:model"` string.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolve = (model: string): Effect.Effect<Service, ModelError> => Tracing.span(resolving(model), "Model.resolve")

// A span only under a real tracer (`Tracing.ts`): every session start resolves its model,
// and under the default tracer a span per start cost ~8 µs for nothing to read it.
const resolving = Effect.fnUntraced(function*(model: string) {
  const registry = yield* Effect.serviceOption(Providers)
  // The type says string; a JavaScript caller or an unset environment variable says otherwise, and
  // a missing model is `UnknownProvider` for "" (its message asks for one), not a TypeError.
  const name = typeof model === "string" ? model : ""
  const colon = name.indexOf(":")
  const provider = Option.isSome(registry) && colon > 0 ? yield* registry.value.provider(name.slice(0, colon)) : undefined
  if (provider === undefined) {
    const known = Option.isSome(registry) ? yield* registry.value.prefixes : []
    return yield* new ModelError({ model: name, reason: new UnknownProvider({ model: name, known }) })
  }
  // Providers get names they accept (an MCP tool's `server.tool` is refused by several vendors).
  return wireNames(yield* provider(name.slice(colon + 1)))
})

/*
 * Tool names every provider accepts, mapped back on the way in.
 *
 * Our tool names may hold characters the vendors refuse (`github.create_issue` from an MCP server:
 * Anthropic and OpenAI accept `^[a-zA-Z0-9_-]{1,64}$`). A model resolved through the provider
 * registry sees each such name replaced by a safe one (`ToolName.safeNames` over the request's
 * tools, charset `provider`) in the tool list and in every tool call and result of the history, and its
 * tool calls come back under the original names. Deterministic for a given tool list, so a
 * conversation sends the same names every turn. A request whose names are all safe is passed
 * through untouched (no copy).
 */

/** The renaming of each tool list, worked out once: a session sends the same list every turn. */
const mappings = new WeakMap<ReadonlyArray<ToolSpec>, ReadonlyMap<string, string> | undefined>()

const mapping = (request: Request): ReadonlyMap<string, string> | undefined => {
  if (mappings.has(request.tools)) return mappings.get(request.tools)
  const names = request.tools.every((tool) => ToolName.isSafe(tool.name, "provider"))
    ? undefined
    : ToolName.safeNames(request.tools.map((tool) => tool.name), "provider")
  mappings.set(request.tools, names)
  return names
}

const renameMessage = (message: Message, wire: (name: string) => string): Message => {
  if (message._tag === "ToolResultMessage") {
    const name = wire(message.name)
    return name === message.name ? message : toolResult({ ...message, name })
  }
  if (message._tag !== "AssistantMessage" || !message.parts.some((p) => p._tag === "ToolCall" && wire(p.name) !== p.name)) {
    return message
  }
  return assistant(message.parts.map((part) => (part._tag === "ToolCall" ? { ...part, name: wire(part.name) } : part)))
}

/**
 * The model, sending provider-safe tool names and answering with the session's own.
 *
 * @since 0.1.0
 * @category combinators
 */
const wireNames = (model: Service): Service => ({
  ...model,
  stream: (request) => {
    const names = mapping(request)
    if (names === undefined) return model.stream(request)
    const wire = (name: string) => names.get(name) ?? name
    const back = new Map([...names].map(([name, safe]) => [safe, name]))
    const renamed: Request = {
      ...request,
      tools: request.tools.map((tool) => (names.has(tool.name) ? { ...tool, name: wire(tool.name) } : tool)),
      messages: historyOf(Array.from(request.messages, (message) => renameMessage(message, wire)))
    }
    return Stream.map(model.stream(renamed), (part): Part =>
      part._tag === "ToolCall" && back.has(part.name) ? { ...part, name: back.get(part.name)! } : part)
  }
})

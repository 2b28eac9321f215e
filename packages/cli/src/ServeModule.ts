/**
 * ServeModule — what `condukt serve <module>` serves from a program's module (.ts, .mts, .js or
 * .mjs, imported by Node itself): every exported `Agent`, by its name (named exports, the default
 * export, and an `agents` export holding an array or a record of them; a start that names no agent
 * runs the default export when it is one, else the first by name), and, when the module
 * exports one named `layer`, that Layer, provided to every session over the CLI's defaults (the
 * model providers over their environment keys, a local sandbox at the working directory): what
 * the agents need that the defaults do not give, a model of the program's own included.
 *
 * A module that cannot be imported, exports no agent, two agents of one name, or a `layer` that
 * is not a Layer is refused with a sentence saying which (`ServeModuleInvalid`).
 */
import type * as Agent from "@condukt/core/Agent"
import { Effect, FileSystem, Layer, Path, Schema } from "effect"

/** The module extensions Node imports by itself. */
const EXTENSIONS = [".ts", ".mts", ".js", ".mjs"]

/** Most agents one module serves. */
export const MAX_AGENTS = 256

/**
 * Why a module cannot be served.
 *
 * @since 0.1.0
 * @category errors
 */
export class ServeModuleInvalid extends Schema.TaggedError<ServeModuleInvalid>()("ServeModuleInvalid", {
  module: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `cannot serve ${this.module}: ${this.description}`
  }
}

/**
 * What a module gives: its agents by name, and the layer its sessions get (empty when it exports none).
 *
 * @since 0.1.0
 * @category models
 */
export interface Loaded {
  readonly agents: Readonly<Record<string, Agent.Agent<unknown>>>
  readonly layer: Layer.Layer<unknown, unknown, never>
  /** The agent a start that names none runs: the default export when it is an agent, else the first by name. */
  readonly defaultAgent: string
}

const isAgent = (value: unknown): value is Agent.Agent<unknown> =>
  typeof value === "object" && value !== null && (value as { readonly _tag?: unknown })._tag === "Agent" &&
  typeof (value as { readonly name?: unknown }).name === "string"

/** The agents `value` holds: itself, or an array's or a record's values (one level, no deeper). */
const agentsIn = (value: unknown): ReadonlyArray<Agent.Agent<unknown>> =>
  isAgent(value)
    ? [value]
    : Array.isArray(value)
    ? value.filter(isAgent)
    : typeof value === "object" && value !== null && !Layer.isLayer(value)
    ? Object.values(value).filter(isAgent)
    : []

/**
 * Imports `file` (relative to the working directory) and collects its agents and layer.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = Effect.fn("ServeModule.load")(function*(file: string) {
  const invalid = (description: string) => new ServeModuleInvalid({ module: file, description })
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const absolute = path.resolve(file)
  if (!EXTENSIONS.includes(path.extname(absolute))) {
    return yield* invalid(`a module is a ${EXTENSIONS.join(", ")} file`)
  }
  const info = yield* Effect.mapError(fs.stat(absolute), () => invalid("no such file"))
  if (info.type !== "File") return yield* invalid("it is not a regular file")
  const href = (yield* Effect.mapError(path.toFileUrl(absolute), (error) => invalid(error.message))).href
  const exports = yield* Effect.tryPromise({
    try: () => import(href) as Promise<Readonly<Record<string, unknown>>>,
    catch: (cause) => invalid(`importing it failed: ${cause instanceof Error ? cause.message : String(cause)}`)
  })
  const agents: Record<string, Agent.Agent<unknown>> = {}
  for (const [name, value] of Object.entries(exports)) {
    if (name === "layer") continue
    for (const agent of agentsIn(value)) {
      const known = Object.hasOwn(agents, agent.name) ? agents[agent.name] : undefined
      if (known !== undefined && known !== agent) return yield* invalid(`two agents are named ${JSON.stringify(agent.name)}; each needs a name of its own`)
      if (known === undefined && Object.keys(agents).length >= MAX_AGENTS) return yield* invalid(`it exports more than ${MAX_AGENTS} agents`)
      agents[agent.name] = agent
    }
  }
  if (Object.keys(agents).length === 0) {
    return yield* invalid("it exports no agent (export each Agent.make(...), or `agents`: an array or a record of them)")
  }
  const layer = Object.hasOwn(exports, "layer") ? exports.layer : undefined
  if (layer !== undefined && !Layer.isLayer(layer)) {
    return yield* invalid("its `layer` export is not a Layer (it is what the agents' sessions are given: a model, a sandbox, a tool's services)")
  }
  const sorted = Object.fromEntries(Object.entries(agents).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  const defaultAgent = isAgent(exports.default) ? exports.default.name : Object.keys(sorted)[0]!
  return { agents: sorted, layer: (layer ?? Layer.empty) as Layer.Layer<unknown, unknown, never>, defaultAgent } satisfies Loaded
})

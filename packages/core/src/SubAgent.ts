/**
 * SubAgent — an agent offered to another as a tool (`Agent.asTool`): each call runs a child
 * session of it and answers with its final reply, or its typed answer.
 *
 * The child is supervised under the session whose call started it: its scope is opened under that
 * session's and closed when the call ends, so the parent's abort, stop or crash ends the child's
 * run, its tools and their processes. It works in the parent's sandbox unless its agent names its
 * own, and reuses the MCP connections its ancestors hold under the same server name (no second
 * server process). Its events reach the parent run's stream tagged with their `agentPath`; its
 * tokens are added to the parent run's `RunResult` (`usage`, `byAgent`, `cost`). Depth and the
 * number running at once under one top-level run are bounded: a call past a bound, or whose child
 * fails, is an error result the parent's model reads, and the parent goes on. This module builds
 * the tool; a session supplies the rest (`Host`, internal/session/subAgents.ts).
 */
import { Cause, Effect, Option, Schema, Scope } from "effect"
import type { Agent } from "./Agent.ts"
import * as SubAgents from "./internal/session/subAgents.ts"
import type * as Model from "./Model.ts"
import type * as Output from "./Output.ts"
import * as Sandbox from "./Sandbox.ts"
import * as Session from "./Session.ts"
import type * as SessionEvent from "./SessionEvent.ts"
import * as Tool from "./Tool.ts"
import type * as ToolSource from "./ToolSource.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** How deep sub-agents nest unless a tool says otherwise: a sub-agent's sub-agent's sub-agent. */
export const DEFAULT_MAX_DEPTH = 3

/** How many sub-agents run at once under one top-level run unless a tool says otherwise. */
export const DEFAULT_MAX_CONCURRENT = 8

/**
 * The input a sub-agent tool takes unless given one: the task, which is the child's prompt.
 *
 * @since 0.1.0
 * @category models
 */
export const PromptInput = Schema.Struct({
  prompt: Schema.String.annotate({ description: "The task for the sub-agent, with everything it needs to know" })
})

/**
 * How an agent is offered as a tool.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<I extends Schema.Top = typeof PromptInput, O extends Output.Output | undefined = undefined> {
  /** What the calling model reads: when to call it and what it answers. */
  readonly description: string
  /**
   * The tool's input (default `{ prompt: string }`, the child's prompt). Any other Schema: the
   * child's prompt is the input's JSON.
   */
  readonly input?: I | undefined
  /** A Schema for the child's typed answer: the result's text is its JSON, its data the value. */
  readonly output?: O | undefined
  /** How deep sub-agents may nest, the top-level session's being level 0 (default 3). */
  readonly maxDepth?: number | undefined
  /** How many sub-agents may run at once under one top-level run (default 8). */
  readonly maxConcurrent?: number | undefined
}

/**
 * One sub-agent run's tokens for its parent's result: its total, by agent path (joined with `/`),
 * and what it cost (`undefined` when a model had no price).
 *
 * @since 0.1.0
 * @category models
 */
export interface Share {
  readonly usage: Model.Usage
  readonly byAgent: Readonly<Record<string, Model.Usage>>
  readonly cost: number | undefined
}

/**
 * What a session gives its calls for the sub-agents they start (`Tool.Context.subAgents`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Host {
  /** The session's scope: a child session's scope is opened under it. */
  readonly scope: Scope.Scope
  /** The session's MCP connections, by server name. */
  readonly sources: ReadonlyMap<string, ToolSource.Running>
  /** Sub-agents running under this run now (a top-level run's count, shared down its tree). */
  readonly tree: { running: number }
  /** Hands a child's event to the running run's stream and the session's observers. */
  readonly forward: (event: SessionEvent.SessionEvent, wait: boolean) => Effect.Effect<void>
  /** Adds a child run's tokens to the running run's result. */
  readonly spend: (share: Share) => void
}

// ---------------------------------------------------------------------------------------------
// Model-facing texts
// ---------------------------------------------------------------------------------------------

/** The model reads it when a sub-agent tool is called outside a session (an executor of its own). */
export const outsideSession = (agent: string): string => `Sub-agent ${agent} can only run inside a session`

/** The model reads it when a call would nest sub-agents deeper than the tool allows. */
export const tooDeep = (agent: string, maxDepth: number): string =>
  `Sub-agent ${agent} was not started: sub-agents may nest ${maxDepth} deep at most; do this task yourself`

/** The model reads it when as many sub-agents as the tool allows run already. */
export const tooMany = (agent: string, maxConcurrent: number): string =>
  `Sub-agent ${agent} was not started: ${maxConcurrent} sub-agents are running, the most at once; call it again once one has answered`

/** The model reads it when the child's session could not start or its run failed. */
export const failed = (agent: string, message: string): string => `Sub-agent ${agent} failed: ${message}`

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

interface Settings {
  readonly output: Output.Output | undefined
  readonly maxDepth: number
  readonly maxConcurrent: number
  readonly promptOf: (args: unknown) => Effect.Effect<string>
}

/**
 * A tool, named after `agent`, that runs a child session of it per call (see the module comment).
 *
 * @since 0.1.0
 * @category constructors
 */
export const asTool = <
  R,
  I extends Schema.Top & { readonly DecodingServices: never; readonly EncodingServices: never } = typeof PromptInput,
  O extends Output.Output | undefined = undefined
>(agent: Agent<R>, options: Options<I, O>): Tool.Tool<R> => {
  const input = options.input
  const encode = input === undefined ? undefined : Schema.encodeUnknownEffect(Schema.toCodecJson(input) as unknown as Schema.Codec<unknown, unknown>)
  const settings: Settings = {
    output: options.output,
    maxDepth: options.maxDepth ?? DEFAULT_MAX_DEPTH,
    maxConcurrent: options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT,
    promptOf: encode === undefined
      ? (args) => Effect.succeed((args as typeof PromptInput.Type).prompt)
      : (args) => Effect.map(Effect.orDie(encode(args)), (json) => JSON.stringify(json))
  }
  return Tool.make(agent.name, {
    description: options.description,
    parameters: (input ?? PromptInput) as typeof PromptInput,
    call: (args, context) => call(agent, settings, args, context)
  })
}

/** One call: the bounds checked, then a child run counted against the top-level run's. */
const call = <R>(agent: Agent<R>, settings: Settings, args: unknown, context: Tool.Context): Effect.Effect<Tool.Output, string, R> =>
  Effect.gen(function*() {
    const host = context.subAgents
    if (host === undefined) return yield* Effect.fail(outsideSession(agent.name))
    const lineage = Option.getOrUndefined(yield* Effect.serviceOption(SubAgents.Lineage))
    const path = [...(lineage?.path ?? [context.agent]), agent.name]
    if (path.length - 1 > settings.maxDepth) return yield* Effect.fail(tooDeep(agent.name, settings.maxDepth))
    const tree = lineage?.tree ?? host.tree
    if (tree.running >= settings.maxConcurrent) return yield* Effect.fail(tooMany(agent.name, settings.maxConcurrent))
    const prompt = yield* settings.promptOf(args)
    // Its ancestors' connections and this session's: the nearest of one name wins.
    const sources = lineage === undefined ? host.sources : new Map([...lineage.sources, ...host.sources])
    tree.running++
    return yield* Effect.ensuring(
      Effect.acquireUseRelease(
        Scope.fork(host.scope),
        (scope) => runChild(agent, settings, prompt, context, host, scope, { path, sources, tree }),
        (scope, exit) => Scope.close(scope, exit)
      ),
      Effect.sync(() => tree.running--)
    )
  })

/** Starts the child in `scope`, runs the prompt with its events handed to the parent, and counts its tokens there. */
const runChild = <R>(
  agent: Agent<R>,
  settings: Settings,
  prompt: string,
  context: Tool.Context,
  host: Host,
  scope: Scope.Scope,
  lineage: SubAgents.Lineage["Service"]
): Effect.Effect<Tool.Output, string, R> =>
  Effect.gen(function*() {
    const starting: Effect.Effect<readonly [Session.Session, Scope.Closeable], Session.StartError, R> = Effect.provideService(
      Session.startIn<R, never>(agent, { projectInstructions: false }, scope, undefined),
      SubAgents.Lineage,
      lineage
    )
    // The parent's sandbox, unless the agent names its own.
    const [session] = yield* Effect.mapError(
      agent.sandbox === undefined ? Effect.provideService(starting, Sandbox.Sandbox, context.sandbox) : starting,
      (error) => failed(agent.name, error.message)
    )
    const path = lineage.path
    const forward = (event: SessionEvent.SessionEvent, wait: boolean) =>
      host.forward(event.agentPath === undefined ? { ...event, agentPath: path } : event, wait)
    const exit = yield* Effect.exit(
      Session.observe(session, prompt, settings.output === undefined ? undefined : { output: settings.output }, forward)
    )
    const key = path.join("/")
    if (exit._tag === "Success") {
      const result = exit.value
      host.spend({ usage: result.usage, byAgent: result.byAgent ?? { [key]: result.usage }, cost: result.cost })
      return settings.output === undefined ? result.text : Tool.structured(result.text, result.value)
    }
    // A run that failed or was aborted still spent its replies' tokens: the session counted them.
    const usage = yield* session.usage
    host.spend({ usage, byAgent: { [key]: usage }, cost: yield* session.cost })
    return yield* Effect.failCause(Cause.map(exit.cause, (error) => failed(agent.name, error.message)))
  })

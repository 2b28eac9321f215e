/**
 * Agent — the description of an agent: its name, model, system prompt, tools and defaults.
 *
 * An agent is an inert value; `Session.start` runs it. Its type carries the services its tools
 * and its sandbox layer need (`R`), so a session started without them does not compile. `asTool`
 * offers an agent to others as a tool; the session whose run makes a call runs the child
 * (`SubAgentHost`, runtime/subAgents.ts), so this module knows no session.
 */
import { Context, type Duration, Effect, type Layer, Option, type Result, Schema } from "effect"
import type * as Approval from "./Approval.ts"
import * as Executor from "./Executor.ts"
import * as Model from "./Model.ts"
import type * as Sandbox from "./Sandbox.ts"
import type * as Secret from "./Secret.ts"
import type * as Output from "./Output.ts"
import * as Tool from "./Tool.ts"
import type * as ToolSource from "./ToolSource.ts"

/** @since 0.1.0 @category models */
export interface Agent<out R = never> {
  readonly _tag: "Agent"
  readonly name: string
  /** `"provider:model"`, resolved through the provider registry unless a `Model` is provided. */
  readonly model: string
  readonly system: string | undefined
  readonly tools: ReadonlyArray<Tool.Tool<R>>
  /** The agent's default sandbox, built in each session's own scope; what it needs is part of `R`. */
  readonly sandbox: Layer.Layer<Sandbox.Sandbox, unknown, R> | undefined
  readonly maxTurns: number | undefined
  readonly toolTimeout: Duration.Input | undefined
  readonly toolConcurrency: number | undefined
  /** Settings sent with every model request (a run's own settings win, key by key). */
  readonly modelOptions: Model.Options | undefined
  /** The tools compiled once for every session of this agent, or why they cannot be. */
  readonly executor: Result.Result<Executor.Executor<R>, Executor.DuplicateToolName>
  /** The tools as the model sees them. */
  readonly specs: ReadonlyArray<Model.ToolSpec>
  /** Secrets every session of the agent resolves at start, by environment variable name. */
  readonly secrets: Secret.Secrets<R>
  /** Sources of more tools each session starts and owns: MCP servers (`McpServer.stdio(...)`). */
  readonly mcpServers: ReadonlyArray<ToolSource.ToolSource<R>>
  /** Which calls run, wait for a person's answer or are refused, by tool name; a session start adds its own. */
  readonly approvals: Approval.Rules | undefined
}

/** @since 0.1.0 @category models */
export interface Options<R> {
  readonly name: string
  readonly model: string
  readonly system?: string | undefined
  readonly tools?: ReadonlyArray<Tool.Tool<R>> | undefined
  readonly sandbox?: Layer.Layer<Sandbox.Sandbox, unknown, R> | undefined
  /** Most model requests one run may make (default 50). */
  readonly maxTurns?: number | undefined
  /** Per-call timeout for tools that set none (default 10 minutes). */
  readonly toolTimeout?: Duration.Input | undefined
  /** Most concurrent tool calls of one message at a time (default 8). */
  readonly toolConcurrency?: number | undefined
  /** Settings sent with every model request (`temperature`, `maxTokens`…). */
  readonly modelOptions?: Model.Options | undefined
  /** Secrets by environment variable name (`{ GH_TOKEN: Secret.env("GITHUB_TOKEN") }`). */
  readonly secrets?: Secret.Secrets<R> | undefined
  /** MCP servers (from `@condukt/mcp`) each session starts in parallel, owns and stops. */
  readonly mcpServers?: ReadonlyArray<ToolSource.ToolSource<R>> | undefined
  /**
   * Rules by tool name, globs included (`{ ask: ["Bash", "github.*"], deny: ["*.delete_*"] }`):
   * deny > ask > allow > the tool's own `needsApproval` (docs/approvals.md).
   */
  readonly approvals?: Approval.Rules | undefined
}

/**
 * Describes an agent. Its tools are compiled here, once; two tools sharing a name make every
 * session of it fail to start with `DuplicateToolName`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <R = never>(options: Options<R>): Agent<R> => {
  const tools = options.tools ?? []
  return {
    _tag: "Agent",
    name: options.name,
    model: options.model,
    system: options.system,
    tools,
    sandbox: options.sandbox,
    maxTurns: options.maxTurns,
    toolTimeout: options.toolTimeout,
    toolConcurrency: options.toolConcurrency,
    modelOptions: options.modelOptions,
    executor: Executor.make(tools, { concurrency: options.toolConcurrency, timeout: options.toolTimeout }),
    specs: tools.map(Model.toolSpec),
    secrets: options.secrets ?? {},
    mcpServers: options.mcpServers ?? [],
    approvals: options.approvals
  }
}

// ---------------------------------------------------------------------------------------------
// Sub-agents
// ---------------------------------------------------------------------------------------------

/**
 * How deep sub-agents nest unless a tool says otherwise: a sub-agent's sub-agent's sub-agent.
 *
 * @since 0.1.0
 * @category models
 */
export const DEFAULT_MAX_DEPTH = 3

/**
 * How many sub-agents run at once under one top-level run unless a tool says otherwise.
 *
 * @since 0.1.0
 * @category models
 */
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
 * How an agent is offered as a tool (`asTool`).
 *
 * @since 0.1.0
 * @category models
 */
export interface AsToolOptions<I extends Schema.Top = typeof PromptInput, O extends Output.Output | undefined = undefined> {
  /** What the calling model reads: when to call it and what it answers. */
  readonly description: string
  /** The tool's input (default `{ prompt: string }`, the child's prompt); any other is sent to the child as its JSON. */
  readonly input?: I | undefined
  /** A Schema for the child's typed answer: the call's text is its JSON, its data the value. */
  readonly output?: O | undefined
  /** How deep sub-agents may nest, the top-level session being level 0 (default 3). */
  readonly maxDepth?: number | undefined
  /** How many sub-agents may run at once under one top-level run, its whole tree counted (default 8). */
  readonly maxConcurrent?: number | undefined
}

/**
 * A sub-agent tool's settings, as the session running a call reads them.
 *
 * @since 0.1.0
 * @category models
 */
export interface SubAgentSettings {
  readonly output: Output.Output | undefined
  readonly maxDepth: number
  readonly maxConcurrent: number
  /** The child's prompt for the call's decoded input. */
  readonly promptOf: (input: unknown) => Effect.Effect<string>
}

/**
 * What a session gives the calls of its run for the sub-agents they start, provided around each
 * run of an agent that has a sub-agent tool (runtime/subAgents.ts): it starts the child,
 * runs it and answers for the model.
 *
 * @since 0.1.0
 * @category services
 */
export class SubAgentHost extends Context.Service<SubAgentHost, {
  readonly run: <R>(agent: Agent<R>, settings: SubAgentSettings, input: unknown, context: Tool.Context) => Effect.Effect<Tool.Output, string, R>
}>()("@condukt/core/Agent/SubAgentHost") {}

/**
 * `agent` offered to other agents as a tool named after it: each call runs a child session of it,
 * supervised under the caller's session, its events in the caller's stream and its tokens in the
 * caller's result (docs/sub-agents.md). Outside a session (an executor of its own) a call is an
 * error result.
 *
 * @since 0.1.0
 * @category constructors
 */
export const asTool = <
  R,
  I extends Schema.Top & { readonly DecodingServices: never; readonly EncodingServices: never } = typeof PromptInput,
  O extends Output.Output | undefined = undefined
>(agent: Agent<R>, options: AsToolOptions<I, O>): Tool.Tool<R> => {
  const input = options.input
  const encode = input === undefined ? undefined : Schema.encodeUnknownEffect(Schema.toCodecJson(input) as unknown as Schema.Codec<unknown, unknown>)
  const settings: SubAgentSettings = {
    output: options.output,
    maxDepth: options.maxDepth ?? DEFAULT_MAX_DEPTH,
    maxConcurrent: options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT,
    promptOf: encode === undefined
      ? (args) => Effect.succeed((args as typeof PromptInput.Type).prompt)
      : (args) => Effect.map(Effect.orDie(encode(args)), (json) => JSON.stringify(json))
  }
  const tool = Tool.make(agent.name, {
    description: options.description,
    parameters: (input ?? PromptInput) as typeof PromptInput,
    call: (args, context) =>
      Effect.flatMap(Effect.serviceOption(SubAgentHost), (host) =>
        Option.isSome(host)
          ? host.value.run(agent, settings, args, context)
          : Effect.fail(`Sub-agent ${agent.name} can only run inside a session`))
  })
  return { ...tool, subAgent: true }
}

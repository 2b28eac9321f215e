/**
 * Agent — the description of an agent: its name, model, system prompt, tools and defaults.
 *
 * An agent is an inert value; `Session.start` runs it. Its type carries the services its tools
 * and its sandbox layer need (`R`), so a session started without them does not compile.
 */
import type { Duration, Layer, Result } from "effect"
import type * as Approval from "./Approval.ts"
import * as Executor from "./Executor.ts"
import * as Model from "./Model.ts"
import type * as Sandbox from "./Sandbox.ts"
import type * as Secret from "./Secret.ts"
import * as SubAgent from "./SubAgent.ts"
import type * as Tool from "./Tool.ts"
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

/**
 * `agent` offered to another agent as a tool: each call runs a child session of it, supervised
 * under the caller's session, its events in the caller's stream and its tokens in the caller's
 * result (docs/sub-agents.md).
 *
 * @since 0.1.0
 * @category constructors
 */
export const asTool = SubAgent.asTool

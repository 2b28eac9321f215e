/**
 * toolSet — the tools one session offers: its agent's, plus those of the sources (MCP servers) it
 * started, which can change while it lives.
 *
 * `start` starts a session's sources in parallel under a supervisor made for them in the current
 * (the session's) scope; the first failure interrupts the others, whose scopes close with it. When
 * that supervisor gives up (its restart intensity), the session does not fail: each source says
 * so (an event, a warning, its tools' answer) and the session goes on without them (ADR 0101).
 * `refresh` runs before every model request: when a source's tools changed, the executor is
 * rebuilt once, so the change shows from that turn on and costs nothing while nothing changes.
 * A change that would give two tools one name keeps the previous tools (and says so in the log):
 * the session goes on with what worked; at start, the same clash fails the start.
 */
import { Effect, Result, type Scope } from "effect"
import type { Agent } from "../Agent.ts"
import * as Executor from "../Executor.ts"
import * as Model from "../Model.ts"
import { McpStartFailed } from "../SessionError.ts"
import * as Supervisor from "../Supervisor.ts"
import type * as Tool from "../Tool.ts"
import type * as ToolSource from "../ToolSource.ts"

/** The executor and the specs the model sees, and the sources' tool arrays they were built from. */
export interface ToolSet<R> {
  readonly executor: Executor.Executor<R>
  readonly specs: ReadonlyArray<Model.ToolSpec>
  readonly seen: ReadonlyArray<ReadonlyArray<Tool.Tool>>
}

/** Before any source has started: the agent's own tools, compiled once per agent. */
export const ofAgent = <R>(agent: Agent<R>, executor: Executor.Executor<R>): ToolSet<R> => ({
  executor,
  specs: agent.specs,
  seen: []
})

/** A session without MCP servers: one array for them all. */
export const none: ReadonlyArray<ToolSource.Running> = []

/**
 * Starts `sources` in parallel in the current scope; a duplicate name fails before any starts. A
 * source `inherited` names (a sub-agent's ancestors' connection of that name) is reused, not started.
 */
export const start = <R>(
  sources: ReadonlyArray<ToolSource.ToolSource<R>>,
  context: Omit<ToolSource.StartContext, "supervisor">,
  inherited?: ReadonlyMap<string, ToolSource.Running> | undefined
): Effect.Effect<ReadonlyArray<ToolSource.Running>, McpStartFailed, R | Scope.Scope> =>
  Effect.gen(function*() {
    if (sources.length === 0) return []
    const names = new Set<string>()
    for (const source of sources) {
      if (names.has(source.name)) {
        return yield* new McpStartFailed({ server: source.name, description: "two servers have this name: names must be unique" })
      }
      names.add(source.name)
    }
    if (inherited !== undefined && sources.every((source) => inherited.has(source.name))) return sources.map((source) => inherited.get(source.name)!)
    // Default options: `make` cannot refuse them.
    const supervisor = yield* Effect.orDie(Supervisor.make())
    const reused = (source: ToolSource.ToolSource<R>) => inherited?.get(source.name)
    return yield* Effect.forEach(sources, (source) => {
      const running = reused(source)
      return running === undefined ? source.start({ ...context, supervisor }) : Effect.succeed(running)
    }, { concurrency: "unbounded" })
  }).pipe(Effect.withSpan("Session.startMcpServers", { attributes: { servers: sources.map((s) => s.name).join(",") } }))

/**
 * The tools after the sources' latest changes: the same set unless one changed. Two tools with one
 * name fail with `DuplicateToolName` (at start, that fails the start).
 */
export const build = Effect.fnUntraced(function*<R>(
  agent: Agent<R>,
  current: ToolSet<R>,
  sources: ReadonlyArray<ToolSource.Running>
) {
  if (sources.length === 0) return current
  const now = yield* Effect.forEach(sources, (source) => source.tools)
  if (now.length === current.seen.length && now.every((tools, i) => tools === current.seen[i])) return current
  const tools = [...agent.tools, ...now.flat()]
  const executor = Executor.make(tools, { concurrency: agent.toolConcurrency, timeout: agent.toolTimeout })
  if (Result.isFailure(executor)) return yield* clash(agent, now, executor.failure.name)
  return { executor: executor.success, specs: tools.map(Model.toolSpec), seen: now }
})

/** The clash, naming who offers the tools of that name: the agent, or each MCP server by name. */
const clash = <R>(agent: Agent<R>, sources: ReadonlyArray<ReadonlyArray<Tool.Tool>>, name: string) => {
  const owners = [
    ...agent.tools.filter((tool) => tool.name === name).map(() => "the agent"),
    ...sources.flatMap((tools, i) => tools.filter((tool) => tool.name === name).map(() => `MCP server ${agent.mcpServers[i]?.name}`))
  ]
  return new Executor.DuplicateToolName({ name, owners: [...new Set(owners)] })
}

/**
 * Before a model request: the tools after any change, or the previous ones while the change
 * clashes (logged at every request until a source changes again).
 */
export const refresh = <R>(
  agent: Agent<R>,
  current: ToolSet<R>,
  sources: ReadonlyArray<ToolSource.Running>,
  redact: (text: string) => string
): Effect.Effect<ToolSet<R>> =>
  sources.length === 0
    ? Effect.succeed(current)
    : Effect.catch(build(agent, current, sources), (clash) => Effect.as(Effect.logWarning(redact(`MCP tools not refreshed: ${clash.message}`)), current))

/** Whether the tool `name` (the agent's, or a source's as last seen) says a call may run twice (`Tool.retrySafe`). */
export const retrySafe = <R>(agent: Agent<R>, current: ToolSet<R>, name: string): boolean =>
  agent.tools.some((tool) => tool.name === name && tool.retrySafe) || current.seen.some((tools) => tools.some((tool) => tool.name === name && tool.retrySafe))

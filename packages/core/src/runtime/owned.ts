/**
 * owned — what a session starting decides it owns, besides its conversation: which sandbox it
 * will have (built when first needed), which of its tools hand its secrets to processes (for the
 * audit), and its waiting room for approvals (made only when some call may ask).
 */
import { Context, type Layer, Option } from "effect"
import type { Agent } from "../Agent.ts"
import type * as Approval from "../Approval.ts"
import * as Sandbox from "../Sandbox.ts"
import { SandboxInitFailed } from "../SessionError.ts"
import { WaitingRoom } from "./waitingRoom.ts"
import type * as Persistence from "./persistence.ts"
import * as SandboxSlot from "./sandboxSlot.ts"
import type * as SubAgents from "./subAgents.ts"

/**
 * Which sandbox the session will have — its `sandbox` option, its agent's, a provided `Sandbox`,
 * then `DefaultSandbox` — built when first needed (a session with none does not start).
 */
export const chooseSandbox = <R, RIn>(
  agent: Agent<R>,
  option: Layer.Layer<Sandbox.Sandbox, unknown, RIn> | undefined,
  fallback: Layer.Layer<Sandbox.Sandbox, unknown> | undefined,
  context: Context.Context<R | RIn>
): SandboxSlot.Slot | SandboxInitFailed => {
  if (option !== undefined) return SandboxSlot.later(option, context)
  if (agent.sandbox !== undefined) return SandboxSlot.later(agent.sandbox, context)
  const provided = Context.getOption(context, Sandbox.Sandbox)
  if (Option.isSome(provided)) return SandboxSlot.ready(provided.value)
  if (fallback !== undefined) return SandboxSlot.later(fallback, context)
  return new SandboxInitFailed({
    agent: agent.name,
    description: "no sandbox: pass the sandbox option, give the agent one, provide a Sandbox layer, or use Condukt.layer"
  })
}

/** Which tools hand the session's secrets to processes, and the names they hand (for the audit). */
export const audited = <R>(agent: Agent<R>, secrets: Readonly<Record<string, unknown>>) => {
  const names = Object.keys(secrets)
  if (names.length === 0) return undefined
  const tools = new Set(agent.tools.flatMap((tool) => (tool.usesSecrets ? [tool.name] : [])))
  return tools.size === 0 ? undefined : { tools, secrets: names }
}


/**
 * The session's waiting calls, made only when some call may ask (it has rules, or a tool declares
 * `needsApproval`) or its snapshot left some waiting, which it lists again.
 */
export const approvalsOf = <R>(
  id: string,
  agent: Agent<R>,
  path: ReadonlyArray<string>,
  policy: Approval.Policy | undefined,
  resumed: Persistence.Resumed,
  root: SubAgents.Root | undefined
): WaitingRoom | undefined => {
  const waiting = resumed.batch?.waiting ?? []
  const asks = agent.tools.some((tool) => tool.needsApproval !== false || tool.discovered !== undefined || tool.asks) ||
    agent.mcpServers.some((server) => server.unlisted !== undefined)
  if (policy === undefined && waiting.length === 0 && !asks) return undefined
  // Its records go to the store's approval log, when the session saves to a store that keeps one; a
  // sub-agent's, under its top-level session, to that session's log, each put as it asks.
  const recorder = root === undefined
    ? { sessionId: id, agent: path.join("/"), log: resumed.persistence?.store.approvals, expiresMs: policy?.expiresMs }
    : { sessionId: root.sessionId, agent: path.join("/"), log: root.log, expiresMs: policy?.expiresMs, detached: true }
  const approvals = new WaitingRoom(recorder, policy)
  if (waiting.length > 0) approvals.restore(waiting, resumed.batch?.approvals)
  return approvals
}


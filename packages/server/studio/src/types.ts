/**
 * types — the server's JSON as the Studio page reads it, declared as plain interfaces: the page
 * imports no runtime code of the server (no effect, no @condukt/*), so its bundle stays small.
 * Each mirrors a Schema of `packages/server/src` (Api.ts, ServerStore.ts, WorkflowsApi.ts) or of
 * core (SessionEvent.ts, ApprovalRecord.ts, Usage.ts); the server is the authority on them.
 */

/** Tokens (core's `Usage`). */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens?: number
  readonly cacheWriteTokens?: number
}

/** `GET /me`: who the token names, the agents a start may give, whether workflows are served. */
export interface Me {
  readonly principal: string
  readonly agents?: ReadonlyArray<string>
  readonly workflows: boolean
}

/** A session as `GET /sessions` and `GET /sessions/{id}` show it. */
export interface SessionRow {
  /** In front of a cluster: `runner <host:port>` holding it, or `another runner`; absent: this server's process. */
  readonly runner?: string
  readonly id: string
  readonly principal: string
  readonly agent: string
  /** Epoch ms. */
  readonly createdAt: number
  /** The number of the last event written (0: none yet). */
  readonly lastEventId: number
  /** Epoch ms of the last event written, or the creation. */
  readonly lastActivity: number
  readonly usage: Usage
  readonly running: boolean
  readonly cost?: number
}

/** How a run ended (`POST /sessions/{id}/runs`). */
export interface RunOutcome {
  readonly runId: string
  readonly outcome: "completed" | "failed" | "aborted"
  readonly text: string
  readonly turns: number
  readonly error?: string
  readonly lastEventId: number
}

/** An approval record (core's `ApprovalRecord`), open or answered. */
export interface ApprovalRecord {
  readonly id: string
  readonly sessionId: string
  readonly runId?: string
  readonly agent: string
  readonly callId: string
  readonly tool: string
  readonly input: unknown
  readonly rule: string
  readonly summary?: string
  readonly details?: string
  /** Epoch ms. */
  readonly requestedAt: number
  readonly expiresAt?: number
  readonly answeredAt?: number
  readonly outcome?: "approved" | "denied" | "expired" | "aborted"
  readonly by?: string
  readonly reason?: string
  readonly shadow?: boolean
}

/** One row of `GET /usage`: an agent's name, a UTC day (`YYYY-MM-DD`) or a session id. */
export interface UsageRow {
  readonly key: string
  readonly usage: Usage
  readonly cost?: number
}

/** `GET /usage?by=…`. */
export interface UsageReport {
  readonly by: "agent" | "day" | "session"
  readonly rows: ReadonlyArray<UsageRow>
}

/** A workflow input's declaration. */
export interface WorkflowInput {
  readonly type: string
  readonly description?: string
  readonly default?: unknown
  readonly enum?: ReadonlyArray<unknown>
}

/** A served workflow (`GET /workflows`). */
export interface WorkflowView {
  readonly name: string
  readonly inputs: Readonly<Record<string, WorkflowInput>>
  readonly steps: ReadonlyArray<string>
}

/** A workflow step's state in a run. */
export interface StepView {
  readonly state: "pending" | "running" | "finished" | "skipped" | "failed"
  readonly output?: unknown
  readonly resumed?: boolean
  readonly restarted?: boolean
  readonly why?: string
  readonly error?: string
}

/** A workflow run (`GET /workflows/{name}/runs/{runId}`). */
export interface RunView {
  readonly runId: string
  readonly workflow: string
  readonly inputs: Readonly<Record<string, unknown>>
  /** Epoch ms, when the server knows it. */
  readonly startedAt?: number
  readonly outcome: "running" | "succeeded" | "failed"
  readonly steps: Readonly<Record<string, StepView>>
  readonly output?: unknown
  readonly error?: string
  readonly durable: boolean
}

/** The fields every session event carries. */
interface EventBase {
  readonly sessionId: string
  readonly runId: string
  readonly seq: number
  /** A sub-agent's event only: the agents from the top-level session's down to the one that emitted it. */
  readonly agentPath?: ReadonlyArray<string>
  /** A sub-agent's event only: the call, in the parent agent's run, that started the sub-agent. */
  readonly parentCallId?: string
}

/** A session event (core's `SessionEvent`) as the server's JSON has it. */
export type SessionEvent = EventBase & (
  | { readonly _tag: "AgentStart"; readonly prompt: string }
  | { readonly _tag: "TurnStart"; readonly turn: number }
  | { readonly _tag: "ModelRetry"; readonly attempt: number; readonly reason: string; readonly delay: unknown }
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ThinkingDelta"; readonly text: string }
  | { readonly _tag: "TurnEnd"; readonly turn: number; readonly usage: Usage }
  | { readonly _tag: "ToolCall"; readonly callId: string; readonly name: string; readonly input: unknown }
  | { readonly _tag: "ToolResult"; readonly callId: string; readonly name: string; readonly content: string; readonly isError: boolean; readonly data?: unknown }
  | { readonly _tag: "SecretsUsed"; readonly callId: string; readonly name: string; readonly secrets: ReadonlyArray<string> }
  | { readonly _tag: "ApprovalRequested"; readonly callId: string; readonly tool: string; readonly input: unknown; readonly summary?: string; readonly details?: string }
  | { readonly _tag: "ElicitationRequested"; readonly id: string; readonly server: string; readonly message: string; readonly schema: unknown }
  | { readonly _tag: "McpServerStarted"; readonly server: string; readonly transport: string; readonly tools: number }
  | { readonly _tag: "McpServerDown"; readonly server: string; readonly description: string }
  | {
    readonly _tag: "McpServerStopped"
    readonly server: string
    readonly reason?: { readonly _tag: "SupervisorGaveUp"; readonly server: string; readonly maxRestarts: number; readonly periodMs: number }
  }
  | { readonly _tag: "Compacted"; readonly before: number; readonly after: number }
  | { readonly _tag: "StillWaiting"; readonly calls: ReadonlyArray<{ readonly callId: string; readonly tool: string }>; readonly waitedMs: number }
  | { readonly _tag: "Error"; readonly message: string }
  | { readonly _tag: "AgentEnd"; readonly outcome: "completed" | "failed" | "aborted" }
)

/** An event as the events stream sends it: the event, its number in the stream (`id`) and when the server wrote it (`at`, epoch ms). */
export type StreamedEvent = SessionEvent & { readonly id: number; readonly at: number }

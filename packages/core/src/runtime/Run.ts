/**
 * Run — one queued or running run of a session, what a run's steps publish through, and what a
 * `Session.run` takes and gives back (Session re-exports `RunOptions` and `RunResult`; they live
 * here so the actor names them without importing Session back).
 *
 * A run is a plain record (its caller waits on `done`, its stream reads `sink`); the `Actor`
 * queues, serves and settles it, the `Conversation` drives it.
 */
import type { Deferred, Duration, Effect, Scope } from "effect"
import type { Agent } from "../Agent.ts"
import type * as Approval from "../Approval.ts"
import type * as ApprovalRecord from "../ApprovalRecord.ts"
import type { RunError, SessionError, StartError } from "../SessionError.ts"
import type * as SessionEvent from "../SessionEvent.ts"
import type * as EventHub from "./eventHub.ts"
import type { Message } from "../Message.ts"
import type * as Model from "../Model.ts"
import type * as Output from "../Output.ts"
import type * as Snapshot from "../Snapshot.ts"

/** One queued or running run. */
export interface Run {
  readonly id: string
  readonly prompt: string
  readonly options: RunOptions | undefined
  readonly done: Deferred.Deferred<RunResult, RunError>
  /** The run's own stream, when it was started by `stream`. */
  readonly sink: EventHub.Sink | undefined
  /** A run with no prompt that continues a batch restored from the store, once a call of it is answered. */
  readonly resume?: boolean | undefined
  /** Whether the run's tracer exports spans, read when it starts (Tracing.ts). */
  traced?: boolean | undefined
  /** Tokens the session's MCP servers sampled while it ran: they count in its result's `usage`. */
  sampled?: Model.Usage | undefined
  /** This run's batch parked waiting for approval, and an answer came: the same run goes on (no second AgentStart). */
  continues?: boolean | undefined
  /** The calls whose results this run published when its batch parked: going on, it publishes the others only. */
  shown?: Set<string> | undefined
  /** What its calls' sub-agents spent and how many run now, made by the first (runtime/subAgents.ts). */
  subAgents?: Spent | undefined
}

/** A run's tally of its sub-agents: how many run now, and what those that ended spent. */
export interface Spent {
  running: number
  usage: Model.Usage | undefined
  readonly byAgent: Record<string, Model.Usage>
  /** The sum of their costs; `undefined` once one had none (its model unpriced). */
  cost: number | undefined
  /** The sub-agents running now, whose waiting calls the session's `approve` and `deny` answer too. */
  readonly children: Set<Child>
}

/** What a sub-agent's waiting room offers its caller's session: the calls waiting, and their answers. */
export interface Waiting {
  readonly pending: ReadonlyArray<Approval.Pending>
  readonly answer: (callId: string, answer: Approval.Answer, by?: ApprovalRecord.By) => Effect.Effect<void, Approval.NotPending>
}

/** A sub-agent's session, as its caller's host drives it: its actor. */
export interface Child {
  readonly enqueue: (prompt: string, options: RunOptions | undefined, sink: EventHub.Sink | undefined) => Effect.Effect<Run, SessionError>
  readonly cancel: (run: Run) => Effect.Effect<void>
  readonly usage: Model.Usage
  readonly cost: number | undefined
  /** Its calls waiting for a person's answer, when it can have any. */
  readonly approvals: Waiting | undefined
  /** Its run running now, whose sub-agents may wait for answers too. */
  readonly current: Run | undefined
}

/** Where a run's steps publish its events: the session's actor. */
export interface Publisher {
  /**
   * Numbers and delivers one event: into `run` (waiting for a slow stream reader with `wait`), or
   * between runs (no run) to the observers, with an empty run id.
   */
  readonly publish: (run: Run | undefined, payload: SessionEvent.Payload, wait?: boolean) => Effect.Effect<void>
  /**
   * Delivers a sub-agent's event as it is (its own ids and number) into `run`'s stream and to the
   * observers, waiting for a slow stream reader with `wait`.
   */
  readonly forward: (run: Run, event: SessionEvent.SessionEvent, wait: boolean) => Effect.Effect<void>
  /** Starts a session of `agent` in `scope`, with the current context: a sub-agent's (`Session.startIn`). */
  readonly startSession: <R>(agent: Agent<R>, scope: Scope.Scope) => Effect.Effect<Child, StartError, R>
}

/** Where a session with a store saves its batch: the history, the message of its calls last, with the batch as `batchOf` gives it when the save runs. */
export interface Saver {
  readonly saveBatch: (batchOf: () => Snapshot.Batch) => Effect.Effect<void>
}

/** What continues a batch restored or parked, once a call of it is answered: the session's actor. */
export interface Resumer {
  readonly resumeBatch: Effect.Effect<void>
  /** The session has stopped, or its scope is closing: nothing waits in it any more. */
  readonly stopped: boolean
  /**
   * The session's redaction: a waiting call's arguments are shown (`pending`, ApprovalRequested)
   * redacted, as a restored one's were saved; the call runs with them as written.
   */
  readonly redact: (text: string) => string
}

/** @since 0.1.0 @category models */
export interface RunOptions {
  /** Settings for this run's model requests; each wins over the agent's setting of the same key. */
  readonly modelOptions?: Model.Options | undefined
  /** A Schema the run's answer decodes with: the result's `value` (docs/sessions.md, Typed answers). */
  readonly output?: Output.Output | undefined
  /** How many answers that do not decode are sent back to the model (default 2) before `OutputInvalid`. */
  readonly outputRetries?: number | undefined
  /**
   * How long the caller of `run` waits on calls nobody has answered before it says so: a
   * `StillWaiting` event and a warning in the log (default 30 seconds; docs/approvals.md).
   */
  readonly waitNotice?: Duration.Input | undefined
}

/**
 * What a completed run produced.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunResult {
  /** The final reply's text. */
  readonly text: string
  /** Why the model ended its final reply. */
  readonly finishReason: Model.FinishReason
  /**
   * Tokens of all the run's model requests, summed: the sum of its `TurnEnd` events' `usage`, of
   * its sub-agents' runs (`Agent.asTool`) when it had some, and what its MCP servers sampled from
   * the session's model while it ran.
   */
  readonly usage: Model.Usage
  /**
   * What `usage` cost, when the program provides `Usage.Prices` naming the session's model (and,
   * when sub-agents ran, each of theirs).
   */
  readonly cost?: number
  /**
   * When sub-agents ran: `usage` by agent, keyed by the agent path joined with `/` (`main`,
   * `main/researcher`); two calls of one sub-agent count under one key.
   */
  readonly byAgent?: Readonly<Record<string, Model.Usage>>
  /** Model requests the run made. */
  readonly turns: number
  /** What the run added to the history after the prompt: replies and tool results, in order. */
  readonly messages: ReadonlyArray<Message>
  /** The decoded answer, when the run was given an `output` Schema. */
  readonly value?: unknown
}

/** `Session.run`: with an `output` Schema, the result's `value` is typed by it. */
export interface Runs {
  <S extends Output.Output>(prompt: string, options: RunOptions & { readonly output: S }): Effect.Effect<TypedResult<S["Type"]>, RunError>
  (prompt: string, options?: RunOptions): Effect.Effect<RunResult, RunError>
}

/**
 * What a run given an `output` Schema produced: its `value` typed.
 *
 * @since 0.1.0
 * @category models
 */
export type TypedResult<A> = RunResult & { readonly value: A }

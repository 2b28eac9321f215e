/**
 * Conversation — what a session's runs work on.
 *
 * The conversation owns the session's loop state (a parked or restored batch included), assigns,
 * tools (the agent's and its MCP servers'), redaction, sandbox, store and usage; the interpreter
 * (interpreter.ts) drives a run over it. Its invariants: the loop state changes only by a run's
 * steps, by an abort's answer to pending calls, or by a compaction of an idle history no run moved
 * meanwhile; every completed turn is saved before the next step; the tool calls share one context,
 * made once with the sandbox; the redaction is fixed once the MCP servers started.
 */
import { type Context, Effect, type Redacted, type Scope } from "effect"
import type * as Agent from "../Agent.ts"
import type * as Compactor from "../Compactor.ts"
import * as History from "../History.ts"
import * as Loop from "../Loop.ts"
import type { Message } from "../Message.ts"
import * as Model from "../Model.ts"
import * as Redactor from "../Redactor.ts"
import { SessionError } from "../SessionError.ts"
import type * as Snapshot from "../Snapshot.ts"
import type * as Tool from "../Tool.ts"
import type * as ToolSource from "../ToolSource.ts"
import * as Usage from "../Usage.ts"
import type { WaitingRoom } from "./waitingRoom.ts"
import * as Persistence from "./persistence.ts"
import * as SandboxSlot from "./sandboxSlot.ts"
import * as ToolSet from "./toolSet.ts"

/** What a model reads for calls that were running when their turn was aborted. */
export const ABORTED_RESULT = "Interrupted: the user aborted the run before this call finished"

/**
 * What a run's steps give back when its batch parked to wait for approval: the run is not over,
 * and the session continues it on the first answer (`Run.continues`).
 */
export const PARKED: unique symbol = Symbol.for("@condukt/core/Session/parked")
export type Parked = typeof PARKED

/** What every tool call of a session shares. */
export type ToolContext = Omit<Tool.Context, "callId" | "assigns" | "approve">

/** The names of the session's secrets, and the tools that hand them to processes (for the audit). */
export interface Audited {
  readonly tools: ReadonlySet<string>
  readonly secrets: ReadonlyArray<string>
}

const noTokens = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } as const

/**
 * A session's conversation. Every field is set at start; what can wait (the sandbox, the tool
 * context) is made by the first run or tool call that needs it, so an idle session holds none.
 * The fields without `#` are read and written by the run's modules beside this one, and only there.
 */
export class Conversation<R> {
  readonly id: string
  readonly agent: Agent.Agent<R>
  /** The session's scope: the sandbox is built in a child of it. */
  readonly scope: Scope.Scope
  readonly model: Model.Service
  /** The agent's tools and the session's MCP servers' tools, refreshed before each request. */
  tools: ToolSet.ToolSet<R>
  sources: ReadonlyArray<ToolSource.Running> = ToolSet.none
  readonly #secrets: Readonly<Record<string, Redacted.Redacted<string>>>
  /**
   * The session's redaction: its secrets, its model's and its MCP servers' credentials, then the
   * program's `Redactor`. Set once more after the MCP servers start (their credentials join).
   */
  redact: (text: string) => string
  /**
   * The exact values among those (no patterns), for what streams in: the model's reply text is
   * redacted chunk by chunk with it, a value split across deltas replaced whole.
   */
  streamed: Redactor.Service
  /**
   * The values those exact ones are made of, by record: its secrets and model's key, its
   * ancestors' values (a sub-agent's session), its MCP servers' credentials. What a sub-agent it
   * starts inherits, to redact with its own.
   */
  known: ReadonlyArray<Readonly<Record<string, Redacted.Redacted<string>>>>
  readonly #sandbox: SandboxSlot.Slot
  /** Made by the first tool call, with the sandbox. */
  #toolContext: ToolContext | undefined = undefined
  readonly audited: Audited | undefined
  /** The run's whole state: a parked or restored batch is the loop waiting on it. */
  loop: Loop.State
  assigns: Readonly<Record<string, unknown>>
  /** Where the session saves its completed turns, when it has a store. */
  readonly persistence: Persistence.Persistence | undefined
  readonly compactor: Compactor.Service | undefined
  /** Whether the project's instructions are still to be read (by the first run, through the sandbox). */
  instructions: boolean
  /** The calls waiting for a person's answer, when the session has rules or a flagged tool. */
  readonly approvals: WaitingRoom | undefined
  /** The batch the store held at start, until the first run resolves it into the loop (journal.ts). */
  restored: Snapshot.Batch | undefined
  /** The running run's settings as its batch's saves record them (with a store). */
  options: Snapshot.RunOptions | undefined = undefined
  /**
   * Every reply's tokens since the session started, those of failed, aborted and broken-off
   * replies included: counters, added to as `Usage` parts stream in (nothing allocated per turn),
   * made by the first (an idle session holds none).
   */
  #spent: { input: number; output: number; cacheRead: number; cacheWrite: number } | undefined = undefined

  constructor(init: {
    readonly id: string
    readonly agent: Agent.Agent<R>
    readonly scope: Scope.Scope
    readonly model: Model.Service
    readonly tools: ToolSet.ToolSet<R>
    readonly secrets: Readonly<Record<string, Redacted.Redacted<string>>>
    readonly redactor: Redactor.Service
    readonly streamed: Redactor.Service
    readonly known: ReadonlyArray<Readonly<Record<string, Redacted.Redacted<string>>>>
    readonly sandbox: SandboxSlot.Slot
    readonly audited: Audited | undefined
    readonly resumed: Persistence.Resumed
    readonly compactor: Compactor.Service | undefined
    readonly instructions: boolean
    readonly approvals: WaitingRoom | undefined
  }) {
    this.id = init.id
    this.agent = init.agent
    this.scope = init.scope
    this.model = init.model
    this.tools = init.tools
    this.#secrets = init.secrets
    this.redact = init.redactor.redact
    this.streamed = init.streamed
    this.known = init.known
    this.#sandbox = init.sandbox
    this.audited = init.audited
    this.loop = init.resumed.state
    this.assigns = init.resumed.assigns
    this.persistence = init.resumed.persistence
    this.compactor = init.compactor
    this.instructions = init.instructions
    this.approvals = init.approvals
    this.restored = init.resumed.batch
  }

  /** Saves the history and assigns, with the batch `batchOf` gives when the save's turn comes (a store's). */
  commit(batchOf?: () => Snapshot.Batch): Effect.Effect<void> {
    return Effect.suspend(() =>
      Persistence.commit(this.persistence, this.loop.history, this.assigns, this.redact, batchOf === undefined ? undefined : () => this.withRun(batchOf()))
    )
  }

  /**
   * `batch` with where its run stands (the loop's progress and the run's settings) and the open
   * approval records of its calls (every save of a batch carries them, the journal's too: a store
   * keeps them with the wait), read as the save writes.
   */
  private withRun(batch: Snapshot.Batch): Snapshot.Batch {
    const run = Persistence.savedRun(this.loop, this.options)
    const approvals = batch.approvals ?? this.approvals?.records
    return {
      ...batch,
      ...(run === undefined ? {} : { run }),
      ...(approvals === undefined || approvals.length === 0 ? {} : { approvals })
    }
  }

  /** Saves the history (its last message the batch's calls) with the batch running or waiting for approval. */
  saveBatch(batchOf: () => Snapshot.Batch): Effect.Effect<void> {
    return this.commit(batchOf)
  }

  get messages(): ReadonlyArray<Message> {
    return History.toArray(this.loop.history)
  }

  get usage(): Model.Usage {
    const { cacheRead, cacheWrite, input, output } = this.#spent ?? noTokens
    return Model.addUsage(Model.emptyUsage, { inputTokens: input, outputTokens: output, cacheReadTokens: cacheRead, cacheWriteTokens: cacheWrite })
  }

  /** What the session's tokens cost, when the program's price table (in `context`) names its model. */
  costIn(context: Context.Context<never>): number | undefined {
    const price = this.priceIn(context)
    return price === undefined ? undefined : Usage.cost(this.usage, price)
  }

  /**
   * The price of the session's model in the program's table: the model's own name's, else the
   * agent's model name's (a `Model` provided in its place, `TestModel`'s `test:scripted`, is
   * priced as the model the agent names).
   */
  priceIn(context: Context.Context<never>): Usage.Price | undefined {
    return Usage.priceOf(context, this.model.name) ?? Usage.priceOf(context, this.agent.model)
  }

  /** Counts tokens in the session's usage: its own turns', and those its MCP servers sampled. */
  spend(usage: Model.Usage): void {
    const spent = this.#spent ??= { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }
    spent.input += usage.inputTokens
    spent.output += usage.outputTokens
    spent.cacheRead += usage.cacheReadTokens ?? 0
    spent.cacheWrite += usage.cacheWriteTokens ?? 0
  }

  /** What calls that finished set in the assigns, in the order they finished. */
  assign(patches: ReadonlyArray<Readonly<Record<string, unknown>>>): void {
    if (patches.length > 0) this.assigns = Object.assign({ ...this.assigns }, ...patches)
  }

  /**
   * The MCP servers started: their tools join the agent's and their own credentials (bearer
   * tokens, values given to their env) join the values the session knows, before `program`'s
   * redaction.
   */
  useSources(sources: ReadonlyArray<ToolSource.Running>, program: Redactor.Service) {
    this.sources = sources
    const credentials = sources.flatMap((source) => (source.secrets === undefined ? [] : [source.secrets]))
    if (credentials.length > 0) {
      this.known = [...this.known, ...credentials]
      this.streamed = Redactor.secrets(...this.known)
      this.redact = Redactor.compose(this.streamed, program).redact
    }
    return Effect.map(ToolSet.build(this.agent, this.tools, sources), (tools) => {
      this.tools = tools
    })
  }

  /** A run ended early: pending calls get an answer, so the history stays one a provider accepts. */
  aborted(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.loop = Loop.abort(this.loop, ABORTED_RESULT)
      // A parked or restored batch ends with its run: nothing is left waiting.
      this.restored = undefined
      const ended = this.approvals?.drop() ?? Effect.void
      // A batch saved waiting for approval ended with its run: the store must not offer it again.
      return this.persistence?.batched === true ? Effect.andThen(this.commit(), ended) : ended
    })
  }

  /** What the session's tool calls share, made once with its sandbox (built now if it is not yet). */
  toolContext(): Effect.Effect<ToolContext, SessionError> {
    if (this.#toolContext !== undefined) return Effect.succeed(this.#toolContext)
    const got = Effect.mapError(SandboxSlot.get(this.#sandbox, this.agent.name, this.scope), (reason) => new SessionError({ sessionId: this.id, reason }))
    return Effect.map(got, (sandbox) =>
      this.#toolContext = { sessionId: this.id, agent: this.agent.name, sandbox, cwd: sandbox.cwd, secrets: this.#secrets, redact: this.redact })
  }
}

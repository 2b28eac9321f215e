/**
 * Conversation — what a session's runs work on, and the interpreter that drives one run.
 *
 * The conversation owns the session's loop state, assigns, tools (the agent's and its MCP
 * servers'), redaction, sandbox and store. A run is the pure `Loop` interpreted: one action out
 * of the loop, its effect performed by the module that owns it (a model request: turn.ts; a batch
 * of calls: batch.ts; a typed answer: answer.ts; the run's end: result.ts), its outcome fed back
 * as the loop's next input, until the loop completes the run, fails it or parks it waiting for a
 * person's answer. Only `interpret` takes the next step; every step's events are published
 * through the actor as they happen. Its invariants: the loop state changes only by a run's steps,
 * by an abort's answer to pending calls, or by a compaction of an idle history no run moved
 * meanwhile; every completed turn is saved before the next step; the tool calls share one context,
 * made once with the sandbox; the redaction is fixed once the MCP servers started. Nothing here
 * decides how a run ends: it returns or fails, and the `Actor` settles it.
 */
import { type Context, Effect, type Redacted, type Scope } from "effect"
import * as Agent from "../Agent.ts"
import type * as Compactor from "../Compactor.ts"
import type * as Executor from "../Executor.ts"
import * as History from "../History.ts"
import * as Loop from "../Loop.ts"
import type { Message } from "../Message.ts"
import * as Model from "../Model.ts"
import * as ProjectInstructions from "../ProjectInstructions.ts"
import * as Redactor from "../Redactor.ts"
import { MaxTurnsExceeded, type RunError, SessionError } from "../SessionError.ts"
import type * as Snapshot from "../Snapshot.ts"
import type * as Tool from "../Tool.ts"
import type * as ToolSource from "../ToolSource.ts"
import * as Tracing from "../Tracing.ts"
import * as Usage from "../Usage.ts"
import * as Answer from "./answer.ts"
import type { Approvals } from "./approvals.ts"
import * as Batch from "./batch.ts"
import * as Journal from "./journal.ts"
import * as Persistence from "./persistence.ts"
import * as Result from "./result.ts"
import type { Publisher, Run, RunResult } from "./Run.ts"
import * as SandboxSlot from "./sandboxSlot.ts"
import * as SubAgents from "./subAgents.ts"
import * as ToolSet from "./toolSet.ts"
import * as Turn from "./turn.ts"

/** What a model reads for calls that were running when their turn was aborted. */
export const ABORTED_RESULT = "Interrupted: the user aborted the run before this call finished"

/**
 * What a run's steps give back when its batch parked to wait for approval: the run is not over,
 * and the session continues it on the first answer (`Run.continues`).
 */
export const PARKED: unique symbol = Symbol.for("@condukt/core/Session/parked")
export type Parked = typeof PARKED

/** What every tool call of a session shares. */
export type ToolContext = Omit<Tool.Context, "callId" | "assigns">

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
  readonly #scope: Scope.Scope
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
  #known: ReadonlyArray<Readonly<Record<string, Redacted.Redacted<string>>>>
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
  #instructions: boolean
  /** The calls waiting for a person's answer, when the session has rules or a flagged tool. */
  readonly approvals: Approvals | undefined
  /** The batch the store held at start, until the first run resolves it into the loop (journal.ts). */
  #restored: Snapshot.Batch | undefined
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
    readonly approvals: Approvals | undefined
  }) {
    this.id = init.id
    this.agent = init.agent
    this.#scope = init.scope
    this.model = init.model
    this.tools = init.tools
    this.#secrets = init.secrets
    this.redact = init.redactor.redact
    this.streamed = init.streamed
    this.#known = init.known
    this.#sandbox = init.sandbox
    this.audited = init.audited
    this.loop = init.resumed.state
    this.assigns = init.resumed.assigns
    this.persistence = init.resumed.persistence
    this.compactor = init.compactor
    this.#instructions = init.instructions
    this.approvals = init.approvals
    this.#restored = init.resumed.batch
  }

  /** Saves the history and assigns, with the batch `batchOf` gives when the save's turn comes (a store's). */
  commit(batchOf?: () => Snapshot.Batch): Effect.Effect<void> {
    return Effect.suspend(() => Persistence.commit(this.persistence, this.loop.history, this.assigns, this.redact, batchOf))
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
    const price = Usage.priceOf(context, this.model.name)
    return price === undefined ? undefined : Usage.cost(this.usage, price)
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
      this.#known = [...this.#known, ...credentials]
      this.streamed = Redactor.secrets(...this.#known)
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
      this.#restored = undefined
      this.approvals?.drop()
      // A batch saved waiting for approval ended with its run: the store must not offer it again.
      return this.persistence?.batched === true ? this.commit() : Effect.void
    })
  }

  /** What the session's tool calls share, made once with its sandbox (built now if it is not yet). */
  toolContext(): Effect.Effect<ToolContext, SessionError> {
    if (this.#toolContext !== undefined) return Effect.succeed(this.#toolContext)
    const got = Effect.mapError(SandboxSlot.get(this.#sandbox, this.agent.name, this.#scope), (reason) => new SessionError({ sessionId: this.id, reason }))
    return Effect.map(got, (sandbox) =>
      this.#toolContext = { sessionId: this.id, agent: this.agent.name, sandbox, cwd: sandbox.cwd, secrets: this.#secrets, redact: this.redact })
  }

  // -------------------------------------------------------------------------------------------
  // The interpreter
  // -------------------------------------------------------------------------------------------

  /**
   * A run: the loop interpreted to its end, or until its batch parks. Combinators, not a
   * generator: a run waiting on its model or its tools holds this frame all along.
   */
  drive(events: Publisher, run: Run): Effect.Effect<RunResult | Parked, RunError, R> {
    const driven = Effect.withFiber((fiber) => {
      run.traced = Tracing.isTraced(fiber)
      const started = Effect.suspend(() => {
        const first = this.first(run)
        return first === undefined ? Effect.succeed(Result.empty) : this.interpret(events, run, first)
      })
      return this.#instructions ? Effect.andThen(this.readInstructions(), started) : started
    })
    // The sub-agents its calls start work under the session and report into this run (only an
    // agent with a sub-agent tool pays for the host and the context that carries it).
    return this.agent.tools.some(isSubAgent)
      ? Effect.provideService(driven, Agent.SubAgentHost, new SubAgents.Host(this.#scope, this.agent.mcpServers, this.sources, this.#known, this.redact, events, run))
      : driven
  }

  /**
   * A run's first step: its prompt, or the batch the loop holds first (parked, or restored from
   * the store, its calls asking again), then the prompt. A run that only continues a batch
   * (`Run.resume`) with none left has nothing to do.
   */
  private first(run: Run): Loop.Step | undefined {
    const restored = this.#restored
    if (restored !== undefined) {
      // The batch the store held is resolved once: what finished keeps its result, what was cut off reads so (journal.ts).
      this.#restored = undefined
      const resolved = Journal.resolve(this.loop.pending, restored, (name) => ToolSet.retrySafe(this.agent, this.tools, name), ABORTED_RESULT)
      this.loop = Loop.restore(this.loop, [...restored.results, ...resolved.outputs], false)
    }
    if (Loop.hasBatch(this.loop)) return Loop.proceed(this.loop, run.resume === true ? undefined : run.prompt)
    return run.resume === true ? undefined : Loop.submit(this.loop, run.prompt)
  }

  /** One step of the loop: its state becomes the session's, then its action is performed and its outcome fed back. */
  private interpret(events: Publisher, run: Run, step: Loop.Step): Effect.Effect<RunResult | Parked, RunError, R> {
    this.loop = step.state
    if (step._tag === "Rejected") {
      if (step.reason === "MaxTurnsExceeded") return Effect.fail(new SessionError({ sessionId: this.id, reason: new MaxTurnsExceeded({ maxTurns: step.state.maxTurns }) }))
      return Effect.die(new Error(`Session ${this.id}: the loop rejected its own input (${step.reason})`))
    }
    const state = step.state
    const action = step.action
    switch (action._tag) {
      case "Request": {
        const tools = this.sources.length === 0
          ? Effect.void
          : Effect.map(ToolSet.refresh(this.agent, this.tools, this.sources, this.redact), (tools) => {
            this.tools = tools
          })
        return tools.pipe(
          Effect.andThen(Effect.suspend(() => Turn.request(this, events, run, action.request, action.turn))),
          Effect.flatMap((reply) => this.feed(events, run, Loop.receiveCompletion(state, reply.message, Turn.shown(this.redact), reply), true))
        )
      }
      case "RunTools": {
        const submit = Answer.submitCall(this, run, action.calls)
        if (submit !== undefined) return Effect.flatMap(Answer.submitted(this, events, run, state, action.calls, submit, run.options!.output!), (next) => this.next(events, run, next))
        // A parked run going on published its calls before it parked: it publishes all their results now, in order.
        const continued = run.continues === true && action.known !== undefined
        const ran = action.calls.length === 0
          ? Effect.succeed<Batch.Outcome>([])
          : Batch.run(this, events, run, action.calls, { known: action.known, continued })
        return Effect.flatMap(ran, (outcome) => {
          if (Batch.isParked(outcome)) return this.interpret(events, run, Loop.park(state, outcome.finished))
          const byId = new Map<string, Loop.ToolOutput & { readonly name?: string }>(state.finished.map((r) => [r.callId, r]))
          for (const result of outcome) byId.set(result.callId, result)
          const outputs = state.pending.map((call) => byId.get(call.id) ?? { callId: call.id, content: ABORTED_RESULT, isError: true })
          const results = Loop.receiveToolOutputs(state, outputs)
          return continued
            ? Effect.andThen(Batch.inOrder(state.pending, (call, i) => Batch.publishResult(events, run, { name: call.name, ...outputs[i]! } as Executor.Result)), Effect.suspend(() => this.feed(events, run, results, true)))
            : this.feed(events, run, results, true)
        })
      }
      case "Wait":
        return Effect.succeed(PARKED)
      case "Complete": {
        const output = run.options?.output
        if (output === undefined) return Result.complete(this, events, run, state, action.text, undefined)
        return Effect.flatMap(Answer.decide(this, run, state, action.text, output), (next) => this.next(events, run, next))
      }
    }
  }

  /** What a typed answer decided: the run's end, or the loop's next step. */
  private next(events: Publisher, run: Run, next: Answer.Next): Effect.Effect<RunResult | Parked, RunError, R> {
    return next._tag === "Complete" ? Result.complete(this, events, run, next.state, next.text, next.value) : this.feed(events, run, next.step, next.save)
  }

  /**
   * Feeds the loop's step on: a completed turn (a reply without calls, or every result of a
   * message's calls) is saved first, unless calls of it are still to run (their starts are
   * committed as they start). Mid-run, the model's next turn due, with an empty batch: the run is
   * in flight, and a session resumed from it goes on with it (journal.ts).
   */
  private feed(events: Publisher, run: Run, step: Loop.Step, save: boolean): Effect.Effect<RunResult | Parked, RunError, R> {
    if (!save || step.state.status === "AwaitingTools" || this.persistence === undefined) return this.interpret(events, run, step)
    this.loop = step.state
    return Effect.andThen(
      this.commit(step.state.status === "AwaitingCompletion" ? Journal.answered : undefined),
      Effect.suspend(() => this.interpret(events, run, step))
    )
  }

  /**
   * The project's instructions (AGENTS.md, CLAUDE.md, skills) join the system prompt before the
   * session's first model request. They are read through the sandbox, so the first run builds it:
   * an idle session still holds none.
   */
  private readInstructions() {
    return Effect.flatMap(this.toolContext(), ({ sandbox }) =>
      Effect.map(ProjectInstructions.load(sandbox), (project) => {
        this.#instructions = false
        if (project !== undefined) this.loop = { ...this.loop, system: ProjectInstructions.withProject(this.agent.system, project) }
      }))
  }
}

const isSubAgent = (tool: Tool.Tool<unknown>) => tool.subAgent === true

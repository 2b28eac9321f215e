/**
 * Conversation — what a session's runs work on, and the steps of one run.
 *
 * The conversation owns the session's loop state, assigns, tools (the agent's and its MCP
 * servers'), redaction, sandbox and store. Its invariants: the loop state changes only by a run's
 * steps, by an abort's answer to pending calls, or by a compaction of an idle history that no run
 * moved meanwhile; every completed turn is saved before the next step; the tool calls share one
 * context, made once with the sandbox; the redaction is fixed once the MCP servers started. A run
 * is the pure `Loop` stepped with the `Model` and the `Executor`, every step's events published
 * through the actor as they happen. Nothing here decides how a run ends: it returns or fails, and
 * the `Actor` settles it.
 */
import { type Cause, type Context, Deferred, Effect, type Redacted, Result, type Scope, Stream } from "effect"
import * as Agent from "../../Agent.ts"
import type * as Compactor from "../../Compactor.ts"
import type * as Executor from "../../Executor.ts"
import * as History from "../../History.ts"
import * as Loop from "../../Loop.ts"
import { assistant, type AssistantMessage, type Message } from "../../Message.ts"
import * as Model from "../../Model.ts"
import * as Output from "../../Output.ts"
import * as ProjectInstructions from "../../ProjectInstructions.ts"
import * as Redactor from "../../Redactor.ts"
import type * as Snapshot from "../../Snapshot.ts"
import * as Usage from "../../Usage.ts"
import * as GenAi from "../genAi.ts"
import * as TraceContent from "../../TraceContent.ts"
import * as Tracing from "../../Tracing.ts"
import type { RunResult } from "./Run.ts"
import { MaxTurnsExceeded, OutputInvalid, type RunError, SessionError } from "../../SessionError.ts"
import type * as Tool from "../../Tool.ts"
import type * as ToolSource from "../../ToolSource.ts"
import type { Approvals } from "./approvals.ts"
import * as Journal from "./journal.ts"
import * as Persistence from "./persistence.ts"
import * as SandboxSlot from "./sandboxSlot.ts"
import * as SubAgents from "./subAgents.ts"
import * as ToolSet from "./toolSet.ts"
import type { Publisher, Run } from "./Run.ts"

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

/** A run parked waiting for approval: what it had gathered, and what its continuation must still do. */
interface ParkedRun {
  /** Set by the step that ran the batch, once it parked. */
  progress: Progress | undefined
  /** The batch's finished calls' results, whole: published with the others when it goes on. */
  readonly finished: ReadonlyArray<Executor.Result>
  /** Its prompt is still to be submitted once the batch is done (it continued a restored batch first). */
  thenSubmit: boolean
}

/** What a run has gathered so far: where its messages start in the history, its tokens, its last finish. */
interface Progress {
  readonly from: number
  readonly usage: Model.Usage
  readonly finishReason: Model.FinishReason
  /** Answers sent back to the model because they did not decode (runs with an `output`). */
  readonly retries: number
}

const noTokens = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } as const

/**
 * A tool list with `submit` added, made once per list and Schema and shared by every session of
 * the agent (kept here, not per session: an idle session holds none).
 */
const submitLists = new WeakMap<ReadonlyArray<Model.ToolSpec>, { readonly output: Output.Output; readonly tools: ReadonlyArray<Model.ToolSpec> }>()

const withSubmit = (specs: ReadonlyArray<Model.ToolSpec>, output: Output.Output): ReadonlyArray<Model.ToolSpec> => {
  const made = submitLists.get(specs)
  if (made !== undefined && made.output === output) return made.tools
  const tools = [...specs, Output.submitTool(output)]
  submitLists.set(specs, { output, tools })
  return tools
}

/**
 * A session's conversation. Every field is set at start; what can wait (the sandbox, the tool
 * context) is made by the first run or tool call that needs it, so an idle session holds none.
 */
export class Conversation<R> {
  readonly id: string
  readonly agent: Agent.Agent<R>
  /** The session's scope: the sandbox is built in a child of it. */
  readonly #scope: Scope.Scope
  readonly #model: Model.Service
  /** The agent's tools and the session's MCP servers' tools, refreshed before each request. */
  #tools: ToolSet.ToolSet<R>
  /** The tool list with `submit`, for the last tool list and output Schema it was made for. */
  #sources: ReadonlyArray<ToolSource.Running> = ToolSet.none
  readonly #secrets: Readonly<Record<string, Redacted.Redacted<string>>>
  /**
   * The session's redaction: its secrets, its model's and its MCP servers' credentials, then the
   * program's `Redactor`. Set once more after the MCP servers start (their credentials join).
   */
  #redact: (text: string) => string
  /**
   * The exact values among those (no patterns), for what streams in: the model's reply text is
   * redacted chunk by chunk with it, a value split across deltas replaced whole.
   */
  #streamed: Redactor.Service
  /**
   * The values those exact ones are made of, by record: its secrets and model's key, its
   * ancestors' values (a sub-agent's session), its MCP servers' credentials. What a sub-agent it
   * starts inherits, to redact with its own.
   */
  #known: ReadonlyArray<Readonly<Record<string, Redacted.Redacted<string>>>>
  readonly #sandbox: SandboxSlot.Slot
  /** Made by the first tool call, with the sandbox. */
  #toolContext: ToolContext | undefined = undefined
  readonly #audited: Audited | undefined
  #loop: Loop.State
  #assigns: Readonly<Record<string, unknown>>
  /** Where the session saves its completed turns, when it has a store. */
  readonly #persistence: Persistence.Persistence | undefined
  readonly #compactor: Compactor.Service | undefined
  /** Whether the project's instructions are still to be read (by the first run, through the sandbox). */
  #instructions: boolean
  /** The calls waiting for a person's answer, when the session has rules or a flagged tool. */
  readonly approvals: Approvals | undefined
  /**
   * The batch the store held at start, or a parked run's, waiting for approval, until a run
   * continues it; and what the parked run had gathered, for its continuation. One field, made when
   * there is one: an idle session holds none.
   */
  #waiting: { restored: Snapshot.Batch | undefined; parked: ParkedRun | undefined } | undefined = undefined
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
    this.#model = init.model
    this.#tools = init.tools
    this.#secrets = init.secrets
    this.#redact = init.redactor.redact
    this.#streamed = init.streamed
    this.#known = init.known
    this.#sandbox = init.sandbox
    this.#audited = init.audited
    this.#loop = init.resumed.state
    this.#assigns = init.resumed.assigns
    this.#persistence = init.resumed.persistence
    this.#compactor = init.compactor
    this.#instructions = init.instructions
    this.approvals = init.approvals
    this.restored = init.resumed.batch
  }

  /** Saves the history (its last message the batch's calls) with the batch waiting for approval (a store's). */
  saveBatch(batchOf: () => Snapshot.Batch): Effect.Effect<void> {
    return Effect.suspend(() => Persistence.commit(this.#persistence, this.#loop.history, this.#assigns, this.#redact, batchOf))
  }

  private get restored(): Snapshot.Batch | undefined {
    return this.#waiting?.restored
  }

  private set restored(batch: Snapshot.Batch | undefined) {
    this.#waiting = batch === undefined && this.#waiting?.parked === undefined ? undefined : { restored: batch, parked: this.#waiting?.parked }
  }

  private get parked(): ParkedRun | undefined {
    return this.#waiting?.parked
  }

  private set parked(parked: ParkedRun | undefined) {
    this.#waiting = parked === undefined && this.#waiting?.restored === undefined ? undefined : { restored: this.#waiting?.restored, parked }
  }

  /** The session's redaction, for what leaves the runtime outside a run's steps. */
  get redact(): (text: string) => string {
    return this.#redact
  }

  get messages(): ReadonlyArray<Message> {
    return History.toArray(this.#loop.history)
  }

  get assigns(): Readonly<Record<string, unknown>> {
    return this.#assigns
  }

  get usage(): Model.Usage {
    const { cacheRead, cacheWrite, input, output } = this.#spent ?? noTokens
    return Model.addUsage(Model.emptyUsage, { inputTokens: input, outputTokens: output, cacheReadTokens: cacheRead, cacheWriteTokens: cacheWrite })
  }

  /** What the session's tokens cost, when the program's price table (in `context`) names its model. */
  costIn(context: Context.Context<never>): number | undefined {
    const price = Usage.priceOf(context, this.#model.name)
    return price === undefined ? undefined : Usage.cost(this.usage, price)
  }

  /**
   * The MCP servers started: their tools join the agent's and their own credentials (bearer
   * tokens, values given to their env) join the values the session knows, before `program`'s
   * redaction.
   */
  useSources(sources: ReadonlyArray<ToolSource.Running>, program: Redactor.Service) {
    this.#sources = sources
    const credentials = sources.flatMap((source) => (source.secrets === undefined ? [] : [source.secrets]))
    if (credentials.length > 0) {
      this.#known = [...this.#known, ...credentials]
      this.#streamed = Redactor.secrets(...this.#known)
      this.#redact = Redactor.compose(this.#streamed, program).redact
    }
    return Effect.map(ToolSet.build(this.agent, this.#tools, sources), (tools) => {
      this.#tools = tools
    })
  }

  /** A run ended early: pending calls get an answer, so the history stays one a provider accepts. */
  aborted(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.#loop = Loop.abort(this.#loop, ABORTED_RESULT)
      // A parked batch ends with its run: nothing is left waiting.
      this.restored = undefined
      this.parked = undefined
      this.approvals?.drop()
      // A batch saved waiting for approval ended with its run: the store must not offer it again.
      const persistence = this.#persistence
      return persistence?.batched === true ? Persistence.commit(persistence, this.#loop.history, this.#assigns, this.#redact) : Effect.void
    })
  }

  // -------------------------------------------------------------------------------------------
  // Compacting
  // -------------------------------------------------------------------------------------------

  /**
   * Compacts the history of an idle session (one in the middle of a run is left alone). The
   * compactor works on the history as it was when it started (a summary may take a while); the
   * result replaces it only if no run has moved it meanwhile, so a compaction never loses a
   * message. The new history is saved whole, and a Compacted event gives the sizes: into `run`
   * (the one that ended), or to observers between runs.
   */
  compact(events: Publisher, run: Run | undefined): Effect.Effect<void, Compactor.CompactorError> {
    return Effect.suspend(() => {
      const compactor = this.#compactor
      const before = this.#loop
      if (compactor === undefined || before.status !== "Idle") return Effect.void
      const messages = History.toArray(before.history)
      return Effect.flatMap(compactor.compact(messages), (compacted) => {
        if (compacted === messages || this.#loop !== before) return Effect.void
        const state = { ...before, history: History.fromIterable(compacted) }
        this.#loop = state
        return Effect.andThen(
          events.publish(run, { _tag: "Compacted", before: messages.length, after: compacted.length }, run !== undefined),
          Effect.suspend(() => Persistence.commit(this.#persistence, state.history, this.#assigns, this.#redact))
        )
      })
    })
  }

  /** After a completed run: a failure is logged and the history kept, as Condukt does. */
  private afterRun(events: Publisher, run: Run): Effect.Effect<void> {
    return Effect.catch(this.compact(events, run), (error) => Effect.logWarning(this.#redact(`Session ${this.id}: ${error.message}`)))
  }

  // -------------------------------------------------------------------------------------------
  // Driving one run
  // -------------------------------------------------------------------------------------------

  /**
   * A run: the loop driven to completion. The state is saved after every step, so an abort or a
   * failure at any point leaves a history the next run can continue from. Combinators, not a
   * generator: a run waiting on its model or its tools holds this frame all along.
   */
  drive(events: Publisher, run: Run): Effect.Effect<RunResult | Parked, RunError, R> {
    const driven = Effect.withFiber((fiber) => {
      run.traced = Tracing.isTraced(fiber)
      return this.#instructions
        ? Effect.andThen(this.readInstructions(), Effect.suspend(() => this.start(events, run)))
        : this.start(events, run)
    })
    // The sub-agents its calls start work under the session and report into this run (only an
    // agent with a sub-agent tool pays for the host and the context that carries it).
    return this.agent.tools.some(isSubAgent)
      ? Effect.provideService(driven, Agent.SubAgentHost, new SubAgents.Host(this.#scope, this.agent.mcpServers, this.#sources, this.#known, this.#redact, events, run))
      : driven
  }

  /**
   * A run's first step: its prompt, after the batch the store held, if one still waits (a run
   * queued before anyone answered continues it first, its calls asking again).
   */
  private start(events: Publisher, run: Run): Effect.Effect<RunResult | Parked, RunError, R> {
    if (run.continues === true) {
      return this.parked?.thenSubmit === true ? this.continueThenSubmit(events, run) : this.continueBatch(events, run)
    }
    if (run.resume === true) return this.continueBatch(events, run)
    if (this.restored === undefined) return this.submit(events, run)
    return this.continueThenSubmit(events, run)
  }

  /** The restored batch, then the run's prompt; a batch that parks keeps the prompt for the continuation. */
  private continueThenSubmit(events: Publisher, run: Run): Effect.Effect<RunResult | Parked, RunError, R> {
    return Effect.flatMap(this.continueBatch(events, run), (continued) => {
      if (continued !== PARKED) return this.submit(events, run)
      this.parked!.thenSubmit = true
      return Effect.succeed(PARKED)
    })
  }

  /**
   * Continues the batch the store held: the calls that were waiting run through the gate again
   * (the answered one at once, the others ask again), the finished ones keep their saved results,
   * those that had not started run, and those that were running when their process died read
   * that they were interrupted, unless their tool is `retrySafe` (internal/session/journal.ts).
   * Then the loop goes on as after any batch: the model is not asked for the turn again.
   */
  private continueBatch(events: Publisher, run: Run): Effect.Effect<RunResult | Parked, RunError, R> {
    const restored = this.restored
    const state = this.#loop
    this.restored = undefined
    if (restored === undefined) return Effect.succeed({ text: "", finishReason: "other", usage: Model.emptyUsage, turns: 0, messages: [] })
    // Every call of the message answered in the history: the model's next turn was due.
    if (state.status !== "AwaitingTools") {
      return this.advance(events, run, Loop.requestNext(state), { from: state.history.length, usage: Model.emptyUsage, finishReason: "other", retries: 0 })
    }
    // A parked run's batch goes on in the same process: its results are published here, all in
    // order, the finished calls' with the others (the run parked before publishing any).
    const parked = this.parked
    const progress = parked?.progress ?? { from: state.history.length, usage: Model.emptyUsage, finishReason: "other", retries: 0 }
    this.parked = undefined
    const resolved = Journal.resolve(state.pending, restored, (name) => ToolSet.retrySafe(this.agent, this.#tools, name), ABORTED_RESULT)
    // What will not run counts as finished: a save while the others run keeps it.
    const known = [...restored.results, ...resolved.outputs]
    const finished = new Map<string, Snapshot.Batch["results"][number]>(known.map((r) => [r.callId, r]))
    if (parked !== undefined) for (const result of parked.finished) finished.set(result.callId, result)
    const ran = resolved.run.length === 0
      ? Effect.succeed<ReadonlyArray<Executor.Result>>([])
      : this.runTools(events, run, resolved.run, { known, parked: parked !== undefined })
    return Effect.flatMap(ran, (results) => {
      if (results === PARKED) return this.park(progress)
      const ran = new Map(results.map((r) => [r.callId, r]))
      const outputs = state.pending.map((call) =>
        ran.get(call.id) ?? finished.get(call.id) ?? { callId: call.id, content: ABORTED_RESULT, isError: true }
      )
      const next = () => this.saved(events, run, Loop.receiveToolOutputs(state, outputs), progress)
      return parked === undefined
        ? next()
        : Effect.andThen(inOrder(state.pending, (call, i) => this.publishResult(events, run, { name: call.name, ...outputs[i]! })), Effect.suspend(next))
    })
  }

  private submit(events: Publisher, run: Run): Effect.Effect<RunResult | Parked, RunError, R> {
    const step = Loop.submit(this.#loop, run.prompt)
    return this.advance(events, run, step, { from: step.state.history.length, usage: Model.emptyUsage, finishReason: "other", retries: 0 })
  }

  /** One step of the loop: its state becomes the session's, then its action is taken. */
  private advance(events: Publisher, run: Run, step: Loop.Step, progress: Progress): Effect.Effect<RunResult | Parked, RunError, R> {
    this.#loop = step.state
    if (step._tag === "Rejected") {
      if (step.reason === "MaxTurnsExceeded") return Effect.fail(new SessionError({ sessionId: this.id, reason: new MaxTurnsExceeded({ maxTurns: step.state.maxTurns }) }))
      return Effect.die(new Error(`Session ${this.id}: the loop rejected its own input (${step.reason})`))
    }
    const action = step.action
    if (action._tag === "Complete") {
      const output = run.options?.output
      return output === undefined
        ? this.complete(events, run, step.state, action.text, progress, undefined)
        : this.answered(events, run, step.state, action.text, progress, output)
    }
    if (action._tag === "Request") {
      const request = this.#sources.length === 0
        ? this.requestTurn(events, run, action.request, action.turn)
        : Effect.flatMap(ToolSet.refresh(this.agent, this.#tools, this.#sources, this.#redact), (tools) => {
          this.#tools = tools
          return this.requestTurn(events, run, action.request, action.turn)
        })
      return request.pipe(
        Effect.flatMap((reply) =>
          this.saved(events, run, Loop.receiveCompletion(step.state, reply.message, this.shown()), {
            from: progress.from,
            usage: Model.addUsage(progress.usage, reply.usage),
            finishReason: reply.finishReason,
            retries: progress.retries
          })
        )
      )
    }
    const output = run.options?.output
    const submit = output === undefined || this.#model.nativeOutput === true ? undefined : action.calls.find((call) => call.name === Output.SUBMIT_TOOL)
    if (submit !== undefined) return this.submitted(events, run, step.state, action.calls, submit, progress, output!)
    return Effect.flatMap(
      this.runTools(events, run, action.calls),
      (results) => results === PARKED ? this.park(progress) : this.saved(events, run, Loop.receiveToolOutputs(step.state, results), progress)
    )
  }

  /** The run's batch parked: the batch and the run's progress wait here for the continuation. */
  private park(progress: Progress): Effect.Effect<Parked> {
    this.parked!.progress = progress
    return Effect.succeed(PARKED)
  }

  /** The run's end: its result, with the decoded answer when it was given an `output`. */
  private complete(events: Publisher, run: Run, state: Loop.State, text: string, progress: Progress, value: unknown): Effect.Effect<RunResult> {
    const history = state.history
    const messages: Array<Message> = []
    for (let i = progress.from; i < history.length; i++) messages.push(history.at(i)!)
    // The price table is the program's (read from the run's context, not kept per session).
    // What the session's MCP servers sampled while the run ran counts in it too.
    const usage = run.sampled === undefined ? progress.usage : Model.addUsage(progress.usage, run.sampled)
    return Effect.contextWith((context: Context.Context<never>) => {
      const price = Usage.priceOf(context, this.#model.name)
      const result: RunResult = {
        text,
        finishReason: progress.finishReason,
        usage,
        ...(price === undefined ? {} : { cost: Usage.cost(usage, price) }),
        turns: state.turn,
        messages,
        ...(run.options?.output === undefined ? {} : { value })
      }
      return Effect.as(this.afterRun(events, run), SubAgents.total(result, run, context, this.agent.name))
    })
  }

  /**
   * A final reply of a run that wants a typed answer: on the native path its text is the answer;
   * on the submit path a reply without a `submit` call is no answer.
   */
  private answered(events: Publisher, run: Run, state: Loop.State, text: string, progress: Progress, output: Output.Output) {
    const decoded = this.#model.nativeOutput === true ? Output.parse(output, text) : Result.fail(Output.SUBMIT_REQUIRED)
    if (Result.isSuccess(decoded)) return this.complete(events, run, state, text, progress, decoded.success)
    const retries = progress.retries
    if (retries >= (run.options?.outputRetries ?? Output.DEFAULT_MAX_RETRIES)) return this.invalid(text, decoded.failure, retries)
    const why = this.#model.nativeOutput === true ? Output.retryPrompt(decoded.failure) : decoded.failure
    return this.advance(events, run, Loop.correct(state, why), { ...progress, retries: retries + 1 })
  }

  private invalid(reply: string, error: string, retries: number) {
    return Effect.fail(new SessionError({ sessionId: this.id, reason: new OutputInvalid({ reply: this.#redact(reply), error: this.#redact(error), retries }) }))
  }

  /**
   * A reply that calls `submit` (the submit path): its other calls run, then the answer decodes.
   * A decoded answer ends the run (the call's result recorded, so the history stays one a provider
   * accepts); one that does not is the call's error result, and the model goes on.
   */
  private submitted(
    events: Publisher,
    run: Run,
    state: Loop.State,
    calls: ReadonlyArray<Executor.Call>,
    submit: Executor.Call,
    progress: Progress,
    output: Output.Output
  ): Effect.Effect<RunResult | Parked, RunError, R> {
    const others = calls.filter((call) => call !== submit)
    // The submit call is answered here, after the others: they may not park.
    const ran = others.length === 0
      ? Effect.succeed<ReadonlyArray<Loop.ToolOutput>>([])
      : Effect.map(this.runTools(events, run, others, { parks: false }), (results) => (results === PARKED ? [] : results)) // never PARKED: `parks: false`
    return Effect.flatMap(ran, (results) => {
      const decoded = Output.decode(output, submit.input)
      const content = Result.isSuccess(decoded) ? Output.SUBMITTED : Output.retryPrompt(decoded.failure)
      const isError = Result.isFailure(decoded)
      const next = Loop.receiveToolOutputs(state, [...results, { callId: submit.id, content, isError }])
      const announced = Effect.andThen(
        events.publish(run, { _tag: "ToolCall", callId: submit.id, name: submit.name, input: Redactor.redactValue(this.#redact, submit.input) }, true),
        events.publish(run, { _tag: "ToolResult", callId: submit.id, name: submit.name, content, isError }, true)
      )
      const retries = progress.retries
      if (Result.isFailure(decoded) && retries < (run.options?.outputRetries ?? Output.DEFAULT_MAX_RETRIES)) {
        return Effect.andThen(announced, this.saved(events, run, next, { ...progress, retries: retries + 1 }))
      }
      // The run ends here: the loop is idle again, at the turn of this reply.
      const idle: Loop.State = { ...next.state, status: "Idle", pending: [], turn: state.turn }
      this.#loop = idle
      const settled = Effect.andThen(
        announced,
        this.#persistence === undefined ? Effect.void : Persistence.commit(this.#persistence, idle.history, this.#assigns, this.#redact)
      )
      // Arguments that were not JSON arrive as their raw text.
      const reply = typeof submit.input === "string" ? submit.input : JSON.stringify(submit.input) ?? ""
      return Result.isSuccess(decoded)
        ? Effect.andThen(settled, this.complete(events, run, idle, reply, progress, decoded.success))
        : Effect.andThen(settled, this.invalid(reply, decoded.failure, retries))
    })
  }

  /**
   * A turn is complete (a reply without calls, or every result of its calls): it is saved before
   * the next step. Mid-run (the model's next turn due), with an empty batch: the run is in flight,
   * and a session resumed from it goes on with it (journal.ts).
   */
  private saved(events: Publisher, run: Run, step: Loop.Step, progress: Progress): Effect.Effect<RunResult | Parked, RunError, R> {
    return step.state.status === "AwaitingTools" || this.#persistence === undefined
      ? this.advance(events, run, step, progress)
      : Effect.andThen(
        Persistence.commit(
          this.#persistence,
          step.state.history,
          this.#assigns,
          this.#redact,
          step.state.status === "AwaitingCompletion" ? Journal.answered : undefined
        ),
        Effect.suspend(() => this.advance(events, run, step, progress))
      )
  }

  /** Counts tokens in the session's usage: its own turns', and those its MCP servers sampled. */
  spend(usage: Model.Usage): void {
    const spent = this.#spent ??= { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }
    spent.input += usage.inputTokens
    spent.output += usage.outputTokens
    spent.cacheRead += usage.cacheReadTokens ?? 0
    spent.cacheWrite += usage.cacheWriteTokens ?? 0
  }

  /**
   * One model request, in a `chat <model>` span when the run is traced (internal/genAi.ts); its
   * failure reaches the span redacted.
   */
  private requestTurn(events: Publisher, run: Run, request: Loop.Request, turn: number) {
    const agentOptions = this.agent.modelOptions
    const options = run.options?.modelOptions === undefined ? agentOptions : { ...agentOptions, ...run.options.modelOptions }
    const requested = this.request(events, run, request, turn, options)
    if (!run.traced) return requested
    const [name, span] = GenAi.chat(this.#model.name, this.id, options)
    const redact = this.#redact
    const failed = <E>(cause: Cause.Cause<E>) => Redactor.redactCause(redact, cause)
    return Effect.withFiber((fiber) => {
      if (!fiber.getRef(TraceContent.TraceContent)) return Tracing.within(requested, name, span, { ended: GenAi.replied, failed })
      // The program opted in: what was sent and said, redacted (internal/genAi.ts).
      const attributes = { ...span.attributes, ...GenAi.requestContent(request, redact) }
      return Tracing.within(requested, name, { ...span, attributes }, {
        ended: (reply) => ({ ...GenAi.replied(reply), ...GenAi.replyContent(reply, redact) }),
        failed
      })
    })
  }

  /** One model request: its deltas published as they stream, the reply folded into a message. */
  private request(events: Publisher, run: Run, request: Loop.Request, turn: number, options: Model.Options | undefined) {
    const self = this
    return Effect.gen(function*() {
      yield* events.publish(run, { _tag: "TurnStart", turn }, true)
      const parts: Array<Model.Part> = []
      const output = run.options?.output
      const streamed = self.#model.stream(
        output === undefined
          ? { system: request.system, messages: request.messages, tools: self.#tools.specs, options }
          : self.#model.nativeOutput === true
          ? { system: request.system, messages: request.messages, tools: self.#tools.specs, options, output: Output.spec(output) }
          : { system: request.system, messages: request.messages, tools: self.withSubmit(output), options }
      )
      yield* Stream.runForEach(self.#streamed === Redactor.none ? streamed : redactText(streamed, self.#streamed), (part) => {
        parts.push(part)
        if (part._tag === "TextDelta") return events.publish(run, { _tag: "TextDelta", text: part.text }, true)
        if (part._tag === "ThinkingDelta") return events.publish(run, { _tag: "ThinkingDelta", text: part.text }, true)
        if (part._tag === "Retry") return events.publish(run, { _tag: "ModelRetry", attempt: part.attempt, reason: part.reason, delay: part.delay }, true)
        // Counted as it arrives: a reply that breaks off midway was still paid for.
        if (part._tag === "Usage") self.spend(part)
        return Effect.void
      })
      const usage = Model.usageOf(parts)
      yield* events.publish(run, { _tag: "TurnEnd", turn, usage }, true)
      let finishReason: Model.FinishReason = "other"
      for (const part of parts) if (part._tag === "Finish") finishReason = part.reason
      return { message: Model.toMessage(parts), usage, finishReason }
    })
  }

  /**
   * How the history keeps a message of calls (Loop.receiveCompletion): their arguments redacted,
   * so the model's next requests, the run's messages and the spans never hold a value the model
   * wrote into a call (a caller's secret in a sub-agent's prompt, a key a gateway put there); the
   * tools receive them as written. Nothing to do for a session without secrets.
   */
  private shown(): ((message: AssistantMessage) => AssistantMessage) | undefined {
    const redact = this.#redact
    return redact === Redactor.none.redact ? undefined : (message) => argumentsRedacted(redact, message)
  }

  /** The session's tools and `submit` (the list is sent every turn). */
  private withSubmit(output: Output.Output): ReadonlyArray<Model.ToolSpec> {
    return withSubmit(this.#tools.specs, output)
  }

  /**
   * One message's tool calls: all announced, run by the executor, their results published in order.
   * Combinators, not a generator: this frame is held for as long as the calls run.
   */
  private runTools(
    events: Publisher,
    run: Run,
    calls: ReadonlyArray<Executor.Call>,
    options: {
      /** The results of the batch's calls that finished before (a restored or parked batch's). */
      readonly known?: Snapshot.Batch["results"] | undefined
      /** The calls of a parked run going on: announced already, their results published by the caller. */
      readonly parked?: boolean | undefined
      /** Whether the batch may park (not when the run's step goes on with the results itself: `submit`). */
      readonly parks?: boolean | undefined
    } = {}
  ): Effect.Effect<ReadonlyArray<Executor.Result> | Parked, SessionError, R> {
    const parked = options.parked === true
    const context = this.#toolContext === undefined ? this.makeToolContext() : Effect.succeed(this.#toolContext)
    const announced = parked
      ? Effect.void
      : inOrder(calls, (call) => events.publish(run, { _tag: "ToolCall", callId: call.id, name: call.name, input: Redactor.redactValue(this.#redact, call.input) }, true))
    return announced.pipe(
      Effect.andThen(this.#audited === undefined || parked ? context : Effect.andThen(Effect.suspend(() => this.audit(events, run, calls)), context)),
      Effect.flatMap((context): Effect.Effect<Executor.Outcome | Parked, never, R> => {
        // With a store, each call's start is committed before it runs (journal.ts).
        const approvals = this.approvals
        const journal = this.#persistence === undefined
          ? undefined
          : new Journal.Journal((batchOf) => this.saveBatch(batchOf), () => approvals?.waiting ?? [], options.known ?? [])
        const journaled = journal === undefined ? context : { ...context, journal }
        if (approvals === undefined) return this.#tools.executor.run(calls, journaled, this.#assigns)
        const gate = approvals.gate(events, run, calls.length, options.known, options.parks !== false, journal?.running)
        const ran = this.#tools.executor.run(calls, { ...journaled, approvals: gate }, this.#assigns)
        if (gate.parked === undefined) return ran
        // Parked: the calls' fibers end; the batch waits without them (approvals.ts).
        return Effect.raceFirst(ran, Effect.map(Deferred.await(gate.parked), (parking): Parked => {
          this.restored = parking.batch
          this.parked = { progress: undefined, finished: parking.finished, thenSubmit: false }
          if (parking.patches.length > 0) this.#assigns = Object.assign({ ...this.#assigns }, ...parking.patches)
          return PARKED
        }))
      }),
      Effect.flatMap((outcome): Effect.Effect<ReadonlyArray<Executor.Result> | Parked> => {
        if (outcome === PARKED) return Effect.succeed<Parked>(PARKED)
        this.#assigns = outcome.assigns
        return !parked ? Effect.as(inOrder(outcome.results, (r) => this.publishResult(events, run, r)), outcome.results) : Effect.succeed(outcome.results)
      })
    )
  }

  private publishResult(events: Publisher, run: Run, r: Executor.Result): Effect.Effect<void> {
    return events.publish(run, {
      _tag: "ToolResult",
      callId: r.callId,
      name: r.name,
      content: r.content,
      isError: r.isError,
      ...(r.data === undefined ? {} : { data: r.data })
    }, true)
  }

  /** The secrets each call of a tool that hands them to processes receives (names only), after the announcements. */
  private audit(events: Publisher, run: Run, calls: ReadonlyArray<Executor.Call>): Effect.Effect<void> {
    const audited = this.#audited
    if (audited === undefined) return Effect.void
    return Effect.forEach(calls, (call) =>
      audited.tools.has(call.name)
        ? events.publish(run, { _tag: "SecretsUsed", callId: call.id, name: call.name, secrets: audited.secrets }, true)
        : Effect.void, { discard: true })
  }

  /** What the session's tool calls share, made once with its sandbox (built now if it is not yet). */
  private makeToolContext(): Effect.Effect<ToolContext, SessionError> {
    const got = Effect.mapError(SandboxSlot.get(this.#sandbox, this.agent.name, this.#scope), (reason) => new SessionError({ sessionId: this.id, reason }))
    return Effect.map(got, (sandbox) =>
      this.#toolContext = {
        sessionId: this.id,
        agent: this.agent.name,
        sandbox,
        cwd: sandbox.cwd,
        secrets: this.#secrets,
        redact: this.#redact
      })
  }

  /**
   * The project's instructions (AGENTS.md, CLAUDE.md, skills) join the system prompt before the
   * session's first model request. They are read through the sandbox, so the first run builds it:
   * an idle session still holds none.
   */
  private readInstructions() {
    const self = this
    return Effect.gen(function*() {
      const { sandbox } = self.#toolContext ?? (yield* self.makeToolContext())
      const project = yield* ProjectInstructions.load(sandbox)
      self.#instructions = false
      if (project !== undefined) self.#loop = { ...self.#loop, system: ProjectInstructions.withProject(self.agent.system, project) }
    })
  }
}

const isSubAgent = (tool: Tool.Tool<unknown>) => tool.subAgent === true

/** `message` with each call's arguments redacted, string by string (keys too). */
const argumentsRedacted = (redact: (text: string) => string, message: AssistantMessage): AssistantMessage =>
  assistant(message.parts.map((part) => (part._tag === "ToolCall" ? { ...part, input: Redactor.redactValue(redact, part.input) } : part)))

/** `f` of each item in order; one item (a turn's usual one call) without a loop around it. */
const inOrder = <A>(items: ReadonlyArray<A>, f: (item: A, i: number) => Effect.Effect<void>): Effect.Effect<void> =>
  items.length === 1 ? f(items[0]!, 0) : Effect.forEach(items, f, { discard: true })

/**
 * A reply whose text deltas are redacted as they stream (a gateway can write a key into the text
 * itself): an end that could begin a secret waits for the next delta, and is let out before any
 * other part and at the end. Thinking is left as it came: a signed block must go back unchanged.
 */
const redactText = (parts: Stream.Stream<Model.Part, Model.ModelError>, redactor: Redactor.Service) =>
  Stream.suspend(() => {
    const text = Redactor.chunks(redactor)
    const held = (): Array<Model.Part> => {
      const rest = text.end()
      return rest === "" ? [] : [{ _tag: "TextDelta", text: rest }]
    }
    return Stream.concat(
      Stream.flatMap(parts, (part) => {
        if (part._tag !== "TextDelta") return Stream.fromIterable([...held(), part])
        const shown = text.next(part.text)
        return shown === "" ? Stream.empty : Stream.succeed<Model.Part>({ _tag: "TextDelta", text: shown })
      }),
      Stream.suspend(() => Stream.fromIterable(held()))
    )
  })

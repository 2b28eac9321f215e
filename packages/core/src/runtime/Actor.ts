/**
 * Actor — a session's runs from queue to settlement, its events, and its end.
 *
 * Runs wait in the mailbox and are served one at a time, each in a fiber of its own: the first
 * `enqueue` starts one, and each run's fiber, once its run is settled, starts the next, so an idle
 * session has none and no fiber serves the mailbox. Serving a run records it as running before
 * its first step (so `cancel`, `abort` and the shutdown always reach it), lets the `Conversation`
 * drive it, and settles it: its last events, then its caller's result. A defect
 * escaping a run crashes the session; the session's scope closing ends it (`end`): what is queued
 * or running fails with `SessionError` (`SessionStopped`) and every event stream ends. `Session`
 * builds the actor and its handle; the handle speaks only to the actor.
 *
 * The actor alone writes its fields. Its invariants: at most one run's fiber runs, and one does
 * while runs wait (none while a parked run holds them back); a run is running from before its
 * first step until the actor settled it, and is settled once; nothing is queued once the session
 * has stopped; events are numbered in the order they are published; at most `MAX_PENDING`
 * between-run events are kept.
 */
import { Cause, type Context, Deferred, Effect, Exit, Option, Scope } from "effect"
import type { Agent } from "../Agent.ts"
import type * as Compactor from "../Compactor.ts"
import type { Message } from "../Message.ts"
import * as Redactor from "../Redactor.ts"
import { type RunError, RunAborted, SessionError, SessionStopped, type StartError } from "../SessionError.ts"
import type * as ToolSource from "../ToolSource.ts"
import type { Usage } from "../Usage.ts"
import * as GenAi from "./genAi.ts"
import * as Tracing from "../Tracing.ts"
import * as uuid7 from "../Uuid7.ts"
import type { WaitingRoom } from "./waitingRoom.ts"
import * as Compaction from "./compaction.ts"
import { type Conversation, PARKED, type Parked } from "./Conversation.ts"
import * as EventHub from "./eventHub.ts"
import * as Interpreter from "./interpreter.ts"
import { Ending } from "./ending.ts"
import * as Idle from "./idle.ts"
import * as Persistence from "./persistence.ts"
import type { Child, Publisher, Run, RunOptions, RunResult } from "./Run.ts"
import { goesOn, interrupt, type Running } from "./running.ts"

/**
 * A session's actor. An idle one is this object, its conversation and its scope: a run's
 * fiber, the mailbox itself, the observers and the between-run events are all made
 * when first needed.
 */
export abstract class Actor<R> extends Ending implements Publisher {
  readonly #conversation: Conversation<R>
  /** The start's context: runs are served with it, whoever queued them. */
  readonly #context: Context.Context<R>
  /** Runs waiting their turn, oldest first; made by the first `enqueue`. */
  #mailbox: Array<Run> | undefined = undefined
  /**
   * A run's fiber runs or is being started (cleared when the mailbox is empty). A parked run queued
   * to go on is the mailbox's first (`continues`); a run continuing a restored batch, `resume`.
   */
  #serving = false
  /** Set before the run's fiber takes its first step, cleared once the actor has settled it. */
  #running: Running | undefined = undefined
  /**
   * The run whose batch parked waiting for approval (no fiber): its caller still waits, runs queued
   * after it still wait, and the first answer has it go on (`resumeBatch`).
   */
  #parked: Run | undefined = undefined

  constructor(conversation: Conversation<R>, scope: Scope.Closeable, parent: Scope.Scope, context: Context.Context<R>) {
    super(scope, parent)
    this.#conversation = conversation
    this.#context = context
  }

  get id(): string {
    return this.#conversation.id
  }

  get agent(): string {
    return this.#conversation.agent.name
  }

  get history(): ReadonlyArray<Message> {
    return this.#conversation.messages
  }

  get assigns(): Readonly<Record<string, unknown>> {
    return this.#conversation.assigns
  }

  get usage(): Usage {
    return this.#conversation.usage
  }

  get cost(): number | undefined {
    return this.#conversation.costIn(this.#context as Context.Context<never>)
  }

  /** The run running now, if one is (what a server's request is asked in: it ends with it). */
  get current(): Run | undefined {
    return this.#running?.run
  }

  /** Whether anyone reads the session's events now: the running run's stream, or an observer. */
  get observed(): boolean {
    return this.#running?.run.sink !== undefined || this.watched
  }

  /** The session's redaction, for what its servers ask. */
  get redact(): (text: string) => string {
    return this.#conversation.redact
  }

  /** The calls waiting for a person's answer, when the session can have any. */
  get approvals(): WaitingRoom | undefined {
    return this.#conversation.approvals
  }

  /**
   * Whether a run is in progress: running or queued, parked waiting for approval, or a batch
   * restored from the store waiting for an answer (its run starts with the first one).
   */
  private get busy(): boolean {
    return this.phase !== "stopped" && (this.#serving || this.#parked !== undefined || (this.#conversation.approvals?.waiting.length ?? 0) > 0)
  }

  /** Waits until no run is in progress (`busy`), or the session has stopped. */
  get idle(): Effect.Effect<void> {
    return Idle.wait(this, () => this.busy)
  }

  /** Completes the wait for `idle`, once nothing is in progress. */
  protected wake(): void {
    Idle.wake(this, this.busy)
  }

  /** Every run not settled yet, forgotten: the session is ending (`Ending.shutdown` settles them). */
  protected drain(): ReadonlyArray<Run> {
    const interrupted = this.#running
    this.#running = undefined
    const parked = this.#parked
    this.#parked = undefined
    const queued = this.#mailbox === undefined ? [] : this.#mailbox.splice(0)
    return [...(interrupted === undefined ? [] : [interrupted.run]), ...(parked === undefined ? [] : [parked]), ...queued]
  }

  /**
   * Publishes an MCP server's event where `ToolSource.StartContext.emit` promises: into the running
   * run; between runs to the observers at once and kept for the next run's own stream, so a reader
   * of `stream` also learns what changed before its run.
   */
  emit(raw: ToolSource.Event): Effect.Effect<void> {
    return Effect.suspend(() => {
      // A server's words (why it went down) leave the runtime here: redacted like everything else.
      const event = Redactor.redactValue(this.#conversation.redact, raw)
      if (this.#running !== undefined) return this.publish(this.#running.run, event)
      this.keep(event)
      return this.publish(undefined, event)
    })
  }

  /** Starts a sub-agent's session (Session.ts, which alone knows how to start one, implements it). */
  abstract startSession<S>(agent: Agent<S>, scope: Scope.Scope): Effect.Effect<Child, StartError, S>

  // -------------------------------------------------------------------------------------------
  // Queueing, cancelling, aborting, compacting
  // -------------------------------------------------------------------------------------------

  /**
   * Queues a run, and starts its fiber when no run's fiber runs. The check, the push and the
   * fork happen in one step: a shutdown cannot slip between them and leave the run waiting forever.
   */
  enqueue(prompt: string, options: RunOptions | undefined, sink: EventHub.Sink | undefined, resume = false): Effect.Effect<Run, SessionError> {
    const self = this
    return Effect.gen(function*() {
      if (self.phase === "stopped") return yield* new SessionError({ sessionId: self.id, reason: new SessionStopped() })
      // The prompt is an outbound message: its secrets are redacted before it is stored or sent.
      const text = self.#conversation.redact(prompt)
      // Every field set here, `traced` too: a field added later moves them all out of the object (40 bytes a run).
      const run: Run = { id: yield* uuid7.make, prompt: text, options, done: yield* Deferred.make<RunResult, RunError>(), sink, resume, traced: undefined, continues: false }
      yield* Effect.suspend(() => {
        if (self.phase === "stopped") return Deferred.fail(run.done, new SessionError({ sessionId: self.id, reason: new SessionStopped() }))
        if (self.#mailbox === undefined) self.#mailbox = [run]
        else self.#mailbox.push(run)
        if (self.#serving) return Effect.void
        self.#serving = true
        return self.serveNext()
      })
      return run
    })
  }

  /**
   * A call of a batch restored from the store was answered: a run continues the batch (once; its
   * events reach the observers, its result nobody).
   */
  get resumeBatch(): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.#parked !== undefined) return this.continueParked()
      // A running run takes the answer itself, or parks and then sees it answered.
      if (this.#running !== undefined || this.#mailbox?.some(goesOn) === true) return Effect.void
      // It asks the model with the settings the run had (Snapshot.Run), its caller gone.
      const saved = this.#conversation.restored?.run?.options
      return Effect.flatMap(Persistence.revivedOptions(saved, this.id), (options) => Effect.ignore(this.enqueue("", options, undefined, true)))
    })
  }

  /** The parked run goes on, first in the mailbox: its calls answered run, the others wait again. */
  private continueParked(): Effect.Effect<void> {
    const parked = this.#parked!
    this.#parked = undefined
    if (this.phase === "stopped") return Effect.void
    // The same record goes on: its caller, its stream, its tokens so far and its sub-agents' tally.
    parked.continues = true
    if (this.#mailbox === undefined) this.#mailbox = [parked]
    else this.#mailbox.unshift(parked)
    if (this.#serving) return Effect.void
    this.#serving = true
    return this.serveNext()
  }

  /** The parked run ends as an aborted one (its calls read the aborted-run text); queued runs then run. */
  private abortParked(): Effect.Effect<void> {
    const parked = this.#parked!
    this.#parked = undefined
    return this.settleAborted(parked)
  }

  /** The parked run was answered and queued to go on, but has not started: it ends as an aborted one. */
  private abortContinuation(): Effect.Effect<void> {
    return this.settleAborted(this.#mailbox!.shift()!)
  }

  /** Settles `run`, which has no fiber, as aborted; then serves the queued runs. */
  private settleAborted(run: Run): Effect.Effect<void> {
    return Effect.andThen(this.settle(run, Exit.interrupt()), Effect.suspend(() => {
      if (this.#serving || this.#mailbox === undefined || this.#mailbox.length === 0) return Effect.sync(() => this.wake())
      this.#serving = true
      return this.serveNext()
    }))
  }

  /**
   * The caller of a run gave up (interrupted, or its stream's reader left): abort the run if it is
   * running, drop it if it is still queued. A run already settled is left as it is.
   */
  cancel(run: Run): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.#running?.run.done === run.done) return interrupt(this.#running)
      if (this.#parked?.done === run.done) return this.abortParked()
      if (this.#mailbox?.[0]?.continues === true && this.#mailbox[0].done === run.done) return this.abortContinuation()
      // Most runs have settled when their caller leaves (a stream read to its end): no error built for them.
      if (Deferred.isDoneUnsafe(run.done)) return Effect.void
      return Effect.asVoid(Deferred.fail(run.done, new SessionError({ sessionId: this.id, reason: new RunAborted() })))
    })
  }

  /**
   * Interrupts the running run, if any; queued runs still run. A batch restored from the store
   * waiting for answers, with no run yet, ends as a parked run's would (its calls read the
   * aborted-run text, the store no longer offers it).
   */
  get abort(): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.#running !== undefined) return interrupt(this.#running)
      if (this.#parked !== undefined) return this.abortParked()
      if (this.#mailbox?.[0]?.continues === true) return this.abortContinuation()
      if (this.#serving || (this.#conversation.approvals?.waiting.length ?? 0) === 0) return Effect.void
      return Effect.andThen(this.#conversation.aborted(), Effect.sync(() => this.wake()))
    })
  }

  /** Compacts the history now, unless a run is running; a failure leaves the runtime redacted. */
  get compact(): Effect.Effect<void, Compactor.CompactorError> {
    return Effect.suspend(() =>
      this.#running === undefined
        ? Effect.mapError(Compaction.compact(this.#conversation, this, undefined), (error) => Redactor.redactValue(this.#conversation.redact, error))
        : Effect.void
    )
  }

  // -------------------------------------------------------------------------------------------
  // Serving the mailbox, settling runs
  // -------------------------------------------------------------------------------------------

  /**
   * Starts the next queued run in a fiber of its own, with the start's context; with none queued
   * (or a parked run ahead of them) the mailbox is idle. No fiber serves the mailbox: each run's
   * fiber, once the actor has settled its run, starts the next (`finished`), so a session with a
   * run in flight holds that run's fiber only. The run is recorded as running before its fiber is
   * forked: the fiber may take every step of the run before the fork hands it back (the forking
   * fiber can yield in between, under load), and still finds its run recorded when it ends
   * (`finished`); an abort in between reaches it once it is known (`interrupt`). It starts
   * uninterruptible, so even an abort before its first step reaches `finished` and the run is settled.
   */
  private serveNext(): Effect.Effect<void> {
    return Effect.suspend(() => {
      // Runs queued after a parked run wait for it to go on.
      const run = this.#parked === undefined ? this.#mailbox?.shift() : undefined
      if (run === undefined) {
        if (this.#mailbox?.length === 0) this.#mailbox = undefined
        this.#serving = false
        this.wake()
        return Effect.void
      }
      // Its caller gave up while it was queued: it never starts.
      if (Deferred.isDoneUnsafe(run.done)) return this.serveNext()
      // The fiber starts uninterruptible (below): the run's AgentStart is always published, and
      // the run's steps are its interruptible part.
      // Built when the fiber starts (a suspension): a run waiting in a tool holds its steps, not its start's.
      const served = Effect.onExit(Effect.suspend(() => Effect.andThen(this.begin(run), Effect.interruptible(this.serve(run)))), (exit) => this.finished(run, exit))
      const running: Running = { run, fiber: undefined, aborted: false }
      this.#running = running
      // Uninterruptible: the fiber is recorded whatever happens to the fiber starting it. The start's
      // context is provided around the fork: the fiber starts with it, with no frame to restore another.
      return Effect.uninterruptible(Effect.map(
        Effect.provideContext(Effect.forkIn(served, this.scope, { uninterruptible: true }), this.#context),
        (fiber) => {
          running.fiber = fiber
          if (running.aborted) fiber.interruptUnsafe()
        }
      ))
    })
  }

  /** A run's first events: its AgentStart (unless it continues a parked run), then what the MCP servers reported. */
  private begin(run: Run): Effect.Effect<void> {
    const begun = Effect.andThen(run.continues === true ? Effect.void : this.publish(run, { _tag: "AgentStart", prompt: run.prompt }), this.flushPending(run))
    // Observers are let read the run's first events before its steps take the thread.
    return this.watched ? Effect.andThen(begun, Effect.yieldNow) : begun
  }

  /** One run's steps, in its span. */
  private serve(run: Run): Effect.Effect<RunResult | Parked, RunError, R> {
    return Effect.withFiber((fiber) => {
      // Read once a run: its turns and calls make spans only when its tracer exports them.
      run.traced = Tracing.isTraced(fiber)
      const driven = this.redacted(Interpreter.drive(this.#conversation, this, run))
      if (!run.traced) return driven
      const [name, options] = GenAi.invokeAgent(this.#conversation.agent.name, this.id, run.id)
      return Tracing.within(driven, name, options, {})
    })
  }

  /**
   * The run's fiber is ending: the actor settles the run (result, loop state, last events), then
   * starts the next. When the session's scope is closing (it interrupted the fiber), the shutdown
   * settles the run instead, and nothing more is served.
   */
  private finished(run: Run, exit: Exit.Exit<RunResult | Parked, RunError>): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.scope.state._tag === "Closed" || this.#running?.run !== run) return Effect.void
      this.#running = undefined
      const settled = Exit.isSuccess(exit) && exit.value === PARKED ? this.parked(run) : this.settle(run, exit as Exit.Exit<RunResult, RunError>)
      return Effect.andThen(settled, Effect.suspend(() => (this.phase === "stopped" ? Effect.void : this.serveNext())))
    })
  }

  /** `run`'s batch parked: it waits without a fiber, unless an answer came while it parked. */
  private parked(run: Run): Effect.Effect<void> {
    this.#parked = run
    return this.#conversation.approvals?.answered === true ? this.continueParked() : Effect.void
  }

  /**
   * A run's failure leaves the runtime (its span, its Error event, its caller, the crash log) only
   * redacted: a provider's error can quote the key a gateway echoed, a tool's defect what it saw.
   */
  private redacted<A>(self: Effect.Effect<A, RunError, R>): Effect.Effect<A, RunError, R> {
    const redact = this.#conversation.redact
    return redact === Redactor.none.redact
      ? self
      : Effect.catchCause(self, (cause) => Effect.failCause(Redactor.redactCause(redact, cause)))
  }

  /**
   * Ends a run with its outcome: its last events first, then the caller's result, so a caller that
   * resumes at once and subscribes never receives the end of a run it saw finish.
   */
  private settle(run: Run, exit: Exit.Exit<RunResult, RunError>): Effect.Effect<void> {
    const self = this
    return Effect.gen(function*() {
      if (Exit.isSuccess(exit)) {
        yield* self.publish(run, { _tag: "AgentEnd", outcome: "completed" })
        return yield* Deferred.succeed(run.done, exit.value)
      }
      if (Cause.hasDies(exit.cause)) return yield* self.crash(run, exit.cause)
      yield* self.#conversation.aborted()
      const error = Cause.findErrorOption(exit.cause)
      if (Option.isSome(error)) {
        yield* self.publish(run, { _tag: "Error", message: error.value.message })
        yield* self.publish(run, { _tag: "AgentEnd", outcome: "failed" })
        return yield* Deferred.fail(run.done, error.value)
      }
      yield* self.publish(run, { _tag: "AgentEnd", outcome: "aborted" })
      yield* Deferred.fail(run.done, new SessionError({ sessionId: self.id, reason: new RunAborted() }))
    })
  }

}

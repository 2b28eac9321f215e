/**
 * Session — an agent running as a supervised actor.
 *
 * `start` builds what the session owns inside its own scope (its sandbox and model, then its MCP
 * servers, started in parallel under a supervisor of their own), then forks the actor: one fiber taking runs from a mailbox, in order. Each run is
 * recorded as running before it can take its first step, so `abort`, a caller's interruption or a
 * stream reader leaving always reach it; the run drives the pure `Loop` with the `Model` and the
 * `Executor`, and the actor alone settles it (its result, its last events). Closing the scope
 * (`stop`, interruption, the program's end) releases everything in reverse order: the running turn
 * with its tools and their processes, the MCP servers, then the sandbox. A defect escaping a run crashes the
 * session: its scope is closed with the crash, so what it owns is released at once. `abort`
 * interrupts only the running turn; the session stays usable. With a store, the session starts
 * from its snapshot and saves each completed turn; the project's instructions join the system
 * prompt at start (docs/persistence.md).
 */
import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer, Option, Queue, Ref, Scope, Stream } from "effect"
import type { Agent } from "./Agent.ts"
import * as Compactor from "./Compactor.ts"
import * as History from "./History.ts"
import { type Actor, drive, emit, flushPending, publish, type Run } from "./internal/actor.ts"
import * as Compaction from "./internal/compaction.ts"
import * as EventHub from "./internal/eventHub.ts"
import * as Persistence from "./internal/persistence.ts"
import * as ToolSet from "./internal/toolSet.ts"
import * as uuid7 from "./internal/uuid7.ts"
import * as Loop from "./Loop.ts"
import type { Message } from "./Message.ts"
import * as Model from "./Model.ts"
import * as ProjectInstructions from "./ProjectInstructions.ts"
import * as Redactor from "./Redactor.ts"
import * as Sandbox from "./Sandbox.ts"
import * as Secret from "./Secret.ts"
import * as SessionStore from "./SessionStore.ts"
import {
  type RunError,
  RunAborted,
  SandboxInitFailed,
  SessionCrashed,
  SessionStopped,
  type StartError
} from "./SessionError.ts"
import type * as SessionEvent from "./SessionEvent.ts"

export * from "./SessionError.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * How to start a session; `RIn` is what the `sandbox` layer needs, which `start` then requires
 * (`Condukt.layer` provides what `LocalSandbox.layer` needs).
 *
 * @since 0.1.0
 * @category models
 */
export interface StartOptions<RIn = never> {
  /** Defaults to a new UUIDv7. */
  readonly id?: string | undefined
  /** Wins over the agent's sandbox and any provided `Sandbox`. */
  readonly sandbox?: Layer.Layer<Sandbox.Sandbox, unknown, RIn> | undefined
  /** Seed assigns; they live as long as the session. */
  readonly assigns?: Readonly<Record<string, unknown>> | undefined
  /**
   * Secrets by environment variable name, added to the agent's (a name given here replaces the
   * agent's); resolved once, concurrently, before anything else is built.
   */
  readonly secrets?: Secret.Secrets<RIn> | undefined
  readonly maxTurns?: number | undefined
  /**
   * Where the session saves each completed turn; wins over a provided `SessionStore`. A session
   * whose id the store holds resumes from it (history and assigns; the seed assigns are ignored).
   */
  readonly store?: SessionStore.Service | undefined
  /** Run after each completed run and on `compact`; wins over a provided `Compactor`. */
  readonly compactor?: Compactor.Service | undefined
  /** `false`: the sandbox's AGENTS.md, CLAUDE.md and skills are not added to the system prompt. */
  readonly projectInstructions?: boolean | undefined
}

/** @since 0.1.0 @category models */
export interface RunOptions {
  /** Settings for this run's model requests; each wins over the agent's setting of the same key. */
  readonly modelOptions?: Model.Options | undefined
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
  /** Tokens of all the run's model requests, summed. */
  readonly usage: Model.Usage
  /** Model requests the run made. */
  readonly turns: number
  /** What the run added to the history after the prompt: replies and tool results, in order. */
  readonly messages: ReadonlyArray<Message>
}

/** A running session. */
export interface Session {
  readonly id: string
  readonly agent: string
  /** Queues a run and waits for its result; interrupting the wait aborts or drops the run. */
  readonly run: (prompt: string, options?: RunOptions) => Effect.Effect<RunResult, RunError>
  /**
   * Queues a run and streams its events, AgentStart to AgentEnd. The reader owns the run: the run
   * waits when the reader falls behind, and a reader that stops early aborts it (or drops it
   * while it is still queued).
   */
  readonly stream: (prompt: string, options?: RunOptions) => Stream.Stream<SessionEvent.SessionEvent, SessionStopped>
  /**
   * Every event of every run from now on; it ends when the session ends. A reader that falls more
   * than 1,024 events behind loses the oldest: observing never slows the session.
   */
  readonly events: Stream.Stream<SessionEvent.SessionEvent>
  readonly history: Effect.Effect<ReadonlyArray<Message>>
  readonly assigns: Effect.Effect<Readonly<Record<string, unknown>>>
  /**
   * Runs the session's compactor now, if it has one and no run is running; the new history is
   * saved to the store.
   */
  readonly compact: Effect.Effect<void, Compactor.CompactionFailed>
  /** Interrupts the running turn, its tools and their processes; queued runs still run. */
  readonly abort: Effect.Effect<void>
  /** Closes the session's scope; queued and later runs fail with `SessionStopped`. */
  readonly stop: Effect.Effect<void>
  /** Waits for the session to end: succeeds when it is stopped, fails when it crashes. */
  readonly join: Effect.Effect<void, SessionCrashed>
}

/**
 * The sandbox of a session that names none and finds no `Sandbox` provided around it.
 * `Condukt.layer` sets it to a LocalSandbox at the process's working directory.
 *
 * @since 0.1.0
 * @category services
 */
export const DefaultSandbox = Context.Reference<Layer.Layer<Sandbox.Sandbox, unknown> | undefined>(
  "@condukt/core/Session/DefaultSandbox",
  { defaultValue: () => undefined }
)

/** What a model reads for calls that were running when their turn was aborted. */
export const ABORTED_RESULT = "Interrupted: the user aborted the run before this call finished"


// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

const buildSandbox = <R, RIn>(agent: Agent<R>, options: StartOptions<RIn>, scope: Scope.Scope) =>
  Effect.gen(function*() {
    const fromLayer = <LR>(layer: Layer.Layer<Sandbox.Sandbox, unknown, LR>) =>
      Layer.buildWithScope(layer, scope).pipe(
        Effect.map(Context.get(Sandbox.Sandbox)),
        Effect.mapError((cause) =>
          new SandboxInitFailed({ agent: agent.name, description: cause instanceof Error ? cause.message : String(cause), cause })
        )
      )
    if (options.sandbox !== undefined) return yield* fromLayer(options.sandbox)
    if (agent.sandbox !== undefined) return yield* fromLayer(agent.sandbox)
    const provided = yield* Effect.serviceOption(Sandbox.Sandbox)
    if (Option.isSome(provided)) return provided.value
    const fallback = yield* DefaultSandbox
    if (fallback !== undefined) return yield* fromLayer(fallback)
    return yield* new SandboxInitFailed({
      agent: agent.name,
      description: "no sandbox: pass the sandbox option, give the agent one, provide a Sandbox layer, or use Condukt.layer"
    })
  })

/**
 * Starts a session for `agent` in the current scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = <R, RIn = never>(
  agent: Agent<R>,
  options: StartOptions<RIn> = {}
): Effect.Effect<Session, StartError, R | RIn | Scope.Scope> =>
  Effect.gen(function*() {
    const parent = yield* Scope.Scope
    const scope = yield* Scope.fork(parent)
    return yield* make(agent, options, scope, parent).pipe(Effect.onError((cause) => Scope.close(scope, Exit.failCause(cause))))
  }).pipe(Effect.withSpan("Session.start", { attributes: { agent: agent.name } }))

/** Which tools hand the session's secrets to processes, and the names they hand (for the audit). */
const audited = <R>(agent: Agent<R>, secrets: Readonly<Record<string, unknown>>) => {
  const names = Object.keys(secrets)
  const tools = new Set(agent.tools.flatMap((tool) => (tool.usesSecrets ? [tool.name] : [])))
  return names.length === 0 || tools.size === 0 ? undefined : { tools, secrets: names }
}

/** Builds what the session owns, in its scope, then forks the actor there. */
const make = Effect.fnUntraced(function*<R, RIn>(agent: Agent<R>, options: StartOptions<RIn>, scope: Scope.Closeable, parent: Scope.Scope) {
  const executor = yield* Effect.fromResult(agent.executor)
  const id = options.id ?? (yield* uuid7.make)
  // Secrets first: a start that cannot have them builds nothing.
  const secrets = yield* Secret.resolveAll<R | RIn>({ ...agent.secrets, ...options.secrets })
  const redactor = Redactor.compose(Redactor.secrets(secrets), Option.getOrElse(yield* Effect.serviceOption(Redactor.Redactor), () => Redactor.none))
  const store = options.store ?? Option.getOrUndefined(yield* Effect.serviceOption(SessionStore.SessionStore))
  const compactor = options.compactor ?? Option.getOrUndefined(yield* Effect.serviceOption(Compactor.Compactor))
  const maxTurns = options.maxTurns ?? agent.maxTurns ?? Loop.DEFAULT_MAX_TURNS
  const sandbox = yield* buildSandbox(agent, options, scope)
  const project = options.projectInstructions === false ? undefined : yield* ProjectInstructions.load(sandbox)
  // A snapshot that cannot be read stops the start here, before the model or any server exists.
  const resumed = yield* Persistence.resume({
    store,
    id,
    agent: agent.name,
    model: agent.model,
    configured: agent.system,
    system: ProjectInstructions.withProject(agent.system, project),
    maxTurns,
    assigns: options.assigns ?? {}
  })
  const providedModel = yield* Effect.serviceOption(Model.Model)
  const model = Option.isSome(providedModel) ? providedModel.value : yield* Model.resolve(agent.model)
  const actor: Actor<R> = {
    id,
    agent,
    scope,
    parent,
    model,
    tools: ToolSet.ofAgent(agent, executor),
    sources: [],
    pending: [],
    toolContext: { sessionId: id, agent: agent.name, sandbox, cwd: sandbox.cwd, secrets, redact: redactor.redact },
    audited: audited(agent, secrets),
    maxTurns,
    mailbox: yield* Queue.unbounded<Run>(),
    hub: EventHub.make(),
    loop: yield* Ref.make(resumed.state),
    assigns: yield* Ref.make<Readonly<Record<string, unknown>>>(resumed.assigns),
    persistence: resumed.persistence,
    compactor,
    ended: yield* Deferred.make<void, SessionCrashed>(),
    seq: 0,
    running: undefined,
    closing: false,
    stopped: false
  }
  // Finalizers run in reverse order: the actor fiber is interrupted, then `closing` is set, then
  // the MCP servers close (their events still reach observers), then the shutdown ends the streams.
  yield* Scope.addFinalizer(
    scope,
    Effect.suspend(() => shutdown(actor, new SessionStopped({ sessionId: id }))).pipe(
      Effect.andThen(Deferred.succeed(actor.ended, undefined))
    )
  )
  actor.sources = yield* ToolSet.start(agent.mcpServers, {
    sessionId: id,
    agent: agent.name,
    secrets,
    emit: (event) => emit(actor, event)
  }).pipe(Scope.provide(scope))
  actor.tools = yield* ToolSet.build(agent, actor.tools, actor.sources)
  yield* Scope.addFinalizer(scope, Effect.sync(() => {
    actor.closing = true
  }))
  yield* Effect.forkIn(Effect.forever(Effect.flatMap(Queue.take(actor.mailbox), (run) => serve(actor, run))), scope, {
    startImmediately: true
  })
  return handle(actor)
})

// ---------------------------------------------------------------------------------------------
// The actor: serving the mailbox, settling runs, shutting down
// ---------------------------------------------------------------------------------------------

/**
 * Serves one run. The run's fiber is forked suspended and recorded before it takes a step, so
 * whoever aborts it from then on reaches it. The actor alone settles the run (result, loop state,
 * last events); if the actor is interrupted meanwhile (the session is closing), the run goes first
 * and the shutdown settles it.
 */
const serve = <R>(actor: Actor<R>, run: Run): Effect.Effect<void, never, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      // Its caller gave up while it was queued: it never starts.
      if (yield* Deferred.isDone(run.done)) return
      yield* publish(actor, run, { _tag: "AgentStart", prompt: run.prompt })
      yield* flushPending(actor, run)
      const fiber = yield* Effect.forkChild(
        drive(actor, run).pipe(Effect.withSpan("Session.run", { attributes: { sessionId: actor.id, runId: run.id } }))
      )
      actor.running = { run, fiber }
      const exit = yield* restore(Fiber.await(fiber)).pipe(Effect.onInterrupt(() => Fiber.interrupt(fiber)))
      actor.running = undefined
      yield* settle(actor, run, exit)
    })
  )

/**
 * Ends a run with its outcome: its last events first, then the caller's result, so a caller that
 * resumes at once and subscribes never receives the end of a run it saw finish.
 */
const settle = Effect.fnUntraced(function*<R>(actor: Actor<R>, run: Run, exit: Exit.Exit<RunResult, RunError>) {
  if (Exit.isSuccess(exit)) {
    yield* publish(actor, run, { _tag: "AgentEnd", outcome: "completed" })
    return yield* Deferred.succeed(run.done, exit.value)
  }
  if (Cause.hasDies(exit.cause)) return yield* crash(actor, run, exit.cause)
  // Pending calls get an answer, so the history stays one a provider accepts.
  yield* Ref.update(actor.loop, (state) => Loop.abort(state, ABORTED_RESULT))
  const error = Cause.findErrorOption(exit.cause)
  if (Option.isSome(error)) {
    yield* publish(actor, run, { _tag: "Error", message: error.value.message })
    yield* publish(actor, run, { _tag: "AgentEnd", outcome: "failed" })
    return yield* Deferred.fail(run.done, error.value)
  }
  yield* publish(actor, run, { _tag: "AgentEnd", outcome: "aborted" })
  yield* Deferred.fail(run.done, new RunAborted({ sessionId: actor.id }))
})

/**
 * Let it crash: a defect escaped the run, so the session's state may be inconsistent. The run and
 * everything queued fail with `SessionCrashed`, `join` reports it, and the session's scope is
 * closed with the crash (from the parent scope: the actor cannot close the scope it runs in), so
 * its sandbox and processes go now, not when the caller's scope ends. Its supervisor decides what
 * comes next.
 */
const crash = Effect.fnUntraced(function*<R>(actor: Actor<R>, run: Run, cause: Cause.Cause<RunError>) {
  const crashed = new SessionCrashed({ sessionId: actor.id, cause: Cause.squash(cause) })
  yield* publish(actor, run, { _tag: "Error", message: crashed.message })
  yield* publish(actor, run, { _tag: "AgentEnd", outcome: "failed" })
  yield* Deferred.fail(run.done, crashed)
  yield* shutdown(actor, crashed)
  yield* Deferred.fail(actor.ended, crashed)
  yield* Effect.forkIn(Scope.close(actor.scope, Exit.fail(crashed)), actor.parent)
})

/**
 * Nobody waits forever: the running and queued runs of a session that ends fail with `reason`,
 * their streams get their AgentEnd (once: a run the actor has settled is no longer running), and
 * every event stream then ends.
 */
const shutdown = <R>(actor: Actor<R>, reason: SessionStopped | SessionCrashed) =>
  Effect.gen(function*() {
    actor.stopped = true
    const interrupted = actor.running
    actor.running = undefined
    const queued = yield* Queue.clear(actor.mailbox)
    for (const run of interrupted === undefined ? queued : [interrupted.run, ...queued]) {
      if (!(yield* Deferred.isDone(run.done))) {
        yield* publish(actor, run, { _tag: "AgentEnd", outcome: "aborted" })
        yield* Deferred.fail(run.done, reason)
      }
    }
    EventHub.end(actor.hub)
  }).pipe(Effect.withSpan("Session.shutdown", { attributes: { sessionId: actor.id, reason: reason._tag } }))

// ---------------------------------------------------------------------------------------------
// The handle
// ---------------------------------------------------------------------------------------------

const enqueue = <R>(actor: Actor<R>, prompt: string, options: RunOptions | undefined, sink: EventHub.Sink | undefined) =>
  Effect.gen(function*() {
    if (actor.stopped) return yield* new SessionStopped({ sessionId: actor.id })
    // The prompt is an outbound message: its secrets are redacted before it is stored or sent.
    const redacted = actor.toolContext.redact(prompt)
    const run: Run = { id: yield* uuid7.make, prompt: redacted, options, done: yield* Deferred.make<RunResult, RunError>(), sink }
    yield* Queue.offer(actor.mailbox, run)
    // A shutdown between the check above and the offer has already drained the mailbox: this run
    // would wait forever. The shutdown set `stopped` first, so looking again tells.
    if (actor.stopped) yield* Deferred.fail(run.done, new SessionStopped({ sessionId: actor.id }))
    return run
  })

/**
 * The caller of a run gave up (interrupted, or its stream's reader left): abort the run if it is
 * running, drop it if it is still queued. A run already settled is left as it is.
 */
const cancel = <R>(actor: Actor<R>, run: Run): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (actor.running?.run === run) return Fiber.interrupt(actor.running.fiber)
    return Effect.asVoid(Deferred.fail(run.done, new RunAborted({ sessionId: actor.id })))
  })

const handle = <R>(actor: Actor<R>): Session => ({
  id: actor.id,
  agent: actor.agent.name,
  run: (prompt, options) =>
    Effect.flatMap(
      enqueue(actor, prompt, options, undefined),
      (run) => Deferred.await(run.done).pipe(Effect.onInterrupt(() => cancel(actor, run)))
    ),
  stream: (prompt, options) =>
    Stream.unwrap(Effect.gen(function*() {
      const sink = yield* EventHub.makeSink
      const run = yield* enqueue(actor, prompt, options, sink)
      yield* Effect.addFinalizer(() => cancel(actor, run))
      return EventHub.read(sink)
    })),
  events: EventHub.observe(actor.hub),
  history: Effect.map(Ref.get(actor.loop), (state) => History.toArray(state.history)),
  assigns: Ref.get(actor.assigns),
  compact: Effect.suspend(() => (actor.running === undefined ? Compaction.compact(actor, Compaction.betweenRuns(actor)) : Effect.void)),
  abort: Effect.suspend(() => (actor.running === undefined ? Effect.void : Fiber.interrupt(actor.running.fiber))),
  stop: Scope.close(actor.scope, Exit.void),
  join: Deferred.await(actor.ended)
})

/**
 * Session — an agent running as a supervised actor.
 *
 * `start` decides what the session owns and records it in its own scope (its model, which sandbox
 * it will have, its snapshot when it has a store, then its MCP servers, started in parallel under
 * a supervisor of their own); what can wait is made when first needed: the sandbox by the first
 * run (which reads the project's instructions through it) or tool call, a fiber for each
 * run while it runs, the observers' buffers. Runs are served one at a time, in order. Each
 * is recorded as running before it can take its first step, so `abort`, a caller's interruption
 * or a stream reader leaving always reach it; the run drives the pure `Loop` with the `Model` and
 * the `Executor`, saves each completed turn to the store, and the actor alone settles it (its
 * result, its last events). Closing the scope (`stop`, interruption, the program's end) releases
 * everything in reverse order: the running turn with its tools and their processes, the MCP
 * servers, then the sandbox. A defect escaping a run crashes the session: its scope is closed with
 * the crash, so what it owns is released at once. `abort` interrupts only the running turn; the
 * session stays usable.
 */
import { Context, Effect, Exit, type Layer, Option, type Redacted, Result, Scope, Stream } from "effect"
import type { Agent } from "./Agent.ts"
import * as Approval from "./Approval.ts"
import type * as ApprovalRecord from "./ApprovalRecord.ts"
import * as Compactor from "./Compactor.ts"
import * as Elicitation from "./Elicitation.ts"
import { Actor } from "./runtime/Actor.ts"
import * as Conversation from "./runtime/Conversation.ts"
import { AskedHandle, Handle } from "./runtime/handle.ts"
import * as Owned from "./runtime/owned.ts"
import * as Journal from "./runtime/journal.ts"
import * as Persistence from "./runtime/persistence.ts"
import { ServerRequests } from "./runtime/serverRequests.ts"
import * as SandboxSlot from "./runtime/sandboxSlot.ts"
import * as SubAgents from "./runtime/subAgents.ts"
import * as ToolSet from "./runtime/toolSet.ts"
import type { RunOptions, RunResult, TypedResult } from "./runtime/Run.ts"
import * as uuid7 from "./Uuid7.ts"
import * as Loop from "./Loop.ts"
import type { Message } from "./Message.ts"
import type * as Output from "./Output.ts"
import * as Model from "./Model.ts"
import * as Redactor from "./Redactor.ts"
import * as Sandbox from "./Sandbox.ts"
import * as Secret from "./Secret.ts"
import * as SessionId from "./SessionId.ts"
import * as SessionStore from "./SessionStore.ts"
import { type RunError, SandboxInitFailed, SessionError, type StartError } from "./SessionError.ts"
import type { SessionStoreError } from "./SessionStoreError.ts"
import type * as SessionEvent from "./SessionEvent.ts"
import * as ToolSource from "./ToolSource.ts"
import * as Usage from "./Usage.ts"

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
  /** Defaults to a new UUIDv7; one `SessionId.check` refuses fails the start with `InvalidSessionId`. */
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
  /** Approval rules added to the agent's (its lists joined with these; this timeout wins). */
  readonly approvals?: Approval.Rules | undefined
  /**
   * Answers each of the session's own calls that asks, in-process, as `approve` / `deny` would;
   * one it cannot answer (`Unanswered`) fails the run with `SessionError` (`ApprovalUnanswered`).
   * A sub-agent's calls and an MCP server's requests still wait for `approve` / `deny`.
   */
  readonly answerer?: Approval.Answerer | undefined
  /**
   * How the session answers its MCP servers' questions (`elicitation/create`): a handler for all,
   * or (without one) an `ElicitationRequested` event each, answered with `respond`; and how long
   * one waits (docs/mcp.md, Server requests).
   */
  readonly elicitation?: Elicitation.Options | undefined
}

/** @since 0.1.0 @category models */
export type { RunOptions, RunResult, TypedResult }

/** A running session. */
export interface Session {
  readonly id: string
  readonly agent: string
  /**
   * Queues a run and waits for its result; interrupting the wait aborts or drops the run. With an
   * `output` Schema, the result's `value` is the model's answer decoded with it.
   */
  readonly run: {
    <S extends Output.Output>(prompt: string, options: RunOptions & { readonly output: S }): Effect.Effect<TypedResult<S["Type"]>, RunError>
    (prompt: string, options?: RunOptions): Effect.Effect<RunResult, RunError>
  }
  /**
   * Queues a run and streams its events, AgentStart to AgentEnd. The reader owns the run: the run
   * waits when the reader falls behind, and a reader that stops early aborts it (or drops it
   * while it is still queued).
   */
  readonly stream: (prompt: string, options?: RunOptions) => Stream.Stream<SessionEvent.SessionEvent, SessionError>
  /**
   * Every event of every run from now on; it ends when the session ends. A reader that falls more
   * than 1,024 events behind loses the oldest: observing never slows the session.
   */
  readonly events: Stream.Stream<SessionEvent.SessionEvent>
  /** `events`, observed from the moment it completes (nothing after it is missed) until its scope closes. */
  readonly subscribe: Effect.Effect<Stream.Stream<SessionEvent.SessionEvent>, never, Scope.Scope>
  readonly history: Effect.Effect<ReadonlyArray<Message>>
  readonly assigns: Effect.Effect<Readonly<Record<string, unknown>>>
  /** Every reply's tokens since the session started (failed and aborted runs included). */
  readonly usage: Effect.Effect<Usage.Usage>
  /** What `usage` cost, when the program provides `Usage.Prices` naming the session's model. */
  readonly cost: Effect.Effect<number | undefined>
  /**
   * Runs the session's compactor now, if it has one and no run is running; the new history is
   * saved to the store.
   */
  readonly compact: Effect.Effect<void, Compactor.CompactorError>
  /** Interrupts the running turn, its tools and their processes; queued runs still run. */
  readonly abort: Effect.Effect<void>
  /** Closes the session's scope; queued and later runs fail with `SessionError` (`SessionStopped`). */
  readonly stop: Effect.Effect<void>
  /** Waits for the session to end: succeeds when it is stopped, fails (`SessionCrashed`) when it crashes. */
  readonly join: Effect.Effect<void, SessionError>
  /**
   * Waits until no run is in progress: none running or queued, none parked or restored from the
   * store waiting for a person's answer; so the run a session started from the store continues
   * (ADR 0065) is waited for too. Succeeds at once when the session is idle or has stopped.
   */
  readonly idle: Effect.Effect<void>
  /** The calls waiting for a person's answer, in the order they asked (docs/approvals.md). */
  readonly pending: Effect.Effect<ReadonlyArray<Approval.Pending>>
  /**
   * Lets a waiting call run; a call not waiting (unknown, or answered) fails with `ApprovalNotPending`.
   * `by`: who answered and why, kept in the request's record (docs/approvals.md).
   */
  readonly approve: (callId: string, by?: ApprovalRecord.By) => Effect.Effect<void, Approval.NotPending>
  /** Refuses a waiting call: the model reads `Denied by the user: <reason>` as its result, and the run goes on. */
  readonly deny: (callId: string, reason?: string, by?: ApprovalRecord.By) => Effect.Effect<void, Approval.NotPending>
  /** Lets every waiting call run. */
  readonly approveAll: Effect.Effect<void>
  /**
   * Answers an MCP server's question (`ElicitationRequested`): accepted values the form does not
   * take fail with `ElicitationInvalidAnswer` (the question still waits); a question not waiting
   * fails with `ElicitationNotPending`.
   */
  readonly respond: (id: string, answer: Elicitation.Answer) => Effect.Effect<void, Elicitation.NotPending | Elicitation.InvalidAnswer>
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
export const ABORTED_RESULT = Conversation.ABORTED_RESULT

/**
 * What a model reads for a call that was running when the process holding its session died, once
 * a session resumes from the store (unless its tool is `retrySafe`: it then runs once more).
 */
export const INTERRUPTED_RESULT = Journal.INTERRUPTED_RESULT

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

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
  Effect.flatMap(Scope.Scope, (parent) => Effect.map(startIn(agent, options, parent, undefined), ([session]) => session))

/**
 * Starts a session in a scope of its own under `parent`, and hands that scope back too. `onEnd`
 * (a registry's) hears of the session's end once (when it crashes, before what it owns is
 * released). The session serves its runs with the caller's context, shared, not copied. Starting
 * has no span of its own: what does work at start (secrets, MCP servers) and every run has one,
 * and a span here would cost a program starting 100,000 idle sessions a fifth of the time.
 *
 * @internal
 */
export const startIn = <R, RIn = never>(
  agent: Agent<R>,
  options: StartOptions<RIn>,
  parent: Scope.Scope,
  onEnd: ((session: Session) => void) | undefined
): Effect.Effect<readonly [Session, Scope.Closeable], StartError, R | RIn> =>
  Effect.contextWith((context: Context.Context<R | RIn>) => {
    const scope = Scope.forkUnsafe(parent)
    return Effect.onError(make(agent, options, scope, parent, onEnd, context), (cause) => Scope.close(scope, Exit.failCause(cause)))
  })

// The closures a session keeps are made here, where they capture only what they use (made inside
// `make`, each would keep all of `make`'s variables alive as long as the session).
const endOf = <R>(actor: Actor<R>) => Effect.suspend(() => actor.end())
const noAssigns: Readonly<Record<string, unknown>> = {}

const noSecrets = Effect.succeed<Readonly<Record<string, Redacted.Redacted<string>>>>({})

/** What a session without secrets, model key or ancestors knows (one array for all). */
const nothingKnown: ReadonlyArray<never> = []

const isEmpty = (record: object) => {
  for (const _ in record) return false
  return true
}

/**
 * Decides what the session owns and records it; what can wait (the sandbox, a run's fiber,
 * the event observers) is made when first needed, in the session's scope. Written
 * without a generator: each step that needs the runtime (an id to draw, secrets to resolve, a
 * model to build, MCP servers to start) is an effect only when it has work to do.
 */
const make = <R, RIn>(
  agent: Agent<R>,
  options: StartOptions<RIn>,
  scope: Scope.Closeable,
  parent: Scope.Scope,
  onEnd: ((session: Session) => void) | undefined,
  context: Context.Context<R | RIn>
): Effect.Effect<readonly [Session, Scope.Closeable], StartError, R | RIn> => {
  // An id the one rule refuses starts nothing, with a store or without (docs/decisions/0078).
  const invalid = options.id === undefined ? undefined : SessionId.check(options.id)
  if (invalid !== undefined) return Effect.fail(new SessionError({ sessionId: options.id ?? "", reason: invalid }))
  if (Result.isFailure(agent.executor)) return Effect.fail(agent.executor.failure)
  const executor = agent.executor.success
  const policy = agent.approvals === undefined && options.approvals === undefined ? undefined : Approval.policy(agent.approvals, options.approvals)
  if (policy !== undefined && Result.isFailure(policy)) return Effect.fail(policy.failure)
  // Secrets first: a start that cannot have them builds nothing.
  const declared = options.secrets === undefined ? agent.secrets : { ...agent.secrets, ...options.secrets }
  const resolving = isEmpty(declared) ? noSecrets : Secret.resolveAll<R | RIn>(declared)
  const providedModel = Context.getOption(context, Model.Model)
  const modelOf = Option.isSome(providedModel) ? Effect.succeed(providedModel.value) : Model.resolve(agent.model)
  const withId = options.id === undefined ? uuid7.make : Effect.succeed(options.id)
  const maxTurns = options.maxTurns ?? agent.maxTurns ?? Loop.DEFAULT_MAX_TURNS
  const store = options.store ?? Option.getOrUndefined(Context.getOption(context, SessionStore.SessionStore))
  const compactor = options.compactor ?? Option.getOrUndefined(Context.getOption(context, Compactor.Compactor))
  // A snapshot that cannot be read stops the start here, before anything is built.
  const resuming = (id: string): Effect.Effect<Persistence.Resumed, SessionStoreError> =>
    store === undefined
      ? Effect.succeed({ state: Loop.make({ system: agent.system, maxTurns }), assigns: options.assigns ?? noAssigns, persistence: undefined })
      : Persistence.resume({
        store,
        id,
        agent: agent.name,
        model: agent.model,
        configured: agent.system,
        // The project's instructions join it when the first run reads them.
        system: agent.system,
        maxTurns,
        assigns: options.assigns ?? noAssigns
      })
  return Effect.flatMap(withId, (id) =>
    Effect.flatMap(resolving, (secrets) =>
      Effect.flatMap(modelOf, (model) =>
        Effect.flatMap(resuming(id), (resumed): Effect.Effect<readonly [Session, Scope.Closeable], StartError, R | RIn> => {
        const sandbox = Owned.chooseSandbox(agent, options.sandbox, Context.getUnsafe(context, DefaultSandbox), context)
        if (sandbox instanceof SandboxInitFailed) return Effect.fail(new SessionError({ sessionId: id, reason: sandbox }))
        const provided = Context.getOption(context, Redactor.Redactor)
        const program = Option.isSome(provided) ? provided.value : Redactor.none
        // The model's credentials (its API key) are secrets too: a gateway can echo one back. A
        // sub-agent's session redacts its ancestors' values as well: a caller's model can write
        // one into its prompt.
        const lineage = Option.getOrUndefined(Context.getOption(context, SubAgents.Lineage))
        const known = model.secrets === undefined && lineage === undefined && isEmpty(secrets)
          ? nothingKnown
          : [...(model.secrets === undefined ? [] : [model.secrets]), secrets, ...(lineage?.secrets ?? [])]
        const exact = Redactor.secrets(...known)
        const redactor = Redactor.compose(exact, program)
        const conversation = new Conversation.Conversation({
          id,
          agent,
          scope,
          model,
          tools: ToolSet.ofAgent(agent, executor),
          secrets,
          redactor,
          streamed: exact,
          known,
          sandbox,
          audited: Owned.audited(agent, secrets),
          resumed,
          compactor,
          instructions: options.projectInstructions !== false,
          approvals: Owned.approvalsOf(id, agent, lineage?.path ?? [agent.name], policy?.success, resumed, lineage?.root)
        })
        const actor = new SessionActor(conversation, scope, parent, context as Context.Context<R>)
        // A batch waiting for approval is saved with a store; a restored or parked one continues on
        // its first answer, which the answerer (in a fiber of the session's scope) may give.
        if (conversation.approvals !== undefined) {
          const answering = options.answerer === undefined ? undefined : { answerer: options.answerer, agent: agent.name, scope }
          conversation.approvals.useHooks(resumed.persistence === undefined ? undefined : conversation, actor, scope, answering)
        }
        // A session with MCP servers answers what they ask (approvals of sampling, questions).
        const requests = agent.mcpServers.length === 0
          ? undefined
          : new ServerRequests(id, actor, options.elicitation, policy?.success?.timeoutMs)
        const handle: Session = requests === undefined ? new Handle(actor) : new AskedHandle(actor, requests)
        const done = [handle, scope] as const
        if (onEnd !== undefined) actor.forgetWith(onEnd, handle)
        // Finalizers run in reverse order: the running run's fiber (forked later) is
        // interrupted first, then the actor learns the scope is closing, then the MCP servers
        // close (their events still reach observers), then the shutdown ends the streams.
        // Added first, run last: the store forgets the session once its last save is done.
        const release = store?.release
        const ending = Effect.andThen(release === undefined ? Effect.void : Scope.addFinalizer(scope, Effect.suspend(() => release(id))), Scope.addFinalizer(scope, endOf(actor)))
        // Calls were running when the process holding the session died: the run goes on now (ADR 0065).
        const interrupted = resumed.batch !== undefined && resumed.batch.waiting.length === 0
        // Calls restored waiting take what the store's log says of them now (answered elsewhere, expired).
        const woken = conversation.approvals === undefined ? Effect.void : conversation.approvals.wake
        const going = interrupted ? Effect.andThen(woken, actor.resumeBatch) : woken
        if (requests === undefined) return Effect.as(Effect.andThen(ending, going), done)
        return Effect.gen(function*() {
          yield* ending
          const sources = yield* ToolSet.start(agent.mcpServers, {
            sessionId: id,
            agent: agent.name,
            secrets,
            redact: redactor.redact,
            emit: (event) => actor.emit(event),
            // A server's sampled request spends the session's tokens: they count in its usage, and
            // in the run's running now.
            model: {
              name: model.name,
              stream: (request) =>
                model.stream(request).pipe(Stream.tap((part) =>
                  Effect.sync(() => {
                    if (part._tag !== "Usage") return
                    conversation.spend(part)
                    const run = actor.current
                    if (run !== undefined) run.sampled = Model.addUsage(run.sampled ?? Model.emptyUsage, part)
                  })
                ))
            },
            approve: (request) => requests.approve(request),
            elicit: (request) => requests.elicit(request),
            // Suspended: `get` looks at the slot when it is made, and the sandbox is built later.
            roots: Effect.suspend(() => SandboxSlot.get(sandbox, agent.name, scope)).pipe(
              Effect.map((built) => ToolSource.rootsOf(built)),
              Effect.orElseSucceed(() => [])
            ),
            watchRoots: (onChange) =>
              SandboxSlot.get(sandbox, agent.name, scope).pipe(
                Effect.option,
                Effect.flatMap((built) => (built._tag === "Some" ? built.value.watchHostDirectories?.(onChange) : undefined) ?? Effect.void)
              )
          }, lineage?.sources).pipe(Scope.provide(scope), Effect.mapError((reason) => new SessionError({ sessionId: id, reason: Redactor.redactValue(redactor.redact, reason) })))
          yield* conversation.useSources(sources, program)
          yield* Scope.addFinalizer(scope, Effect.sync(() => actor.markClosing()))
          yield* going
          return done
        })
      }))))
}

/**
 * A session's actor, which can start its calls' sub-agents' sessions: the one thing the actor
 * needs of this module (a prototype method, so a session holds nothing more for it).
 */
class SessionActor<R> extends Actor<R> {
  startSession<S>(agent: Agent<S>, scope: Scope.Scope): Effect.Effect<Actor<unknown>, StartError, S> {
    return Effect.map(startIn(agent, { projectInstructions: false }, scope, undefined), ([session]) => Handle.actorOf(session))
  }
}

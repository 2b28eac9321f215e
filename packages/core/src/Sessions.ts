/**
 * Sessions — a registry of named sessions.
 *
 * A session is a map entry and nothing more: it runs in a scope of its own under the registry's,
 * and leaves the map when that scope closes (stopped, crashed, or the registry closing). Only a
 * session whose restart type asks to come back (`permanent`, `transient`) gets a supervisor of its
 * own: a crash closes that session's scope and the supervisor starts it again under the same id,
 * from its store's snapshot when it has a store (every completed turn is there), else with a
 * fresh history; one that keeps crashing exhausts its own restart intensity and is dropped
 * alone. So no session, however it fails, takes the registry or another session down; a
 * `temporary` session (the default, as in Condukt) costs no supervisor and no fiber; no start
 * waits for another (the registry has no lock) and none touches the other sessions; lookups always
 * see the current incarnation.
 *
 * `ById` is the same registry spoken to by session id and agent name only (start, run, stream,
 * history, abort, stop; and the answers a session waits for: pending, approve, deny, respond), so that its sessions can live anywhere: `layerById` serves it from this
 * process's registry, and `@condukt/cluster` serves it from runners that may be other machines
 * (docs/decisions/0064). Nothing it takes or gives is a closure: agents are named, replies are data.
 */
import { Context, Effect, Exit, Fiber, Layer, Option, Schema, Scope, Stream } from "effect"
import type { Agent } from "./Agent.ts"
import type * as Approval from "./Approval.ts"
import type * as Elicitation from "./Elicitation.ts"
import * as Message from "./Message.ts"
import type * as SessionEvent from "./SessionEvent.ts"
import * as Session from "./Session.ts"
import * as SessionId from "./SessionId.ts"
import * as Supervisor from "./Supervisor.ts"
import * as uuid7 from "./Uuid7.ts"
import {
  AlreadyStarted,
  ApprovalNotPending,
  ElicitationInvalidAnswer,
  ElicitationNotPending,
  Failed,
  NotFound,
  SessionsError,
  UnknownAgent
} from "./SessionsError.ts"

export * from "./SessionsError.ts"

/** @since 0.1.0 @category models */
export interface StartOptions extends Session.StartOptions {
  /** Default `temporary`: a crashed session stays down. */
  readonly restart?: Supervisor.Restart | undefined
}

/**
 * The restart intensity each restartable session's own supervisor allows (the strategy is always
 * one for one, and a session not restarted ends its supervisor, so neither is an option).
 *
 * @since 0.1.0
 * @category models
 */
export type Options = Pick<Supervisor.Options, "maxRestarts" | "period">

/** Why a session could not be started in the registry. */
export type StartError =
  | Session.StartError
  | Supervisor.SupervisorError

/** @since 0.1.0 @category models */
export interface Service {
  readonly start: <R>(agent: Agent<R>, options?: StartOptions) => Effect.Effect<Session.Session, StartError, R>
  readonly whereis: (id: string) => Effect.Effect<Option.Option<Session.Session>>
  readonly list: Effect.Effect<ReadonlyArray<string>>
  readonly count: Effect.Effect<number>
  /** Stops the session and forgets it; unknown ids are ignored. */
  readonly stop: (id: string) => Effect.Effect<void>
}

/**
 * The registry service.
 *
 * @since 0.1.0
 * @category services
 */
export class Sessions extends Context.Service<Sessions, Service>()("@condukt/core/Sessions") {}

/**
 * A registry in the current scope; closing the scope stops every session it holds, the latest
 * started first.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service, Supervisor.SupervisorError, Scope.Scope> =>
  Effect.gen(function*() {
    const intensity = { maxRestarts: options.maxRestarts, period: options.period, strategy: "one_for_one" as const }
    // Checked once, here: every restartable session's supervisor is made with these options.
    yield* Effect.scoped(Supervisor.make(intensity))
    const scope = yield* Scope.Scope
    // Sessions hang from this inner scope, closed in reverse start order after `closed` is set.
    const lives = yield* Scope.fork(scope, "sequential")
    /** The current incarnation of every session, by id. */
    const registry = new Map<string, Session.Session>()
    /** Ids being started, so that two starts of one id cannot both succeed. */
    const starting = new Set<string>()
    /** The scope of each restartable session's supervisor: stopping the session closes it. */
    const supervised = new Map<string, Scope.Closeable>()
    let closed = false
    yield* Scope.addFinalizer(scope, Effect.sync(() => {
      closed = true
    }))

    // Only forget the incarnation that is ending, never its successor.
    const forget = (session: Session.Session) => {
      if (registry.get(session.id) === session) registry.delete(session.id)
    }

    /**
     * A restartable session under a supervisor of its own, in a scope of its own. The supervisor
     * ends with the session: on its restart intensity, or (auto shutdown) when a session that is
     * not restarted ends; a watcher then closes that scope and frees the id.
     */
    const startSupervised = <R>(agent: Agent<R>, startOptions: StartOptions, id: string, restart: Supervisor.Restart) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const own = Scope.forkUnsafe(lives, "sequential")
          const started = yield* Effect.exit(restore(Effect.gen(function*() {
            // The options were checked when the registry was made: this cannot fail.
            const supervisor = yield* Effect.orDie(Supervisor.make({ ...intensity, autoShutdown: "any_significant" }))
            yield* supervisor.startChild<Session.Session, Session.StartError, R>({
              id,
              restart,
              significant: restart !== "permanent",
              start: Effect.flatMap(Scope.Scope, (parent) =>
                Effect.map(Session.startIn(agent, startOptions, parent, forget), ([session]) => {
                  registry.set(id, session)
                  return session
                })),
              run: (session) => session.join
            })
            return supervisor
          }).pipe(Scope.provide(own))))
          if (Exit.isFailure(started)) {
            yield* Scope.close(own, started)
            return yield* started
          }
          supervised.set(id, own)
          const forgetOwn = Effect.sync(() => {
            if (supervised.get(id) === own) supervised.delete(id)
          })
          // The watcher closes the scope when the supervisor ends; a scope closed from outside
          // (stop, the registry closing) interrupts the watcher instead, unless it is the closer.
          let watching = true
          const watcher = yield* Effect.forkIn(
            Effect.andThen(Effect.exit(started.value.join), Effect.suspend(() => {
              watching = false
              return Scope.close(own, Exit.void)
            })),
            lives
          )
          yield* Scope.addFinalizer(own, Effect.andThen(Effect.suspend(() => (watching ? Fiber.interrupt(watcher) : Effect.void)), forgetOwn))
        })
      )

    const startAs = <R>(agent: Agent<R>, startOptions: StartOptions, id: string): Effect.Effect<Session.Session, StartError, R> =>
      Effect.suspend(() => {
        if (closed) return Effect.fail(new Supervisor.SupervisorError({ reason: new Supervisor.SupervisorStopped({ childId: id, ending: "Closed" }) }))
        if (registry.has(id) || starting.has(id) || supervised.has(id)) {
          return Effect.fail(new Supervisor.SupervisorError({ reason: new Supervisor.DuplicateChild({ id }) }))
        }
        const restart = startOptions.restart ?? "temporary"
        starting.add(id)
        const starts = restart === "temporary"
          ? Effect.map(Session.startIn(agent, startOptions, lives, forget), ([session]) => session)
          : Effect.map(startSupervised(agent, startOptions, id, restart), () => registry.get(id)!)
        return Effect.onExit(starts, (exit) => {
          starting.delete(id)
          if (exit._tag === "Success") registry.set(id, exit.value)
          return Effect.void
        })
      })

    return Sessions.of({
      start: <R>(agent: Agent<R>, startOptions: StartOptions = {}) =>
        startOptions.id === undefined
          ? Effect.flatMap(uuid7.make, (id) => startAs(agent, { ...startOptions, id }, id))
          : startAs(agent, startOptions, startOptions.id),
      whereis: (id) => Effect.sync(() => Option.fromNullishOr(registry.get(id))),
      list: Effect.sync(() => [...registry.keys()]),
      count: Effect.sync(() => registry.size),
      stop: (id) =>
        Effect.suspend(() => {
          const own = supervised.get(id)
          if (own !== undefined) return Scope.close(own, Exit.void)
          const session = registry.get(id)
          return session === undefined ? Effect.void : session.stop
        })
    })
  })

/**
 * A registry whose sessions live as long as the layer (default restart intensity: `make()` cannot
 * fail on it).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Sessions> = Layer.effect(Sessions, Effect.orDie(make()))

// ---------------------------------------------------------------------------------------------
// By id: the registry where sessions may live in another process
// ---------------------------------------------------------------------------------------------

/**
 * What a completed run gives a by-id caller: `Session.RunResult`'s data.
 *
 * @since 0.1.0
 * @category models
 */
export const RunReply = Schema.Struct({
  /** The final reply's text. */
  text: Schema.String,
  /** Model requests the run made. */
  turns: Schema.Int,
  /** What the run added to the history after the prompt. */
  messages: Schema.Array(Message.Message)
})
/** @since 0.1.0 @category models */
export type RunReply = typeof RunReply.Type

/**
 * A call waiting for a person's answer, as by-id `pending` lists it (`Approval.Pending` as data).
 *
 * @since 0.1.0
 * @category models
 */
export const Pending = Schema.Struct({ callId: Schema.String, tool: Schema.String, input: Schema.Unknown })
/** @since 0.1.0 @category models */
export type Pending = typeof Pending.Type

/**
 * An answer to an MCP server's question, as by-id `respond` takes it (`Elicitation.Answer` as data).
 *
 * @since 0.1.0
 * @category models
 */
export const ElicitationAnswer = Schema.Union([
  Schema.Struct({
    action: Schema.Literal("accept"),
    content: Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Number, Schema.Boolean, Schema.Array(Schema.String)]))
  }),
  Schema.Struct({ action: Schema.Literal("decline") }),
  Schema.Struct({ action: Schema.Literal("cancel") })
])

/** @since 0.1.0 @category models */
export interface ByIdService {
  /** Starts a session of the agent named `agent` (resumed from the store when it holds the id); its id. */
  readonly start: (agent: string, options?: { readonly id?: string | undefined }) => Effect.Effect<string, SessionsError>
  /** Runs `prompt` in the session and waits for its reply. */
  readonly run: (id: string, prompt: string) => Effect.Effect<RunReply, SessionsError>
  /** Runs `prompt` in the session and streams its events, AgentStart to AgentEnd, in order. */
  readonly stream: (id: string, prompt: string) => Stream.Stream<SessionEvent.SessionEvent, SessionsError>
  /** The session's history. */
  readonly history: (id: string) => Effect.Effect<ReadonlyArray<Message.Message>, SessionsError>
  /** Interrupts the session's running turn; queued runs still run. */
  readonly abort: (id: string) => Effect.Effect<void, SessionsError>
  /** Stops the session; what its store holds stays, and a new start resumes it. Unknown ids are ignored. */
  readonly stop: (id: string) => Effect.Effect<void, SessionsError>
  /** The session's calls waiting for a person's answer, in the order they asked (`ApprovalRequested`). */
  readonly pending: (id: string) => Effect.Effect<ReadonlyArray<Pending>, SessionsError>
  /** Lets a waiting call run; a call not waiting fails `ApprovalNotPending`. */
  readonly approve: (id: string, callId: string) => Effect.Effect<void, SessionsError>
  /** Refuses a waiting call: the model reads `Denied by the user: <reason>`; a call not waiting fails `ApprovalNotPending`. */
  readonly deny: (id: string, callId: string, reason?: string) => Effect.Effect<void, SessionsError>
  /**
   * Answers an MCP server's question (`ElicitationRequested`, its `id`): a question not waiting
   * fails `ElicitationNotPending`; accepted values its form does not take, `ElicitationInvalidAnswer`.
   */
  readonly respond: (id: string, requestId: string, answer: Elicitation.Answer) => Effect.Effect<void, SessionsError>
}

/**
 * The registry by session id, wherever its sessions run.
 *
 * @since 0.1.0
 * @category services
 */
export class ById extends Context.Service<ById, ByIdService>()("@condukt/core/Sessions/ById") {}

/**
 * Agents by the name a start gives: what a process serving sessions by id can run.
 *
 * @since 0.1.0
 * @category models
 */
export type Agents<R = never> = Readonly<Record<string, Agent<R>>>

/**
 * A session's error as by-id data: `Failed` with what happened (a `SessionError` of that session
 * without its id, which the by-id error gives already).
 *
 * @since 0.1.0
 * @category constructors
 */
export const failed = (sessionId: string, error: { readonly message: string }): SessionsError =>
  new SessionsError({
    sessionId,
    reason: new Failed({ description: error instanceof Session.SessionError && error.sessionId === sessionId ? error.description : error.message })
  })

const failedWith = (sessionId: string) => (error: { readonly message: string }) => failed(sessionId, error)

/**
 * A session's refusal of an answer (`approve`, `deny`, `respond`) as by-id data.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unanswered = (sessionId: string) => (error: Approval.NotPending | Elicitation.NotPending | Elicitation.InvalidAnswer): SessionsError =>
  new SessionsError({
    sessionId,
    reason: error._tag === "ApprovalNotPending"
      ? new ApprovalNotPending(error.stopped === true ? { callId: error.callId, stopped: true } : { callId: error.callId })
      : error._tag === "ElicitationNotPending"
      ? new ElicitationNotPending(error.stopped === true ? { id: error.id, stopped: true } : { id: error.id })
      : new ElicitationInvalidAnswer({ id: error.id, description: error.description })
  })

/**
 * What a completed run gives a by-id caller.
 *
 * @since 0.1.0
 * @category constructors
 */
export const replyOf = (result: Session.RunResult): RunReply => ({ text: result.text, turns: result.turns, messages: result.messages })

/**
 * `service` with every call's session id held to the one rule first (`SessionId.check`): an id it
 * refuses fails `InvalidSessionId` and reaches nothing, not the registry, not a cluster's storage
 * (where a NUL ends SQL TEXT, and `alice\0x` would be alice). Every `ById` is made with it.
 *
 * @since 0.1.0
 * @category combinators
 */
export const checkingIds = (service: ByIdService): ByIdService => {
  const valid = <A, E, R>(id: string, use: () => Effect.Effect<A, E, R>): Effect.Effect<A, E | SessionsError, R> => {
    const invalid = SessionId.check(id)
    return invalid === undefined ? Effect.suspend(use) : Effect.fail(new SessionsError({ sessionId: id, reason: invalid }))
  }
  return ById.of({
    start: (agent, options = {}) => (options.id === undefined ? service.start(agent, options) : valid(options.id, () => service.start(agent, options))),
    run: (id, prompt) => valid(id, () => service.run(id, prompt)),
    stream: (id, prompt) => Stream.unwrap(valid(id, () => Effect.succeed(service.stream(id, prompt)))),
    history: (id) => valid(id, () => service.history(id)),
    abort: (id) => valid(id, () => service.abort(id)),
    stop: (id) => valid(id, () => service.stop(id)),
    pending: (id) => valid(id, () => service.pending(id)),
    approve: (id, callId) => valid(id, () => service.approve(id, callId)),
    deny: (id, callId, reason) => valid(id, () => service.deny(id, callId, reason)),
    respond: (id, requestId, answer) => valid(id, () => service.respond(id, requestId, answer))
  })
}

/**
 * `ById` over a registry of this process: sessions are started with the registry's `start` (so
 * `whereis` and `list` see them) and found with its `whereis`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeById = <R>(registry: Service, agents: Agents<R>): Effect.Effect<ByIdService, never, R> =>
  Effect.map(Effect.context<R>(), (context) => {
    const find = (id: string) =>
      Effect.flatMap(registry.whereis(id), (found) =>
        Option.isSome(found) ? Effect.succeed(found.value) : Effect.fail(new SessionsError({ sessionId: id, reason: new NotFound() })))
    return checkingIds({
      start: (name, options = {}) =>
        Effect.gen(function*() {
          const id = options.id ?? (yield* uuid7.make)
          const agent = Object.hasOwn(agents, name) ? agents[name] : undefined
          if (agent === undefined) return yield* new SessionsError({ sessionId: id, reason: new UnknownAgent({ agent: name }) })
          yield* registry.start(agent, { id }).pipe(
            Effect.provide(context),
            Effect.mapError((error) =>
              error._tag === "SupervisorError" && error.reason._tag === "DuplicateChild"
                ? new SessionsError({ sessionId: id, reason: new AlreadyStarted() })
                : failedWith(id)(error))
          )
          return id
        }),
      run: (id, prompt) => Effect.flatMap(find(id), (session) => Effect.mapBoth(session.run(prompt), { onFailure: failedWith(id), onSuccess: replyOf })),
      stream: (id, prompt) => Stream.unwrap(Effect.map(find(id), (session) => Stream.mapError(session.stream(prompt), failedWith(id)))),
      history: (id) => Effect.flatMap(find(id), (session) => session.history),
      abort: (id) => Effect.flatMap(find(id), (session) => session.abort),
      stop: (id) => registry.stop(id),
      pending: (id) => Effect.flatMap(find(id), (session) => session.pending),
      approve: (id, callId) => Effect.flatMap(find(id), (session) => Effect.mapError(session.approve(callId), unanswered(id))),
      deny: (id, callId, reason) => Effect.flatMap(find(id), (session) => Effect.mapError(session.deny(callId, reason), unanswered(id))),
      respond: (id, requestId, answer) => Effect.flatMap(find(id), (session) => Effect.mapError(session.respond(requestId, answer), unanswered(id)))
    })
  })

/**
 * `ById` in this process, over the `Sessions` registry, for the agents named in `agents`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerById = <R = never>(agents: Agents<R>): Layer.Layer<ById, never, Sessions | R> =>
  Layer.effect(ById, Effect.gen(function*() {
    return yield* makeById(yield* Sessions, agents)
  }))

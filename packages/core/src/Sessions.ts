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
 * The service and its data are in `SessionsById`, re-exported here.
 */
import { Context, Effect, Exit, Fiber, Layer, Option, Scope, Stream } from "effect"
import type { Agent } from "./Agent.ts"
import * as Session from "./Session.ts"
import { type Agents, ById, type ByIdService, checkingIds, failed, replyOf, unanswered } from "./SessionsById.ts"
import { AlreadyStarted, NotFound, SessionsError, UnknownAgent } from "./SessionsError.ts"
import * as Supervisor from "./Supervisor.ts"
import * as uuid7 from "./Uuid7.ts"

export * from "./SessionsById.ts"
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
// By id, in this process (the service and its data: SessionsById)
// ---------------------------------------------------------------------------------------------

const failedWith = (sessionId: string) => (error: { readonly message: string }) => failed(sessionId, error)

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
      events: (id) => Effect.flatMap(find(id), (session) => session.subscribe),
      history: (id) => Effect.flatMap(find(id), (session) => session.history),
      abort: (id) => Effect.flatMap(find(id), (session) => session.abort),
      stop: (id) => registry.stop(id),
      pending: (id) => Effect.flatMap(find(id), (session) => session.pending),
      approve: (id, callId, by) => Effect.flatMap(find(id), (session) => Effect.mapError(session.approve(callId, by), unanswered(id))),
      deny: (id, callId, reason, by) => Effect.flatMap(find(id), (session) => Effect.mapError(session.deny(callId, reason, by), unanswered(id))),
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

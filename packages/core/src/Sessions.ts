/**
 * Sessions — a registry of named sessions.
 *
 * A session is a map entry and nothing more: it runs in a scope of its own under the registry's,
 * and leaves the map when that scope closes (stopped, crashed, or the registry closing). Only a
 * session whose restart type asks to come back (`permanent`, `transient`) gets a supervisor of its
 * own, itself a temporary child of the registry's: a crash closes that session's scope and the
 * supervisor starts it again under the same id with a fresh history; one that keeps crashing
 * exhausts its own restart intensity and is dropped alone. So no session, however it fails, takes
 * the registry or another session down, a `temporary` session (the default, as in Condukt) costs
 * no supervisor and no fiber, and lookups always see the current incarnation.
 */
import { Context, Effect, Layer, Option, Scope } from "effect"
import type { Agent } from "./Agent.ts"
import * as Session from "./Session.ts"
import * as Supervisor from "./Supervisor.ts"
import * as uuid7 from "./internal/uuid7.ts"

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
  | Supervisor.DuplicateChild
  | Supervisor.SupervisorStopped

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
export class Sessions extends Context.Service<Sessions, Service>()("@condukt/core/Sessions") {
  /** A registry whose sessions live as long as the layer. */
  static readonly layer: Layer.Layer<Sessions> = Layer.effect(Sessions, Effect.orDie(Effect.suspend(() => make())))
}

/**
 * A registry in the current scope; closing the scope stops every session it holds, the latest
 * started first.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service, Supervisor.InvalidOptions, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Scope.Scope
    // Sessions hang from this inner scope, closed in reverse start order after `closed` is set.
    const lives = yield* Scope.fork(scope, "sequential")
    // The registry's supervisor holds only the restartable sessions' own supervisors, as temporary
    // children: its intensity never counts, and building it with the sessions' options checks them.
    const intensity = { maxRestarts: options.maxRestarts, period: options.period }
    const supervisor = yield* Supervisor.make({ ...intensity, strategy: "one_for_one" }).pipe(Scope.provide(lives))
    /** The current incarnation of every session, by id. */
    const registry = new Map<string, Session.Session>()
    /** Ids being started, so that two starts of one id cannot both succeed. */
    const starting = new Set<string>()
    /** Restartable sessions: stopping one goes through its supervisor. */
    const supervised = new Set<string>()
    let closed = false
    yield* Scope.addFinalizer(scope, Effect.sync(() => {
      closed = true
    }))

    // Only forget the incarnation that is ending, never its successor.
    const forget = (session: Session.Session) => {
      if (registry.get(session.id) === session) registry.delete(session.id)
    }

    const startSupervised = <R>(agent: Agent<R>, startOptions: StartOptions, id: string, restart: Supervisor.Restart) =>
      supervisor.startChild<Supervisor.Supervisor, StartError, R>({
        id,
        restart: "temporary",
        // The session's own supervisor ends with it: on its restart intensity, or (auto shutdown)
        // when a session that is not restarted ends. The registry's then forgets it (temporary).
        start: Effect.gen(function*() {
          // Checked when the registry was made: this cannot fail.
          const own = yield* Effect.orDie(Supervisor.make({ ...intensity, strategy: "one_for_one", autoShutdown: "any_significant" }))
          yield* own.startChild<Session.Session, Session.StartError, R>({
            id,
            restart,
            significant: restart !== "permanent",
            start: Effect.flatMap(Scope.Scope, (parent) =>
              Effect.map(
                Session.startIn(agent, startOptions, parent, forget),
                ([session]) => {
                  registry.set(id, session)
                  return session
                }
              )),
            run: (session) => session.join
          })
          return own
        }),
        run: (own) => Effect.ensuring(own.join, Effect.sync(() => supervised.delete(id)))
      })

    const startAs = <R>(agent: Agent<R>, startOptions: StartOptions, id: string): Effect.Effect<Session.Session, StartError, R> =>
      Effect.suspend(() => {
        if (closed) return Effect.fail(new Supervisor.SupervisorStopped({ childId: id, ending: "closed" }))
        if (registry.has(id) || starting.has(id) || supervised.has(id)) return Effect.fail(new Supervisor.DuplicateChild({ id }))
        const restart = startOptions.restart ?? "temporary"
        starting.add(id)
        if (restart === "temporary") {
          return Effect.onExit(Session.startIn(agent, startOptions, lives, forget), (exit) => {
            starting.delete(id)
            if (exit._tag === "Success") registry.set(id, exit.value[0])
            return Effect.void
          }).pipe(Effect.map(([session]) => session))
        }
        supervised.add(id)
        return startSupervised(agent, startOptions, id, restart).pipe(
          Effect.onExit((exit) =>
            Effect.sync(() => {
              starting.delete(id)
              if (exit._tag === "Failure") supervised.delete(id)
            })
          ),
          Effect.map(() => registry.get(id)!)
        )
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
          if (supervised.has(id)) return supervisor.terminateChild(id)
          const session = registry.get(id)
          return session === undefined ? Effect.void : session.stop
        })
    })
  })

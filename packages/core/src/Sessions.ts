/**
 * Sessions — a registry of named sessions under a supervisor.
 *
 * Each session runs under a supervisor of its own, itself a temporary child of the registry's: a
 * crash (a defect escaping a run) closes that session's scope and, depending on its restart type
 * (default `temporary`, as in Condukt), starts it again under the same id: from its store's
 * snapshot when it has a store (every completed turn is there), else with a fresh history. A
 * session that keeps crashing exhausts its own supervisor's restart intensity and is dropped
 * alone, so no session, however it fails, takes the registry or another session down. Lookups
 * always see the current incarnation.
 */
import { Context, Effect, Layer, Option, Ref, type Scope } from "effect"
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
 * The restart intensity each session's own supervisor allows (the strategy is always one for
 * one, and a session not restarted ends its supervisor, so neither is an option).
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
 * A registry in the current scope; closing the scope stops every session it holds.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service, Supervisor.InvalidOptions, Scope.Scope> =>
  Effect.gen(function*() {
    // The registry's children are temporary, so its own intensity never counts; building it with
    // the sessions' options checks them once, here.
    const intensity = { maxRestarts: options.maxRestarts, period: options.period }
    const supervisor = yield* Supervisor.make({ ...intensity, strategy: "one_for_one" })
    const registry = yield* Ref.make(new Map<string, Session.Session>())

    const register = (session: Session.Session) =>
      Effect.acquireRelease(
        Ref.update(registry, (m) => new Map(m).set(session.id, session)),
        // Only forget the incarnation that is ending, never its successor.
        () =>
          Ref.update(registry, (m) => {
            if (m.get(session.id) !== session) return m
            const next = new Map(m)
            next.delete(session.id)
            return next
          })
      )

    return Sessions.of({
      start: <R>(agent: Agent<R>, startOptions: StartOptions = {}) =>
        Effect.gen(function*() {
          const id = startOptions.id ?? (yield* uuid7.make)
          const restart = startOptions.restart ?? "temporary"
          // The session's own supervisor ends with it: on its restart intensity, or (auto shutdown)
          // when a session that is not restarted ends. The registry then forgets it (temporary).
          yield* supervisor.startChild<Supervisor.Supervisor, StartError, R>({
            id,
            restart: "temporary",
            start: Effect.gen(function*() {
              // Checked when the registry was made: this cannot fail.
              const own = yield* Effect.orDie(Supervisor.make({ ...intensity, strategy: "one_for_one", autoShutdown: "any_significant" }))
              yield* own.startChild<Session.Session, Session.StartError, R>({
                id,
                restart,
                significant: restart !== "permanent",
                start: Effect.tap(Session.start(agent, { ...startOptions, id }), register),
                run: (session) => session.join
              })
              return own
            }),
            run: (own) => own.join
          })
          return yield* Effect.map(Ref.get(registry), (m) => m.get(id)!)
        }),
      whereis: (id) => Effect.map(Ref.get(registry), (m) => Option.fromNullishOr(m.get(id))),
      list: Effect.map(Ref.get(registry), (m) => [...m.keys()]),
      count: Effect.map(Ref.get(registry), (m) => m.size),
      stop: (id) => supervisor.terminateChild(id)
    })
  })

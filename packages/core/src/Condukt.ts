/**
 * Condukt — the composition root: the default layer and one-shot runs.
 *
 * `layer` chooses the Node defaults once (a LocalSandbox at the process's working directory for
 * sessions that name no sandbox; provider layers join it as they land). `run` and `stream` start an
 * anonymous, transient session for one prompt and stop it afterwards, releasing everything it owned.
 */
import { Effect, Layer, type Scope, Stream } from "effect"
import * as Agent from "./Agent.ts"
import * as LocalSandbox from "./sandbox/Local.ts"
import * as Session from "./Session.ts"
import type * as SessionEvent from "./SessionEvent.ts"
import type * as Tool from "./Tool.ts"

/**
 * The defaults for Node programs: sessions without a sandbox get a LocalSandbox at the cwd.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never> = Layer.succeed(Session.DefaultSandbox, LocalSandbox.layer())

/** @since 0.1.0 @category models */
export interface RunOptions<R> extends Session.StartOptions, Session.RunOptions {
  readonly model: string
  readonly tools?: ReadonlyArray<Tool.Tool<R>> | undefined
  readonly system?: string | undefined
  /** Names the anonymous agent in events and traces (default `anonymous`). */
  readonly name?: string | undefined
}

const anonymous = <R>(options: RunOptions<R>) =>
  Agent.make<R>({ name: options.name ?? "anonymous", model: options.model, system: options.system, tools: options.tools })

const transient = <R>(options: RunOptions<R>): Effect.Effect<Session.Session, Session.StartError, R | Scope.Scope> =>
  Session.start(anonymous(options), options)

/**
 * Runs one prompt on a fresh session and returns its result.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <R = never>(
  prompt: string,
  options: RunOptions<R>
): Effect.Effect<Session.RunResult, Session.RunError | Session.StartError, R> =>
  Effect.scoped(Effect.flatMap(transient(options), (session) => session.run(prompt, options))).pipe(
    Effect.withSpan("Condukt.run")
  )

/**
 * Streams the events of one prompt on a fresh session; the session ends with the stream.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stream = <R = never>(
  prompt: string,
  options: RunOptions<R>
): Stream.Stream<SessionEvent.SessionEvent, Session.SessionStopped | Session.StartError, R> =>
  Stream.unwrap(Effect.map(transient(options), (session) => session.stream(prompt, options)))

/**
 * Supervisor — OTP supervision on Effect fibers and scopes.
 *
 * A child is a spec: `start` acquires it inside a scope of its own (OTP's init), `run` is its life
 * (by default it lives until stopped). When a child's life ends, its scope is closed and its
 * restart type decides: `permanent` children always come back, `transient` ones only after a
 * failure, `temporary` ones never. The strategy decides who comes back with it: `one_for_one`
 * just the child, `one_for_all` every child, `rest_for_one` the child and those started after it
 * (stopped in reverse order, started in order). More than `maxRestarts` restarts within `period`
 * stop every child and fail the supervisor with `RestartIntensityExceeded`: its parent decides. A
 * child stopped by that give-up has its scope closed with the supervisor's error, so its finalizers
 * can tell it from a plain stop (`gaveUp`); any other stop closes it with success.
 * Every failure of the supervisor is a `SupervisorError`, its `reason` one of these facts.
 * With `autoShutdown`, significant children ending on their own end the supervisor, as in OTP.
 * Closing the supervisor's scope stops its children in reverse start order, a restarted child
 * keeping its place, as OTP does. A supervisor that has ended refuses new children.
 */
import { Cause, Clock, type Context, Deferred, Duration, Effect, Exit, Fiber, Option, Queue, Schema, Scope, Semaphore } from "effect"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export type Restart = "permanent" | "transient" | "temporary"

/** @since 0.1.0 @category models */
export type Strategy = "one_for_one" | "one_for_all" | "rest_for_one"

/** @since 0.1.0 @category models */
export interface ChildSpec<A, E, R> {
  readonly id: string
  /** Acquires the child in its own scope; a failure here is a failed start. */
  readonly start: Effect.Effect<A, E, R | Scope.Scope>
  /** The child's life once started; when it ends, the child has exited. Default: until stopped. */
  readonly run?: ((value: A) => Effect.Effect<unknown, unknown, R>) | undefined
  /** Default `permanent`. */
  readonly restart?: Restart | undefined
  /**
   * With `autoShutdown`, a significant child ending on its own (and not restarted) shuts the
   * supervisor down. Only transient and temporary children can be significant, as in OTP.
   */
  readonly significant?: boolean | undefined
}

/** @since 0.1.0 @category models */
export interface Options {
  readonly strategy?: Strategy | undefined
  /** Default 3, as in OTP. */
  readonly maxRestarts?: number | undefined
  /** Default 5 seconds, as in OTP. */
  readonly period?: Duration.Input | undefined
  /**
   * OTP's `auto_shutdown`: `never` (default); `any_significant` shuts down when one significant
   * child ends on its own; `all_significant` when the last significant child has.
   */
  readonly autoShutdown?: "never" | "any_significant" | "all_significant" | undefined
}

/** @since 0.1.0 @category models */
export interface ChildInfo {
  readonly id: string
  readonly restart: Restart
  readonly running: boolean
  /** How many times this child has been started (1 after its first start). */
  readonly starts: number
}

/** @since 0.1.0 @category models */
export interface Supervisor {
  /**
   * Starts and adds a child; its start error is returned and the child is not added. A supervisor
   * that has ended (gave up, shut down, or its scope closed) refuses with `SupervisorStopped`
   * (the reason of a `SupervisorError`), a taken id with `DuplicateChild`.
   */
  readonly startChild: <A, E, R>(spec: ChildSpec<A, E, R>) => Effect.Effect<A, E | SupervisorError, R>
  /** Stops a child and removes it; unknown ids are ignored. */
  readonly terminateChild: (id: string) => Effect.Effect<void>
  readonly children: Effect.Effect<ReadonlyArray<ChildInfo>>
  /** Waits for the supervisor to end: succeeds on an auto shutdown, fails when it gives up. */
  readonly join: Effect.Effect<void, SupervisorError>
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category errors */
export class RestartIntensityExceeded extends Schema.TaggedError<RestartIntensityExceeded>()("RestartIntensityExceeded", {
  childId: Schema.String,
  maxRestarts: Schema.Int,
  periodMs: Schema.Finite,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `Supervisor gave up: child ${this.childId} needed more than ${this.maxRestarts} restarts within ${this.periodMs}ms`
  }
}

/** Why a supervisor no longer takes children. */
export type Ending = "GaveUp" | "ShutDown" | "Closed"

/** @since 0.1.0 @category errors */
export class SupervisorStopped extends Schema.TaggedError<SupervisorStopped>()("SupervisorStopped", {
  childId: Schema.String,
  ending: Schema.Literals(["GaveUp", "ShutDown", "Closed"])
}) {
  override get message() {
    const why = this.ending === "GaveUp"
      ? "it gave up after too many restarts"
      : this.ending === "ShutDown"
      ? "it shut down automatically"
      : "its scope is closed"
    return `Cannot start child ${this.childId}: the supervisor has stopped (${why})`
  }
}

/** An option `make` cannot honour: a restart intensity that would never trip, for instance. */
export class InvalidOptions extends Schema.TaggedError<InvalidOptions>()("InvalidOptions", {
  option: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `Supervisor option ${this.option} ${this.description}`
  }
}

/** @since 0.1.0 @category errors */
export class DuplicateChild extends Schema.TaggedError<DuplicateChild>()("DuplicateChild", { id: Schema.String }) {
  override get message() {
    return `A child with id ${this.id} is already supervised`
  }
}

/** @since 0.1.0 @category errors */
export const Reason = Schema.Union([RestartIntensityExceeded, SupervisorStopped, InvalidOptions, DuplicateChild])
export type Reason = typeof Reason.Type

/**
 * The one error of the supervisor: it gave up (`RestartIntensityExceeded`), it refused a child
 * (`SupervisorStopped`, `DuplicateChild`), or `make` was given options it cannot honour
 * (`InvalidOptions`). Its `message` is the reason's sentence; `Effect.catchReason` matches one.
 *
 * @since 0.1.0
 * @category errors
 */
export class SupervisorError extends Schema.TaggedError<SupervisorError>()("SupervisorError", { reason: Reason }) {
  override get message() {
    return this.reason.message
  }
}

// ---------------------------------------------------------------------------------------------
// Guards
// ---------------------------------------------------------------------------------------------

/**
 * The give-up a child's scope was closed with, read by a finalizer of the child: `undefined` when
 * the child was stopped otherwise (its supervisor's scope closing, `terminateChild`, a restart of
 * its group) or ended on its own.
 *
 * @since 0.1.0
 * @category guards
 */
export const gaveUp = (exit: Exit.Exit<unknown, unknown>): RestartIntensityExceeded | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const error = Cause.findErrorOption(exit.cause)
  return Option.isSome(error) && error.value instanceof SupervisorError && error.value.reason._tag === "RestartIntensityExceeded"
    ? error.value.reason
    : undefined
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

interface Child {
  readonly spec: ChildSpec<unknown, unknown, unknown>
  /** The context of the `startChild` caller: restarts run with the services the first start had. */
  readonly context: Context.Context<unknown>
  /** Bumped by every start and every stop: an exit report from an older incarnation is stale. */
  incarnation: number
  starts: number
  fiber: Fiber.Fiber<void> | undefined
  /** What the child's scope closes with when its life is interrupted: set by every stop. */
  closeWith: Exit.Exit<unknown, unknown>
}

interface Exited {
  readonly child: Child
  readonly incarnation: number
  readonly exit: Exit.Exit<unknown, unknown>
}

const restartOf = (child: Child): Restart => child.spec.restart ?? "permanent"

/** The restart intensity, checked: OTP wants a non-negative intensity and a positive period. */
const intensity = (options: Options): Effect.Effect<{ readonly maxRestarts: number; readonly periodMs: number }, SupervisorError> => {
  const maxRestarts = options.maxRestarts ?? 3
  if (!Number.isSafeInteger(maxRestarts) || maxRestarts < 0) {
    return Effect.fail(
      new SupervisorError({
        reason: new InvalidOptions({ option: "maxRestarts", description: `must be a whole number >= 0 (got ${maxRestarts})` })
      })
    )
  }
  const periodMs = Option.match(Duration.fromInput(options.period ?? "5 seconds"), {
    onNone: () => Number.NaN,
    onSome: Duration.toMillis
  })
  if (!(periodMs > 0) || !Number.isFinite(periodMs)) {
    return Effect.fail(
      new SupervisorError({
        reason: new InvalidOptions({ option: "period", description: `must be a finite duration above zero (got ${String(options.period)})` })
      })
    )
  }
  return Effect.succeed({ maxRestarts, periodMs })
}

/**
 * A supervisor living in the current scope, with `children` started in order.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options = {}) {
  const strategy = options.strategy ?? "one_for_one"
  const { maxRestarts, periodMs } = yield* intensity(options)
  const scope = yield* Scope.Scope
  // Children's scopes and lives hang from this inner scope, closed only after the finalizer below
  // has stopped every child in reverse start order: forked straight from `scope`, they would
  // close first, in their own creation order (a restarted child first of all).
  const lives = yield* Scope.fork(scope, "sequential")
  const lock = yield* Semaphore.make(1)
  const exits = yield* Queue.unbounded<Exited>()
  const autoShutdown = options.autoShutdown ?? "never"
  const ended = yield* Deferred.make<void, SupervisorError>()
  let ending: Ending | undefined
  let children: Array<Child> = []
  let restarts: Array<number> = []

  // One incarnation: start in a fresh scope; on success fork its life, which closes the scope and
  // reports when it ends. A stale report (the child was stopped or restarted since) is ignored.
  const launch = (child: Child): Effect.Effect<Exit.Exit<unknown, unknown>> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const incarnation = ++child.incarnation
        child.starts++
        const childScope = yield* Scope.fork(lives, "sequential")
        const started = yield* Effect.exit(restore(child.spec.start.pipe(Scope.provide(childScope), Effect.provideContext(child.context))))
        if (Exit.isFailure(started)) {
          yield* Scope.close(childScope, started)
          return started
        }
        const life = child.spec.run?.(started.value) ?? Effect.never
        child.fiber = yield* Effect.forkIn(
          Effect.exit(life.pipe(Effect.provideContext(child.context))).pipe(
            Effect.flatMap((exit) =>
              Scope.close(childScope, exit).pipe(Effect.andThen(Queue.offer(exits, { child, incarnation, exit })))
            ),
            Effect.onInterrupt(() => Effect.suspend(() => Scope.close(childScope, child.closeWith))),
            Effect.asVoid
          ),
          lives,
          { startImmediately: true }
        )
        return started
      })
    )

  const stop = (child: Child, closeWith: Exit.Exit<unknown, unknown> = Exit.void) =>
    Effect.suspend(() => {
      const fiber = child.fiber
      child.fiber = undefined
      child.incarnation++
      child.closeWith = closeWith
      return fiber === undefined ? Effect.void : Fiber.interrupt(fiber)
    })

  const stopAll = (targets: ReadonlyArray<Child>, closeWith?: Exit.Exit<unknown, unknown>) =>
    Effect.forEach([...targets].reverse(), (child) => stop(child, closeWith), { discard: true })

  const restart = (child: Child) =>
    Effect.flatMap(launch(child), (exit) =>
      Exit.isFailure(exit) ? Queue.offer(exits, { child, incarnation: child.incarnation, exit }) : Effect.void)

  const handle = ({ child, exit, incarnation }: Exited) =>
    Effect.gen(function*() {
      if (!children.includes(child) || child.incarnation !== incarnation) return
      child.fiber = undefined
      const abnormal = Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)
      const kind = restartOf(child)
      if (kind === "temporary" || (kind === "transient" && !abnormal)) {
        children = children.filter((c) => c !== child)
        const significantLeft = children.some((c) => c.spec.significant === true)
        if (
          child.spec.significant === true &&
          (autoShutdown === "any_significant" || (autoShutdown === "all_significant" && !significantLeft))
        ) {
          ending = "ShutDown"
          yield* stopAll(children)
          children = []
          yield* Deferred.succeed(ended, undefined)
        }
        return
      }
      const now = yield* Clock.currentTimeMillis
      restarts = [...restarts.filter((t) => now - t < periodMs), now]
      if (restarts.length > maxRestarts) {
        ending = "GaveUp"
        const error = new SupervisorError({
          reason: new RestartIntensityExceeded({
            childId: child.spec.id,
            maxRestarts,
            periodMs,
            cause: Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
          })
        })
        yield* stopAll(children, Exit.fail(error))
        children = []
        return yield* Deferred.fail(ended, error)
      }
      const index = children.indexOf(child)
      const group = strategy === "one_for_one" ? [child] : strategy === "one_for_all" ? children : children.slice(index)
      yield* stopAll(group.filter((c) => c !== child))
      // Temporary children are not restarted: a group restart drops them.
      const again = group.filter((c) => c === child || restartOf(c) !== "temporary")
      children = children.filter((c) => !group.includes(c) || again.includes(c))
      yield* Effect.forEach(again, restart, { discard: true })
    })

  yield* Effect.addFinalizer(() =>
    lock.withPermits(1)(Effect.suspend(() => {
      ending ??= "Closed"
      return stopAll(children)
    }))
  )
  yield* Effect.forkIn(
    Effect.forever(Effect.flatMap(Queue.take(exits), (exited) => lock.withPermits(1)(handle(exited)))).pipe(
      Effect.raceFirst(Deferred.await(ended))
    ),
    scope,
    { startImmediately: true }
  )

  const supervisor: Supervisor = {
    startChild: <A, E, R>(spec: ChildSpec<A, E, R>) =>
      Effect.gen(function*() {
        const context = yield* Effect.context<R>()
        return yield* lock.withPermits(1)(Effect.gen(function*() {
          if (ending !== undefined) return yield* new SupervisorError({ reason: new SupervisorStopped({ childId: spec.id, ending }) })
          if (children.some((c) => c.spec.id === spec.id)) return yield* new SupervisorError({ reason: new DuplicateChild({ id: spec.id }) })
          if (spec.significant === true && (spec.restart ?? "permanent") === "permanent") {
            return yield* Effect.die(new TypeError(`Child ${spec.id}: a permanent child cannot be significant`))
          }
          const child: Child = {
            spec: spec as unknown as ChildSpec<unknown, unknown, unknown>,
            context: context as Context.Context<unknown>,
            incarnation: 0,
            starts: 0,
            fiber: undefined,
            closeWith: Exit.void
          }
          const exit = yield* launch(child)
          if (Exit.isFailure(exit)) return yield* (exit as Exit.Exit<A, E>)
          children = [...children, child]
          return exit.value as A
        }))
      }),
    terminateChild: (id) =>
      lock.withPermits(1)(Effect.suspend(() => {
        const child = children.find((c) => c.spec.id === id)
        if (child === undefined) return Effect.void
        children = children.filter((c) => c !== child)
        return stop(child)
      })),
    children: Effect.sync(() =>
      children.map((c) => ({ id: c.spec.id, restart: restartOf(c), running: c.fiber !== undefined, starts: c.starts }))
    ),
    join: Deferred.await(ended)
  }
  return supervisor
})

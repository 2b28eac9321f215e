/**
 * ProcessBudget — how many host processes a program's tools may run at once, across all its
 * sessions. LocalSandbox's `exec` and `Tools.Command` hold one permit for the life of each process
 * group they start; a call that finds none free waits its turn, first come first served.
 *
 * The budget is a service built once per program (`Condukt.layer` provides it), never per session:
 * 5,000 sessions each running Bash must share one bound, not get 5,000. Waiting is part of the
 * call: it counts against the call's own timeout and ends with an interruption (an aborted turn,
 * a closed session). It refuses to guess what a process costs: one process group, one permit,
 * whatever the group does.
 */
import { Clock, Context, Effect, Layer, Option, Schema, Semaphore } from "effect"

/** Processes per core when no `max` is given: most tool commands wait on I/O, not a CPU. */
export const DEFAULT_PER_CORE = 4

/**
 * No permit came free within the call's timeout: the program already runs `max` processes. The
 * message is worded for the model too (the tools pass it on): the command never started.
 *
 * @since 0.1.0
 * @category errors
 */
export class PermitTimeout extends Schema.TaggedError<PermitTimeout>()("PermitTimeout", {
  timeoutMs: Schema.Finite,
  max: Schema.Int
}) {
  override get message() {
    return `Cannot run the command: the host's limit of ${this.max} running commands stayed reached for ${
      this.timeoutMs / 1000
    } seconds; try again later`
  }
}

/** @since 0.1.0 @category models */
export interface Service {
  /** The most processes running at once. */
  readonly max: number
  /**
   * Runs `use` holding one permit. The wait takes its share of `timeoutMs` (none: no limit), and
   * `use` receives what is left of it; the permit is returned however `use` ends.
   */
  readonly withPermit: <A, E, R>(
    timeoutMs: number | undefined,
    use: (remainingMs: number | undefined) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | PermitTimeout, R>
}

/**
 * The program's process budget.
 *
 * @since 0.1.0
 * @category services
 */
export class ProcessBudget extends Context.Service<ProcessBudget, Service>()("@condukt/core/ProcessBudget") {}

/** @since 0.1.0 @category models */
export interface Options {
  /** The most processes at once (default `DEFAULT_PER_CORE` × the machine's cores). */
  readonly max?: number | undefined
}

const cores = (): number => Math.max(1, globalThis.navigator?.hardwareConcurrency ?? 1)

/**
 * A budget of `max` permits. Effect's semaphore serves waiters in arrival order and lets no
 * newcomer overtake them, which is the fairness asked of it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service> =>
  Effect.sync(() => {
    const max = Math.max(1, Math.floor(options.max ?? DEFAULT_PER_CORE * cores()))
    const semaphore = Semaphore.makeUnsafe(max)
    // `takeScoped` registers the release in the same uninterruptible step that takes the permit,
    // so a timeout or an interruption landing just as the permit arrives cannot leak it.
    const acquire = (timeoutMs: number | undefined) =>
      timeoutMs === undefined
        ? Effect.as(semaphore.takeScoped(1), Option.some(undefined))
        : Effect.timeoutOption(semaphore.takeScoped(1), timeoutMs)
    return {
      max,
      withPermit: (timeoutMs, use) =>
        Effect.scoped(Effect.gen(function*() {
          const start = yield* Clock.currentTimeMillis
          if (Option.isNone(yield* acquire(timeoutMs))) return yield* new PermitTimeout({ timeoutMs: timeoutMs ?? 0, max })
          const waited = (yield* Clock.currentTimeMillis) - start
          return yield* use(timeoutMs === undefined ? undefined : Math.max(1, timeoutMs - waited))
        }))
    }
  })

/**
 * The budget as a layer; build it once per program.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<ProcessBudget> => Layer.effect(ProcessBudget, make(options))

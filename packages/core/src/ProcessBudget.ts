/**
 * ProcessBudget — how many host processes a program's tools may run at once, across all its
 * sessions. LocalSandbox's `exec` and `Tools.Command` hold one permit for the life of each process
 * group they start; a call that finds none free waits its turn, first come first served.
 *
 * The budget is a service built once per program (`Condukt.layer` provides it), never per session:
 * 5,000 sessions each running Bash must share one bound, not get 5,000. Waiting is not running: a
 * command's timeout starts when its process does, and the wait stops the executor's clock for the
 * call (`CallDeadline.pause`). The wait has a bound of its own (`maxWait`, 10 minutes by default),
 * after which the call is refused, and ends with an interruption (an aborted turn, a closed
 * session). It refuses to guess what a process costs: one process group, one permit, whatever the
 * group does.
 */
import { Clock, Context, Duration, Effect, Fiber, Layer, Schema } from "effect"
import * as CallDeadline from "./CallDeadline.ts"

/** Processes per core when no `max` is given: most tool commands wait on I/O, not a CPU. */
export const DEFAULT_PER_CORE = 4

/**
 * How long a call may wait for a permit when no `maxWait` is given: as long as the executor's
 * default per-call timeout. A host saturated that long is overloaded, not busy; the refusal says so.
 */
export const DEFAULT_MAX_WAIT = Duration.minutes(10)

/**
 * No permit came free within the budget's `maxWait`: the program kept `max` processes running all
 * that time. The message is worded for the model too (the tools pass it on): the command never
 * started.
 *
 * @since 0.1.0
 * @category errors
 */
export class PermitTimeout extends Schema.TaggedError<PermitTimeout>()("PermitTimeout", {
  waitedMs: Schema.Finite,
  max: Schema.Int
}) {
  override get message() {
    return `Cannot run the command: the host's limit of ${this.max} running commands stayed reached for ${
      this.waitedMs / 1000
    } seconds; try again later`
  }
}

/** @since 0.1.0 @category models */
export interface Service {
  /** The most processes running at once. */
  readonly max: number
  /** The longest a call waits for a permit before it is refused, in milliseconds. */
  readonly maxWaitMs: number
  /**
   * Runs `use` holding one permit, returned however `use` ends. The wait for it stops the calling
   * tool call's clock (`CallDeadline.pause`) and lasts `maxWaitMs` at most.
   */
  readonly withPermit: <A, E, R>(use: Effect.Effect<A, E, R>) => Effect.Effect<A, E | PermitTimeout, R>
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
  /** The longest a call waits for a permit (default `DEFAULT_MAX_WAIT`). */
  readonly maxWait?: Duration.Input | undefined
}

const cores = (): number => Math.max(1, globalThis.navigator?.hardwareConcurrency ?? 1)

/** A call waiting for a permit: a node of the budget's FIFO, linked both ways so leaving is O(1). */
interface Waiter {
  prev: Waiter | undefined
  next: Waiter | undefined
  /** Set when a released permit was handed to this waiter: from then on the permit is its own. */
  granted: boolean
  /** Set when its `maxWait` passed first: it has left the queue, refused. */
  expired: boolean
  /** When `maxWait` passes for it, by the clock of the fiber that queued it. */
  readonly deadline: number
  resume: ((effect: Effect.Effect<void>) => void) | undefined
}

/**
 * A budget of `max` permits, first come first served.
 *
 * Not Effect's `Semaphore`: it wakes waiters by scanning a copy of its whole queue on every release
 * (and again when a woken waiter leaves it), which is O(n) per process at 1,000 concurrent calls
 * (bench/exec.ts). Here a released permit passes straight to the oldest waiter, so `free` stays 0
 * while anyone waits and no newcomer can overtake; taking, releasing and leaving are O(1). A call
 * that finds a permit free takes it without a timer or a clock read.
 *
 * Every waiter waits `maxWait` at most, so their deadlines come in queue order: one timer for the
 * whole queue (a fiber sleeping until the oldest waiter's deadline, then refusing every waiter
 * past its own) replaces a timer and two fibers per waiter (`Effect.timeoutOption` races the wait
 * against a sleep) — 10,000 sessions whose Bash calls queue hold that much less each
 * (bench/session-heap.ts). The timer's fiber is started by the first waiter of an empty queue, with
 * its clock, and stopped when the queue empties.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service> =>
  Effect.sync(() => {
    const max = Math.max(1, Math.floor(options.max ?? DEFAULT_PER_CORE * cores()))
    const maxWaitMs = Duration.toMillis(Duration.fromInputUnsafe(options.maxWait ?? DEFAULT_MAX_WAIT))
    let free = max
    let head: Waiter | undefined
    let tail: Waiter | undefined

    /** Sleeps until the oldest waiter's deadline, refuses every waiter past its own, and again; ends with the queue. */
    let timer: Fiber.Fiber<void> | undefined
    const expire: Effect.Effect<void> = Effect.suspend(() => {
      if (head === undefined) {
        timer = undefined
        return Effect.void
      }
      return Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<void> => {
        if (head !== undefined && head.deadline > now) return Effect.andThen(Effect.sleep(head.deadline - now), expire)
        while (head !== undefined && head.deadline <= now) {
          const waiter = head
          unlink(waiter)
          waiter.expired = true
          const resume = waiter.resume
          waiter.resume = undefined
          resume?.(Effect.void)
        }
        return expire
      })
    })
    /** The queue emptied (a permit handed to its last waiter, or its last waiter gone): no timer is needed. */
    const emptied = (): void => {
      if (head !== undefined || timer === undefined) return
      const stopping = timer
      timer = undefined
      stopping.interruptUnsafe()
    }

    const enqueue = (deadline: number): Waiter => {
      const waiter: Waiter = { prev: tail, next: undefined, granted: false, expired: false, deadline, resume: undefined }
      if (tail === undefined) head = waiter
      else tail.next = waiter
      tail = waiter
      return waiter
    }

    const unlink = (waiter: Waiter): void => {
      if (waiter.prev === undefined) head = waiter.next
      else waiter.prev.next = waiter.next
      if (waiter.next === undefined) tail = waiter.prev
      else waiter.next.prev = waiter.prev
      waiter.prev = undefined
      waiter.next = undefined
    }

    const release = (): void => {
      const next = head
      if (next === undefined) {
        free++
        return
      }
      unlink(next)
      next.granted = true
      emptied()
      const resume = next.resume
      next.resume = undefined
      // Yielding first runs the waiter on the scheduler, not inside the releaser's stack: a chain of
      // calls that each fail at once would otherwise nest one release in another, 1,000 deep.
      resume?.(Effect.yieldNow)
    }
    const releaseEffect = Effect.sync(release)

    /** Leaves the queue (unless its deadline already took it out), or, when a permit was handed over meanwhile, passes it on. */
    const leave = (waiter: Waiter): void => {
      if (waiter.granted) release()
      else if (!waiter.expired) {
        unlink(waiter)
        emptied()
      }
    }

    const turn = (waiter: Waiter) =>
      Effect.callback<void>((resume) => {
        if (waiter.granted || waiter.expired) return resume(Effect.void)
        waiter.resume = resume
        return Effect.sync(() => void (waiter.resume = undefined))
      })

    /** The timer runs while anyone waits: started from the first waiter's fiber (its clock). */
    const startTimer = Effect.map(Effect.forkDetach(expire), (fiber) => {
      timer = fiber
    })

    /**
     * Queues the calling fiber, its tool call's clock stopped meanwhile (`CallDeadline.pause`),
     * and runs `use` once a permit is handed to it. Whatever ends the wait (the permit, the
     * deadline, an interruption), the waiter is settled and the clock started again by the
     * caller's uninterruptible code, so a permit handed over just as the wait ends is never lost.
     * One frame per step: a call waiting its turn holds all of them (bench/session-heap.ts).
     */
    const wait = <A, E, R>(use: Effect.Effect<A, E, R>, restore: <X, Y, Z>(effect: Effect.Effect<X, Y, Z>) => Effect.Effect<X, Y, Z>) =>
      Effect.withFiber((fiber): Effect.Effect<A, E | PermitTimeout, R> => {
        const now = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
        const waiter = enqueue(now + maxWaitMs)
        const resumeClock = fiber.getRef(CallDeadline.CallDeadline).pause(now)
        const waited = Effect.flatMap(
          Effect.onInterrupt(restore(turn(waiter)), () => Effect.andThen(Effect.sync(() => leave(waiter)), resumeClock)),
          (): Effect.Effect<A, E | PermitTimeout, R> =>
            Effect.andThen(
              resumeClock,
              waiter.granted
                ? Effect.ensuring(restore(use), releaseEffect)
                : Effect.fail<E | PermitTimeout>(new PermitTimeout({ waitedMs: maxWaitMs, max }))
            )
        )
        return timer === undefined ? Effect.andThen(startTimer, waited) : waited
      })

    return {
      max,
      maxWaitMs,
      withPermit: <A, E, R>(use: Effect.Effect<A, E, R>) =>
        Effect.uninterruptibleMask((restore): Effect.Effect<A, E | PermitTimeout, R> => {
          if (free > 0) {
            free--
            return Effect.ensuring(restore(use), releaseEffect)
          }
          return wait(use, restore)
        })
    }
  })

/**
 * The budget as a layer; build it once per program.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<ProcessBudget> => Layer.effect(ProcessBudget, make(options))

/**
 * eventHub — how a session's events reach their readers without a reader slowing or bloating it.
 *
 * Observers (`session.events`) each get a sliding buffer of `OBSERVER_BUFFER` events: one that
 * does not keep up loses the oldest events, and the session never waits for it. A run's own stream
 * gets backpressure instead: the run waits while `STREAM_BUFFER` of its events are unread, so its
 * reader sets its pace and nothing piles up. The events that end a run never wait (the actor
 * publishes them while it settles the run, and stopping a session must not hang on a reader that
 * has gone away); they overshoot the buffer by at most three events. Nothing is allocated for a
 * session nobody observes.
 */
import { type Cause, Effect, Queue, type Scope, Semaphore, Stream } from "effect"
import type { SessionEvent } from "../SessionEvent.ts"

/** Events an observer may leave unread before the oldest are dropped. */
export const OBSERVER_BUFFER = 1024
/** Events a run's stream may leave unread before the run waits for its reader. */
export const STREAM_BUFFER = 256

/** A run's stream: its buffer and the credits that pace the run. */
export interface Sink {
  readonly queue: Queue.Queue<SessionEvent, Cause.Done>
  readonly credits: Semaphore.Semaphore
}

export interface Hub {
  /** Made by the first observer. */
  observers: Set<Queue.Queue<SessionEvent, Cause.Done>> | undefined
  ended: boolean
}

export const make = (): Hub => ({ observers: undefined, ended: false })

/** A hub nobody observes: for delivering to a run's sink alone. It is never ended or observed. */
export const unobserved: Hub = make()

export const makeSink: Effect.Effect<Sink> = Effect.zipWith(
  Queue.unbounded<SessionEvent, Cause.Done>(),
  Semaphore.make(STREAM_BUFFER),
  (queue, credits) => ({ queue, credits })
)

/**
 * Hands `event` to every observer and to the run's sink. With `wait`, a full sink suspends the
 * caller (interruptibly) until its reader catches up.
 */
export const deliver = (hub: Hub, sink: Sink | undefined, event: SessionEvent, wait: boolean): Effect.Effect<void> => {
  if (hub.observers !== undefined) for (const observer of hub.observers) Queue.offerUnsafe(observer, event)
  if (sink === undefined) return Effect.void
  if (!wait) {
    Queue.offerUnsafe(sink.queue, event)
    return Effect.void
  }
  return Effect.map(Semaphore.take(sink.credits, 1), () => {
    Queue.offerUnsafe(sink.queue, event)
  })
}

/** Ends a run's stream after what it holds. */
export const endSink = (sink: Sink): void => {
  Queue.endUnsafe(sink.queue)
}

/** Ends every observer's stream after what it holds; later observers end at once. */
export const end = (hub: Hub): void => {
  hub.ended = true
  if (hub.observers !== undefined) for (const observer of hub.observers) Queue.endUnsafe(observer)
  hub.observers = undefined
}

/** An observer from the moment it completes: the stream of every event until the hub ends or the scope closes. */
export const subscribe = (hub: Hub): Effect.Effect<Stream.Stream<SessionEvent>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.sliding<SessionEvent, Cause.Done>(OBSERVER_BUFFER)
    if (hub.ended) Queue.endUnsafe(queue)
    else (hub.observers ??= new Set()).add(queue)
    yield* Effect.addFinalizer(() => Effect.sync(() => hub.observers?.delete(queue)))
    return Stream.fromQueue(queue)
  })

/** A stream of every event from the moment it starts until the hub ends. */
export const observe = (hub: Hub): Stream.Stream<SessionEvent> => Stream.unwrap(subscribe(hub))

/** A run's events as its reader sees them; each event read gives the run one credit back. */
export const read = (sink: Sink): Stream.Stream<SessionEvent> =>
  Stream.fromQueue(sink.queue).pipe(Stream.tap(() => Semaphore.release(sink.credits, 1)))

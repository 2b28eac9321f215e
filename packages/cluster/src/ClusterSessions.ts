/**
 * ClusterSessions — `Sessions.ById` served by the cluster: each call is a message to the session's
 * entity, on whichever runner holds it (this process, when it is a runner holding that shard).
 * A program written against `Sessions.ById` moves from one process (`Sessions.layerById`) to a
 * cluster by changing this Layer only. Runs are persisted messages with a run id of their own, so a
 * run accepted before its runner died completes on the runner that takes its shard over; what the
 * cluster fails to deliver (its storage down, a mailbox full) fails `Unavailable`. A call the
 * cluster cuts off (the session's entity moved, or was started again, while the call was in
 * flight) is sent again. An id `SessionId` refuses fails `InvalidSessionId` and is sent nowhere.
 * A call waiting while no runner of the cluster is up says so in the log, and fails `Unavailable`
 * after the `timeout` it was given (internal/noRunner.ts).
 */
import { Cause, Effect, Exit, Fiber, Layer, Schedule, type Scope, Stream } from "effect"
import { EntityId, Sharding } from "effect/cluster"
import type * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import * as Sessions from "@condukt/core/Sessions"
import * as uuid7 from "@condukt/core/Uuid7"
import * as NoRunner from "./internal/noRunner.ts"
import { SessionEntity } from "./SessionEntity.ts"

export type { WaitOptions } from "./internal/noRunner.ts"

/** What a call the cluster kept cutting off fails with. */
const CUT_OFF = {
  _tag: "CutOff",
  message: "the session moved between runners while this call was in flight, again and again for 10 s"
} as const

/** A failure of the cluster's own (storage, transport, a call cut off too often) as the session's `Unavailable`. */
const unavailable = (sessionId: string) => (error: Sessions.SessionsError | { readonly message: string }): Sessions.SessionsError =>
  error instanceof Sessions.SessionsError
    ? error
    : new Sessions.SessionsError({ sessionId, reason: new Sessions.Unavailable({ description: error.message }) })

/** Who answered and for which record, as the Approve and Deny RPCs carry them. */
const answerer = (by: ApprovalRecord.By | undefined) => ({
  ...(by?.by === undefined ? {} : { by: by.by }),
  ...(by?.approval === undefined ? {} : { approval: by.approval })
})

/**
 * How a `ById` over the cluster waits while no runner is up (`waitNotice`, `timeout`), and the
 * address of this process's runner, if it is one (what `runner` says of the sessions it holds).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends NoRunner.WaitOptions {
  readonly address?: string | undefined
}

/**
 * `Sessions.ById` over the current cluster (a runner's, or a client's): its calls, while no runner
 * is up, warn after `options.waitNotice` and fail `Unavailable` after `options.timeout`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeWith = (options: Options = {}): Effect.Effect<Sessions.ByIdService, never, Sharding.Sharding | Scope.Scope> => Effect.gen(function*() {
  const clientFor = yield* SessionEntity.client
  const watcher = yield* NoRunner.make(yield* NoRunner.runnerUp, options)
  const sharding = yield* Sharding.Sharding
  const here = options.address === undefined ? "this runner" : `runner ${options.address}`
  /**
   * The call answered: the cluster's own failures (storage, transport) as the session's
   * `Unavailable`; a call the cluster cut off comes back interrupted, not failed (the caller's own
   * interruption still interrupts it), and is sent again — the same message, so a persisted one is
   * handled once, by its primary key — every 200 ms for at most 10 s. While no runner is up to
   * answer it, the watcher says so, and gives it up after `timeout` (its attempt interrupted).
   */
  const delivered = (id: string, call: string) => <A>(effect: Effect.Effect<A, Sessions.SessionsError | { readonly _tag: string; readonly message: string }>) =>
    Effect.suspend(() => {
      let gaveUp: Sessions.SessionsError | undefined
      let attempt: Fiber.Fiber<A, unknown> | undefined
      const waiting = watcher.waiting(id, call, (error) => {
        gaveUp = error
        attempt?.interruptUnsafe()
      })
      return Effect.forkChild(effect, { startImmediately: true }).pipe(
        Effect.flatMap((fiber) => {
          attempt = fiber
          if (gaveUp !== undefined) fiber.interruptUnsafe()
          return Fiber.await(fiber)
        }),
        // An answer that came as the watcher gave the call up is still the answer.
        Effect.flatMap((exit) =>
          Exit.isSuccess(exit) ? exit : gaveUp !== undefined ? Effect.fail(gaveUp) : Cause.hasInterruptsOnly(exit.cause) ? Effect.fail(CUT_OFF) : exit
        ),
        Effect.retry({ while: (error) => error === CUT_OFF, schedule: Schedule.spaced("200 millis"), times: 50 }),
        Effect.mapError(unavailable(id)),
        Effect.ensuring(Effect.sync(waiting.done))
      )
    })
  // Every id is held to the one rule before it becomes an entity's id: effect/cluster keeps entity
  // ids in SQL TEXT, where a NUL ends one (`alice\0x` was delivered to alice on SQLite).
  return Sessions.checkingIds({
    start: (agent, options = {}) =>
      Effect.gen(function*() {
        const id = options.id ?? (yield* uuid7.make)
        const startId = yield* uuid7.make
        yield* delivered(id, "start")(clientFor(id).Start({ startId, agent }))
        return id
      }),
    run: (id, prompt) => Effect.flatMap(uuid7.make, (runId) => delivered(id, "run")(clientFor(id).Run({ runId, prompt }))),
    stream: (id, prompt) =>
      Stream.merge(
        Stream.mapError(Stream.unwrap(Effect.map(uuid7.make, (runId) => clientFor(id).Stream({ runId, prompt }))), unavailable(id)),
        Stream.fromEffect(watcher.never(id, "stream")),
        { haltStrategy: "left" }
      ),
    // Observed once the runner says so: the stream's first element; what follows it is every event after.
    events: (id) =>
      Effect.gen(function*() {
        const pull = yield* Stream.toPull(clientFor(id).Observe())
        const first = yield* Effect.raceFirst(pull, watcher.never(id, "events"))
        const events = Stream.concat(Stream.fromIterable(first), Stream.fromPull(Effect.succeed(pull))).pipe(
          Stream.filter((event) => event._tag !== "Observing"),
          // A runner that goes away ends the observation; the caller learns the rest from the session.
          Stream.catchCause(() => Stream.empty)
        )
        return events as Stream.Stream<SessionEvent.SessionEvent>
      }).pipe(Effect.catchCause((cause) => Effect.fail(unavailable(id)(Cause.squash(cause) as { readonly message: string })))),
    history: (id) => delivered(id, "history")(clientFor(id).History()),
    abort: (id) => delivered(id, "abort")(clientFor(id).Abort()),
    stop: (id) => delivered(id, "stop")(clientFor(id).Stop()),
    // The answers a session waits for (issue 25, clustercore): persisted, each with an id of its own.
    pending: (id) => delivered(id, "pending")(clientFor(id).Pending()),
    approve: (id, callId, by) =>
      Effect.flatMap(uuid7.make, (answerId) =>
        delivered(id, "approve")(clientFor(id).Approve({ answerId, callId, ...answerer(by), ...(by?.reason === undefined ? {} : { reason: by.reason }) }))),
    deny: (id, callId, reason, by) =>
      Effect.flatMap(uuid7.make, (answerId) =>
        delivered(id, "deny")(clientFor(id).Deny({ answerId, callId, ...(reason === undefined ? {} : { reason }), ...answerer(by) }))),
    respond: (id, requestId, answer) => Effect.flatMap(uuid7.make, (answerId) => delivered(id, "respond")(clientFor(id).Respond({ answerId, requestId, answer }))),
    // From the shard the id hashes to and the shards this runner holds: nothing is sent, nothing woken.
    runner: (id) =>
      Effect.sync(() =>
        sharding.hasShardId(sharding.getShardId(EntityId.make(id), SessionEntity.getShardGroup(EntityId.make(id)))) ? here : "another runner"
      )
  })
})

/**
 * `makeWith()`: a call waiting while no runner is up warns after 30 s and waits on.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Sessions.ByIdService, never, Sharding.Sharding | Scope.Scope> = makeWith()

/**
 * `Sessions.ById` over the cluster the Layer is given (`Runner.layer`, `Runner.layerClient`), its calls as `make`'s.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Sessions.ById, never, Sharding.Sharding> = Layer.effect(Sessions.ById, make)

/**
 * `layer`, its calls' waits on a cluster with no runner up told (`waitNotice`) and bounded (`timeout`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options: Options): Layer.Layer<Sessions.ById, never, Sharding.Sharding> =>
  Layer.effect(Sessions.ById, makeWith(options))

/**
 * SessionEntity — a session as an `effect/cluster` entity: one per session id, living on whichever
 * runner holds its shard, spoken to by messages (`Start`, `Run`, `Stream`, `Abort`, `History`,
 * `Stop`, and the answers a session waits for: `Pending`, `Approve`, `Deny`, `Respond`).
 *
 * The entity keeps nothing the database does not: its session's history is the `SqlSessionStore`
 * in the cluster's own database, and which agent runs it is a row beside it. So a runner that takes
 * a shard over (its owner died) activates the entity by loading both, and the session goes on
 * where its last saved turn left it; an entity idle for `maxIdleTime` passivates (the session
 * stops, its store stays). Agents are not data: each runner knows them by name, and a start names one.
 *
 * `Run` is persisted: a run accepted before its runner died is delivered again, on the runner that
 * takes the shard over. A run delivered again is not started a second time from its prompt once
 * part of it was saved: it began at a recorded history length, so what was saved since is either
 * the whole run (its reply is rebuilt from the history) or a part, which the session, started
 * again from the store, goes on with by itself (ADR 0065): the run waits for that continuation
 * (`Session.idle`) and answers with its reply, or fails `Interrupted` when it did not complete.
 * `Stream` is not persisted (its events cross to the caller as the run makes them), but the
 * cluster sends it again to the runner that takes the session over: it then starts again there
 * (the caller sees a second `AgentStart`) when nothing of its run was saved; otherwise, the saved
 * events cannot be replayed: once the run completed (or its continuation did), it fails
 * `Interrupted` saying that the history holds the reply (ADR 0072).
 * A runner that stops gracefully stops its sessions first: a run then in flight is left
 * unanswered, for the runner that takes the session over.
 * `Approve`, `Deny` and `Respond` are persisted too (each with an id of its own): an answer given
 * while the session's runner dies reaches the session started again from the store, which lists
 * the calls it saved waiting (a first answer continues their batch).
 * The entity serves messages concurrently (`Abort` reaches a running run), and its runs one at a time.
 */
import { type Context, type Duration, Effect, Layer, Option, Schema, Scope, Semaphore, Stream } from "effect"
import { ClusterSchema, Entity, MessageStorage, type Snowflake } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { SqlClient } from "effect/sql"
import * as Message from "@condukt/core/Message"
import * as Session from "@condukt/core/Session"
import * as SessionEvent from "@condukt/core/SessionEvent"
import type * as SessionStore from "@condukt/core/SessionStore"
import * as SessionId from "@condukt/core/SessionId"
import * as Sessions from "@condukt/core/Sessions"
import * as RestingHeap from "./internal/restingHeap.ts"
import * as RunRecords from "./internal/runRecords.ts"
import * as SessionRows from "./internal/sessionRows.ts"
import * as SqlSessionStore from "./SqlSessionStore.ts"

const error = Sessions.SessionsError

/**
 * Starts the session with the agent of that name (it resumes from the store when it holds the id);
 * persisted, and delivered once per `startId`: a start the cluster cut off is sent again and answered
 * as the first was, not `AlreadyStarted`. @since 0.1.0 @category models
 */
export const Start = Rpc.make("Start", {
  payload: { startId: Schema.String, agent: Schema.String },
  error,
  primaryKey: ({ startId }) => startId
}).annotate(ClusterSchema.Persisted, true)

/** Runs a prompt; persisted, and delivered once per `runId`. @since 0.1.0 @category models */
export const Run = Rpc.make("Run", {
  payload: { runId: Schema.String, prompt: Schema.String },
  success: Sessions.RunReply,
  error,
  primaryKey: ({ runId }) => runId
}).annotate(ClusterSchema.Persisted, true)

/**
 * Runs a prompt and streams its events; not persisted, but sent again to the runner that takes the
 * session over when its runner dies, and then, like `Run`, not run a second time once part of it was
 * saved. @since 0.1.0 @category models
 */
export const StreamRun = Rpc.make("Stream", {
  payload: { runId: Schema.String, prompt: Schema.String },
  success: SessionEvent.SessionEvent,
  error,
  stream: true
})

/** What leads an `Observe` stream: the runner observes the session from here on. @since 0.1.0 @category models */
export const Observing = Schema.TaggedStruct("Observing", {})

/**
 * The session's events from now on (`session.subscribe`), led by `Observing` once they are observed;
 * not persisted. @since 0.1.0 @category models
 */
export const Observe = Rpc.make("Observe", { success: Schema.Union([Observing, SessionEvent.SessionEvent]), error, stream: true })

/** Interrupts the running turn. @since 0.1.0 @category models */
export const Abort = Rpc.make("Abort", { error })

/** The session's history. @since 0.1.0 @category models */
export const History = Rpc.make("History", { success: Schema.Array(Message.Message), error })

/** Stops the session (its store stays). @since 0.1.0 @category models */
export const Stop = Rpc.make("Stop", { error })

/** The calls waiting for a person's answer. @since 0.1.0 @category models */
export const Pending = Rpc.make("Pending", { success: Schema.Array(Sessions.Pending), error })

/** Lets a waiting call run; persisted, delivered once per `answerId`. @since 0.1.0 @category models */
export const Approve = Rpc.make("Approve", {
  // `by` and `reason`: who answered and why, kept in the request's approval record.
  // `approval`: the record the answer is for (the `Approvals` service's).
  payload: {
    answerId: Schema.String,
    callId: Schema.String,
    by: Schema.optional(Schema.String),
    reason: Schema.optional(Schema.String),
    approval: Schema.optional(Schema.String)
  },
  error,
  primaryKey: ({ answerId }) => answerId
}).annotate(ClusterSchema.Persisted, true)

/** Refuses a waiting call; persisted, delivered once per `answerId`. @since 0.1.0 @category models */
export const Deny = Rpc.make("Deny", {
  payload: {
    answerId: Schema.String,
    callId: Schema.String,
    reason: Schema.optional(Schema.String),
    by: Schema.optional(Schema.String),
    approval: Schema.optional(Schema.String)
  },
  error,
  primaryKey: ({ answerId }) => answerId
}).annotate(ClusterSchema.Persisted, true)

/** Answers an MCP server's question; persisted, delivered once per `answerId`. @since 0.1.0 @category models */
export const Respond = Rpc.make("Respond", {
  payload: { answerId: Schema.String, requestId: Schema.String, answer: Sessions.ElicitationAnswer },
  error,
  primaryKey: ({ answerId }) => answerId
}).annotate(ClusterSchema.Persisted, true)

/**
 * The entity type: one per session id.
 *
 * @since 0.1.0
 * @category models
 */
export const SessionEntity = Entity.make("Session", [Start, Run, StreamRun, Observe, Abort, History, Stop, Pending, Approve, Deny, Respond])

/** What a runner serves the entity with. @since 0.1.0 @category models */
export interface Options<R> {
  /** The agents this runner can run, by the name a start gives. */
  readonly agents: Sessions.Agents<R>
  /** How long an entity with no message waits before it passivates (its session stops). Default 5 minutes. */
  readonly maxIdleTime?: Duration.Input | undefined
}

/**
 * What a run delivered again finds in the history, given its length when the run began: nothing
 * of it saved (`fresh`: it runs), all of it (its reply, rebuilt from the history), or a part
 * (`partial`: it is not run again).
 *
 * @since 0.1.0
 * @category combinators
 */
export const redelivered = (history: ReadonlyArray<Message.Message>, before: number): "fresh" | "partial" | Sessions.RunReply => {
  if (history.length <= before) return "fresh"
  const messages = history.slice(before + 1)
  const last = messages.at(-1)
  if (last?._tag !== "AssistantMessage" || last.parts.some((part) => part._tag === "ToolCall")) return "partial"
  const text = last.parts.flatMap((part) => (part._tag === "Text" ? [part.text] : [])).join("")
  return { text, turns: messages.filter((message) => message._tag === "AssistantMessage").length, messages }
}

const PARTIAL = "its runner stopped after part of it was saved, and the session could not complete it; the session holds what was saved"
const SAVED = "its runner stopped before its events were all sent; the run completed, and the session's history holds its reply"

const fail = (sessionId: string, reason: Sessions.SessionsError["reason"]) => new Sessions.SessionsError({ sessionId, reason })

/**
 * The entity's handlers on this runner, for the agents in `options.agents`; the sessions' store
 * and rows are in the SqlClient's database. While no session is active here, V8 optimizes for
 * size, so a runner at rest gives back what its busiest moment took (internal/restingHeap.ts).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <R>(options: Options<R>) =>
  Layer.unwrap(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // The run whose beginning each session's next save records, in the save's transaction.
    const beginnings: RunRecords.Beginnings = new Map()
    const store = yield* SqlSessionStore.make({ alongside: RunRecords.alongside(beginnings) })
    const rows = yield* SessionRows.make(sql)
    const context = yield* Effect.context<R>()
    return SessionEntity.toLayer(activate(options.agents, store, rows, beginnings, context), {
      maxIdleTime: options.maxIdleTime ?? "5 minutes",
      concurrency: "unbounded"
    }).pipe(Layer.merge(RestingHeap.layer))
  }))

/** What each activation of an entity serves. */
const activate = <R>(
  agents: Sessions.Agents<R>,
  store: SessionStore.Service,
  rows: SessionRows.SessionRows,
  beginnings: RunRecords.Beginnings,
  context: Context.Context<R>
) =>
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const { entityId: id } = address
    const storage = yield* MessageStorage.MessageStorage
    const scope = yield* Scope.Scope
    /** Starts and stops one at a time; runs one at a time (a run's recorded start is its own). */
    const starting = yield* Semaphore.make(1)
    const running = yield* Semaphore.make(1)
    let current: Session.Session | undefined
    const unavailable = (cause: { readonly message: string }) => fail(id, new Sessions.Unavailable({ description: cause.message }))
    /**
     * A run whose session stopped because this activation is ending (the runner shutting down)
     * is not answered: it waits for the shutdown to interrupt it, and an interrupt then is no
     * reply, so the cluster delivers the run to the runner that takes the session over. (The
     * session's scope closes first, before the cluster marks the activation as shutting down.)
     */
    const handedOver = (error: Sessions.SessionsError) => (scope.state._tag === "Closed" ? Effect.never : Effect.fail(error))

    const records = RunRecords.make({ address, store, rows, storage, beginnings, runTag: Run._tag })

    const startAs = (name: string) =>
      Effect.gen(function*() {
        const agent = Object.hasOwn(agents, name) ? agents[name] : undefined
        if (agent === undefined) return yield* fail(id, new Sessions.UnknownAgent({ agent: name }))
        // The entity's scope, not the runner's from `context`: the session stops when the entity passivates.
        const session = yield* Session.start(agent, { id, store: records.store }).pipe(
          Effect.provideService(Scope.Scope, scope),
          Effect.provide(context),
          Effect.mapError((error) => Sessions.failed(id, error))
        )
        current = session
        // A session that ends (stopped, crashed) is started again by the next message that needs it.
        yield* Effect.forkIn(Effect.ensuring(Effect.exit(session.join), Effect.sync(() => {
          if (current === session) current = undefined
        })), scope)
        return session
      })

    /**
     * An entity whose id the one rule refuses (its client used directly, not through
     * `ClusterSessions`, which sends no such id) starts nothing and touches no row.
     */
    const refused = SessionId.check(id)

    /** The running session: this activation's, else started from its row and store. */
    const ensure = starting.withPermits(1)(Effect.suspend(() => {
      if (refused !== undefined) return Effect.fail(fail(id, refused))
      if (current !== undefined) return Effect.succeed(current)
      return Effect.flatMap(Effect.mapError(rows.running(id), unavailable), (agent) =>
        Option.isNone(agent) ? Effect.fail(fail(id, new Sessions.NotFound())) : startAs(agent.value))
    }))

    /**
     * Records where a run begins; a run delivered again (its runner died) finds that record: its
     * reply when the whole run was saved, `undefined` to run it when nothing was. A run saved in
     * part is the one the session, started again from the store, goes on with (ADR 0065): its
     * reply is that continuation's, once the session is idle (ADR 0072).
     */
    const begin = (session: Session.Session, runId: string, request: Snowflake.Snowflake | null) =>
      Effect.gen(function*() {
        // A session started again from the store may be going on with a partly-saved run (ADR
        // 0065): this run begins after it, and its row must say so, not where that one stood.
        yield* session.idle
        const history = yield* session.history
        const began = (yield* Effect.mapError(records.began, unavailable)).get(runId)
        if (began !== undefined) {
          const found = redelivered(history, began)
          if (found === "partial") {
            yield* session.idle
            const continued = redelivered(yield* session.history, began)
            if (typeof continued === "string") return yield* fail(id, new Sessions.Interrupted({ description: PARTIAL }))
            return continued
          }
          if (found !== "fresh") return found
        }
        // Written with the run's first save: a run with no row is one of which nothing was saved.
        yield* records.begins(runId, request, history.length)
        return undefined
      })

    const { ended } = records

    /**
     * Stops of this activation so far: a run that waited its turn while the session was stopped
     * fails as the registry's does ("the session is stopped"), not as one sent after the stop
     * (`NotFound`).
     */
    let stops = 0
    const stoppedWhileWaiting = (seen: number) =>
      stops === seen ? Effect.void : Effect.fail(Sessions.failed(id, new Session.SessionError({ sessionId: id, reason: new Session.SessionStopped() })))

    const run = (runId: string, request: Snowflake.Snowflake, prompt: string, seen = stops) =>
      running.withPermits(1)(Effect.gen(function*() {
        yield* stoppedWhileWaiting(seen)
        // The running session without a turn of `starting` (a stop may come after this look, as after any).
        const session = current ?? (yield* ensure)
        const done = yield* begin(session, runId, request)
        if (done !== undefined) return done
        return yield* Effect.mapBoth(session.run(prompt), {
          onFailure: (error) => Sessions.failed(id, error),
          onSuccess: Sessions.replyOf
        }).pipe(Effect.catch(handedOver))
      }).pipe(Effect.ensuring(ended)))

    return SessionEntity.of({
      Start: ({ payload }) =>
        starting.withPermits(1)(Effect.gen(function*() {
          if (refused !== undefined) return yield* fail(id, refused)
          const found = yield* Effect.mapError(rows.startedBy(id), unavailable)
          // This start, delivered again (cut off after it marked the session): done; the session starts with its next message.
          if (Option.isSome(found) && found.value === payload.startId) return
          if (Option.isSome(found) || current !== undefined) return yield* fail(id, new Sessions.AlreadyStarted())
          if (!Object.hasOwn(agents, payload.agent)) return yield* fail(id, new Sessions.UnknownAgent({ agent: payload.agent }))
          // Marked first: a runner that dies once the session started leaves it running for the next.
          yield* Effect.mapError(rows.mark(id, payload.agent, true, payload.startId), unavailable)
          yield* Effect.tapError(startAs(payload.agent), () => Effect.ignore(rows.mark(id, payload.agent, false)))
        })),
      Run: ({ payload, requestId }) => run(payload.runId, requestId, payload.prompt),
      Stream: ({ payload }) =>
        Stream.unwrap(Effect.gen(function*() {
          const seen = stops
          yield* Effect.acquireRelease(running.take(1), () => Effect.andThen(ended, running.release(1)))
          yield* stoppedWhileWaiting(seen)
          const session = yield* ensure
          // A stream cannot replay the events of a run completed before (or, continued, since) its runner died.
          if ((yield* begin(session, payload.runId, null)) !== undefined) return yield* fail(id, new Sessions.Interrupted({ description: SAVED }))
          return Stream.mapError(session.stream(payload.prompt), (error) => Sessions.failed(id, error))
        })),
      Observe: () =>
        Stream.unwrap(Effect.map(Effect.flatMap(ensure, (session) => session.subscribe), (events) =>
          Stream.concat(Stream.succeed({ _tag: "Observing" as const }), events))),
      Abort: () => Effect.flatMap(ensure, (session) => session.abort),
      History: () => Effect.flatMap(ensure, (session) => session.history),
      Pending: () => Effect.flatMap(ensure, (session) => session.pending),
      Approve: ({ payload }) =>
        Effect.flatMap(ensure, (session) => Effect.mapError(session.approve(payload.callId, { by: payload.by, reason: payload.reason, approval: payload.approval }), Sessions.unanswered(id))),
      Deny: ({ payload }) => Effect.flatMap(ensure, (session) => Effect.mapError(session.deny(payload.callId, payload.reason, { by: payload.by, approval: payload.approval }), Sessions.unanswered(id))),
      Respond: ({ payload }) =>
        Effect.flatMap(ensure, (session) => Effect.mapError(session.respond(payload.requestId, payload.answer), Sessions.unanswered(id))),
      Stop: () =>
        starting.withPermits(1)(Effect.gen(function*() {
          if (refused !== undefined) return yield* fail(id, refused)
          yield* Effect.mapError(rows.stop(id), unavailable)
          stops++
          const session = current
          current = undefined
          if (session !== undefined) yield* session.stop
        }))
    })
  })

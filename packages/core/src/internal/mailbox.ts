/**
 * mailbox — a session's runs from queue to settlement, and the session's end.
 *
 * Runs wait in the actor's mailbox (an array) and are served one at a time by a fiber forked on
 * the first `enqueue` and ended when the mailbox is empty, so an idle session has none. Serving a
 * run records it as running before its first step (so `cancel`, `abort` and `stop` always reach
 * it), drives it (`actor.drive`), and settles it: its last events, then its caller's result. A
 * defect escaping a run crashes the session; the session's scope closing ends it (`end`): what is
 * queued or running fails with `SessionStopped` and every event stream ends. `Session` builds the
 * actor and its handle; this module is all that happens to runs after that.
 */
import { Cause, Deferred, Effect, Exit, Fiber, Option, Scope } from "effect"
import * as Loop from "../Loop.ts"
import * as Redactor from "../Redactor.ts"
import type { RunOptions, RunResult } from "./run.ts"
import { type RunError, RunAborted, SessionCrashed, SessionStopped } from "../SessionError.ts"
import { type Actor, drive, flushPending, publish, type Run } from "./actor.ts"
import * as EventHub from "./eventHub.ts"
import * as Tracing from "./tracing.ts"
import * as uuid7 from "./uuid7.ts"

/** What a model reads for calls that were running when their turn was aborted. */
export const ABORTED_RESULT = "Interrupted: the user aborted the run before this call finished"

// ---------------------------------------------------------------------------------------------
// Serving the mailbox, settling runs, ending
// ---------------------------------------------------------------------------------------------

/**
 * Serves queued runs in order, with the start's context; the fiber ends when the mailbox is empty
 * (an idle session has none) and the next `enqueue` forks another.
 */
const serveMailbox = <R>(actor: Actor<R>): Effect.Effect<void, never, R> =>
  Effect.suspend(() => {
    const run = actor.mailbox.shift()
    if (run === undefined) {
      actor.serving = false
      return Effect.void
    }
    return Effect.flatMap(serve(actor, run), () => serveMailbox(actor))
  })

/**
 * Serves one run. The run's fiber is forked suspended and recorded before it takes a step, so
 * whoever aborts it from then on reaches it. The actor alone settles the run (result, loop state,
 * last events); if the actor is interrupted meanwhile (the session is closing), the run goes first
 * and the shutdown settles it.
 */
const serve = <R>(actor: Actor<R>, run: Run): Effect.Effect<void, never, R> =>
  // Combinators, not a generator: this frame is held for as long as the run runs.
  Effect.uninterruptibleMask((restore) =>
    Effect.suspend(() => {
      // Its caller gave up while it was queued: it never starts.
      if (Deferred.isDoneUnsafe(run.done)) return Effect.void
      return publish(actor, run, { _tag: "AgentStart", prompt: run.prompt }).pipe(
        Effect.andThen(flushPending(actor, run)),
        Effect.andThen(Effect.forkChild(
          Tracing.span(redacted(actor, drive(actor, run)), "Session.run", { attributes: { sessionId: actor.id, runId: run.id } })
        )),
        Effect.flatMap((fiber) => {
          actor.running = { run, fiber }
          return Effect.flatMap(
            Effect.onInterrupt(restore(Fiber.await(fiber)), () => Fiber.interrupt(fiber)),
            (exit) => {
              actor.running = undefined
              return settle(actor, run, exit)
            }
          )
        })
      )
    })
  )

/**
 * A run's failure leaves the runtime (its span, its Error event, its caller, the crash log) only
 * redacted: a provider's error can quote the key a gateway echoed, a tool's defect what it saw.
 */
const redacted = <A, R>(actor: Actor<R>, self: Effect.Effect<A, RunError, R>): Effect.Effect<A, RunError, R> =>
  actor.redact === Redactor.none.redact
    ? self
    : Effect.catchCause(self, (cause) => Effect.failCause(Redactor.redactCause(actor.redact, cause)))

/**
 * Ends a run with its outcome: its last events first, then the caller's result, so a caller that
 * resumes at once and subscribes never receives the end of a run it saw finish.
 */
const settle = Effect.fnUntraced(function*<R>(actor: Actor<R>, run: Run, exit: Exit.Exit<RunResult, RunError>) {
  if (Exit.isSuccess(exit)) {
    yield* publish(actor, run, { _tag: "AgentEnd", outcome: "completed" })
    return yield* Deferred.succeed(run.done, exit.value)
  }
  if (Cause.hasDies(exit.cause)) return yield* crash(actor, run, exit.cause)
  // Pending calls get an answer, so the history stays one a provider accepts.
  actor.loop = Loop.abort(actor.loop, ABORTED_RESULT)
  const error = Cause.findErrorOption(exit.cause)
  if (Option.isSome(error)) {
    yield* publish(actor, run, { _tag: "Error", message: error.value.message })
    yield* publish(actor, run, { _tag: "AgentEnd", outcome: "failed" })
    return yield* Deferred.fail(run.done, error.value)
  }
  yield* publish(actor, run, { _tag: "AgentEnd", outcome: "aborted" })
  yield* Deferred.fail(run.done, new RunAborted({ sessionId: actor.id }))
})

/**
 * Let it crash: a defect escaped the run, so the session's state may be inconsistent. The run and
 * everything queued fail with `SessionCrashed`, `join` reports it, and the session's scope is
 * closed with the crash (from the parent scope: the actor cannot close the scope it runs in), so
 * its sandbox and processes go now, not when the caller's scope ends. Its supervisor decides what
 * comes next.
 */
const crash = Effect.fnUntraced(function*<R>(actor: Actor<R>, run: Run, cause: Cause.Cause<RunError>) {
  const crashed = new SessionCrashed({ sessionId: actor.id, cause: Cause.squash(cause) })
  yield* publish(actor, run, { _tag: "Error", message: crashed.message })
  yield* publish(actor, run, { _tag: "AgentEnd", outcome: "failed" })
  yield* Deferred.fail(run.done, crashed)
  yield* shutdown(actor, () => crashed)
  yield* Deferred.fail(actor.ended, crashed)
  actor.forget?.()
  yield* Effect.forkIn(Scope.close(actor.scope, Exit.fail(crashed)), actor.parent)
})

/**
 * Nobody waits forever: the running and queued runs of a session that ends fail with `reason`,
 * their streams get their AgentEnd (once: a run the actor has settled is no longer running), and
 * every event stream then ends.
 */
const shutdown = <R>(actor: Actor<R>, reason: () => SessionStopped | SessionCrashed): Effect.Effect<void> => {
  actor.stopped = true
  const interrupted = actor.running
  actor.running = undefined
  const queued = actor.mailbox.splice(0)
  const runs = interrupted === undefined ? queued : [interrupted.run, ...queued]
  // The common end — an idle session stopped — has nothing to settle: no error, no span.
  if (runs.length === 0) {
    EventHub.end(actor.hub)
    return Effect.void
  }
  const error = reason()
  return Effect.withSpan(
    Effect.gen(function*() {
      for (const run of runs) {
        if (!(yield* Deferred.isDone(run.done))) {
          yield* publish(actor, run, { _tag: "AgentEnd", outcome: "aborted" })
          yield* Deferred.fail(run.done, error)
        }
      }
      EventHub.end(actor.hub)
    }),
    "Session.shutdown",
    { attributes: { sessionId: actor.id, reason: error._tag }, captureStackTrace: false }
  )
}

/** The session's scope closes: settle what is left, then `join` returns and its registry forgets it. */
export const end = <R>(actor: Actor<R>): Effect.Effect<void> =>
  Effect.andThen(
    shutdown(actor, () => new SessionStopped({ sessionId: actor.id })),
    Effect.sync(() => {
      Deferred.doneUnsafe(actor.ended, Exit.void)
      actor.forget?.()
    })
  )

// ---------------------------------------------------------------------------------------------
// Queueing and cancelling runs
// ---------------------------------------------------------------------------------------------

/**
 * Queues a run, and forks the fiber serving the mailbox when none is. The check, the push and the
 * fork happen in one step: a shutdown cannot slip between them and leave the run waiting forever.
 */
export const enqueue = <R>(actor: Actor<R>, prompt: string, options: RunOptions | undefined, sink: EventHub.Sink | undefined) =>
  Effect.gen(function*() {
    if (actor.stopped) return yield* new SessionStopped({ sessionId: actor.id })
    // The prompt is an outbound message: its secrets are redacted before it is stored or sent.
    const run: Run = { id: yield* uuid7.make, prompt: actor.redact(prompt), options, done: yield* Deferred.make<RunResult, RunError>(), sink }
    yield* Effect.suspend(() => {
      if (actor.stopped) return Deferred.fail(run.done, new SessionStopped({ sessionId: actor.id }))
      actor.mailbox.push(run)
      if (actor.serving) return Effect.void
      actor.serving = true
      return Effect.forkIn(Effect.provideContext(serveMailbox(actor), actor.context), actor.scope)
    })
    return run
  })

/**
 * The caller of a run gave up (interrupted, or its stream's reader left): abort the run if it is
 * running, drop it if it is still queued. A run already settled is left as it is.
 */
export const cancel = <R>(actor: Actor<R>, run: Run): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (actor.running?.run === run) return Fiber.interrupt(actor.running.fiber)
    return Effect.asVoid(Deferred.fail(run.done, new RunAborted({ sessionId: actor.id })))
  })

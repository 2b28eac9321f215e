/**
 * ending — how a session ends, and who hears of it.
 *
 * Closing the session's scope (`stop`, the caller's scope, the program's end) runs `end`: what is
 * queued, running or parked fails with `SessionError` (`SessionStopped`), its stream gets its
 * AgentEnd, every event stream ends, `join` returns and a registry forgets the session. A defect
 * escaping a run crashes it (`crash`): the same, with `SessionCrashed`, and the scope closed with
 * the crash so what the session owns goes at once. The `Actor` is an ending: it says which runs
 * are left (`drain`) and wakes who waits for it to be idle.
 */
import { Cause, Deferred, Effect, Exit, Scope } from "effect"
import { type RunError, SessionCrashed, SessionError, SessionStopped } from "../SessionError.ts"
import * as EventHub from "./eventHub.ts"
import { Outbox } from "./outbox.ts"
import type { Run } from "./Run.ts"

/** What a registry calls with a session's handle once it has ended (`forgetWith` checks the pairing). */
type OnEnd = (owner: object) => void

/** A session's end: its scope, the scope it was started in, who waits for it, who forgets it. */
export abstract class Ending extends Outbox {
  protected readonly scope: Scope.Closeable
  /** The scope `start` was called in: it outlives the session's own. */
  readonly #parent: Scope.Scope
  readonly #ended: Deferred.Deferred<void, SessionError> = Deferred.makeUnsafe<void, SessionError>()
  /**
   * Set by a registry: forgets this session (its handle, `#owner`), once it has ended. Two fields,
   * not a closure over both: a registry of 100,000 idle sessions notices ~80 bytes each.
   */
  #forget: OnEnd | undefined = undefined
  #owner: object | undefined = undefined

  constructor(scope: Scope.Closeable, parent: Scope.Scope) {
    super()
    this.scope = scope
    this.#parent = parent
  }

  /** Every run not settled yet (running, parked, queued), forgotten by the session. */
  protected abstract drain(): ReadonlyArray<Run>

  /** Completes the waits for the session to be idle. */
  protected abstract wake(): void

  /** Waits for the session to end: succeeds when it is stopped, fails when it crashes. */
  get join(): Effect.Effect<void, SessionError> {
    return Deferred.await(this.#ended)
  }

  get stop(): Effect.Effect<void> {
    return Scope.close(this.scope, Exit.void)
  }

  /**
   * Whether the session has stopped, from the moment its scope starts closing (before its
   * finalizers run): nothing waits in it any more, and an answer given now is refused, never
   * taken by a session that will not run it (docs/decisions/0080).
   */
  get stopped(): boolean {
    return this.phase === "stopped" || this.scope.state._tag === "Closed"
  }

  /** A registry's: `onEnd(owner)` is called once the session has ended (`owner` is its handle). */
  forgetWith<S extends object>(onEnd: (owner: S) => void, owner: S): void {
    this.#forget = onEnd as OnEnd
    this.#owner = owner
  }

  /**
   * Let it crash: a defect escaped the run, so the session's state may be inconsistent. The run and
   * everything queued fail with `SessionError` (`SessionCrashed`), `join` reports it, and the session's scope is
   * closed with the crash (from the parent scope: the actor cannot close the scope it runs in), so
   * its sandbox and processes go now, not when the caller's scope ends. Its supervisor decides what
   * comes next.
   */
  protected crash(run: Run, cause: Cause.Cause<RunError>): Effect.Effect<void> {
    const self = this
    return Effect.gen(function*() {
      const crashed = new SessionError({ sessionId: self.id, reason: new SessionCrashed({ cause: Cause.squash(cause) }) })
      yield* self.publish(run, { _tag: "Error", message: crashed.message })
      yield* self.publish(run, { _tag: "AgentEnd", outcome: "failed" })
      yield* Deferred.fail(run.done, crashed)
      yield* self.shutdown(() => crashed)
      yield* Deferred.fail(self.#ended, crashed)
      self.#forget?.(self.#owner!)
      yield* Effect.forkIn(Scope.close(self.scope, Exit.fail(crashed)), self.#parent)
    })
  }

  /**
   * Nobody waits forever: the running and queued runs of a session that ends fail with `reason`,
   * their streams get their AgentEnd (once: a run the actor has settled is no longer running), and
   * every event stream then ends.
   */
  private shutdown(reason: () => SessionError): Effect.Effect<void> {
    this.phase = "stopped"
    const runs = this.drain()
    this.wake()
    // The common end — an idle session stopped — has nothing to settle: no error, no span.
    if (runs.length === 0) {
      EventHub.end(this.hub)
      return Effect.void
    }
    const error = reason()
    const self = this
    return Effect.withSpan(
      Effect.gen(function*() {
        for (const run of runs) {
          if (!(yield* Deferred.isDone(run.done))) {
            yield* self.publish(run, { _tag: "AgentEnd", outcome: "aborted" })
            yield* Deferred.fail(run.done, error)
          }
        }
        EventHub.end(self.hub)
      }),
      "Session.shutdown",
      { attributes: { sessionId: this.id, reason: error.reason._tag }, captureStackTrace: false }
    )
  }

  /** The session's scope closes: settle what is left, then `join` returns and its registry forgets it. */
  end(): Effect.Effect<void> {
    return Effect.andThen(
      this.shutdown(() => new SessionError({ sessionId: this.id, reason: new SessionStopped() })),
      Effect.sync(() => {
        Deferred.doneUnsafe(this.#ended, Exit.void)
        this.#forget?.(this.#owner!)
      })
    )
  }
}

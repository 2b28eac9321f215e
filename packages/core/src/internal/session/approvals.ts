/**
 * approvals — the calls of a session waiting for a person's answer.
 *
 * A request is published as `ApprovalRequested` into its run and waits on a `Deferred`: a fiber
 * and nothing else, plus a timer only when the rules set a timeout. `answer` settles one waiting
 * call and forgets it, so a second answer to the same id, like an answer to an unknown one, fails
 * with `Approval.NotPending`. A wait that ends otherwise (its timeout, the run's abort) forgets its
 * call too. Only sessions with rules or a flagged tool make one.
 */
import { Deferred, Effect, Option } from "effect"
import * as Approval from "../../Approval.ts"
import type * as Executor from "../../Executor.ts"
import type { Publisher, Run } from "./Run.ts"

interface Waiting {
  readonly pending: Approval.Pending
  readonly answer: Deferred.Deferred<Approval.Answer>
}

/** A session's waiting calls, by call id, in the order they asked. */
export class Approvals {
  readonly policy: Approval.Policy | undefined
  readonly #sessionId: string
  /** Made by the first request. */
  #waiting: Map<string, Waiting> | undefined = undefined

  constructor(sessionId: string, policy: Approval.Policy | undefined) {
    this.#sessionId = sessionId
    this.policy = policy
  }

  get pending(): ReadonlyArray<Approval.Pending> {
    return this.#waiting === undefined ? [] : Array.from(this.#waiting.values(), (w) => w.pending)
  }

  /** The executor's side, for one batch of `run`'s calls. */
  gate(events: Publisher, run: Run): Executor.Approvals {
    return { policy: this.policy, request: (call) => this.request(events, run, call) }
  }

  private request(events: Publisher, run: Run, call: Executor.Call): Effect.Effect<Approval.Answer> {
    return Effect.suspend(() => {
      const waiting: Waiting = {
        pending: { callId: call.id, tool: call.name, input: call.input },
        answer: Deferred.makeUnsafe<Approval.Answer>()
      }
      ;(this.#waiting ??= new Map()).set(call.id, waiting)
      const timeoutMs = this.policy?.timeoutMs
      const answered = Deferred.await(waiting.answer)
      const wait = timeoutMs === undefined
        ? answered
        : Effect.map(Effect.timeoutOption(answered, timeoutMs), Option.getOrElse((): Approval.Answer => ({ _tag: "Expired", timeoutMs })))
      return events.publish(run, { _tag: "ApprovalRequested", callId: call.id, tool: call.name, input: call.input }, true).pipe(
        Effect.andThen(wait),
        Effect.ensuring(Effect.sync(() => this.forget(call.id, waiting)))
      )
    })
  }

  private forget(callId: string, waiting: Waiting): void {
    if (this.#waiting?.get(callId) === waiting) this.#waiting.delete(callId)
  }

  /** Answers one waiting call; it then runs (or reads the denial) at once. */
  answer(callId: string, answer: Approval.Answer): Effect.Effect<void, Approval.NotPending> {
    return Effect.suspend(() => {
      const waiting = this.#waiting?.get(callId)
      if (waiting === undefined) return Effect.fail(new Approval.NotPending({ sessionId: this.#sessionId, callId }))
      this.#waiting!.delete(callId)
      return Effect.asVoid(Deferred.succeed(waiting.answer, answer))
    })
  }

  /** Gives every waiting call `answer`. */
  answerAll(answer: Approval.Answer): Effect.Effect<void> {
    return Effect.suspend(() => {
      const waiting = this.#waiting
      if (waiting === undefined || waiting.size === 0) return Effect.void
      const all = Array.from(waiting.values())
      waiting.clear()
      return Effect.forEach(all, (w) => Deferred.succeed(w.answer, answer), { discard: true })
    })
  }
}

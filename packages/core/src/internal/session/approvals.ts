/**
 * approvals — the calls of a session waiting for a person's answer.
 *
 * A request is published as `ApprovalRequested` into its run and waits on a `Deferred`: a fiber
 * and nothing else, plus a timer only when the rules set a timeout. `answer` settles one waiting
 * call and forgets it, so a second answer to the same id, like an answer to an unknown one, fails
 * with `Approval.NotPending`. A wait that ends otherwise (its timeout, the run's abort) forgets its
 * call too. Only sessions with rules or a flagged tool make one.
 *
 * With a store, the batch is saved (its waiting calls, the results of those finished) before each
 * request is published and after each call that finishes while one waits. A session resumed from
 * such a snapshot restores the waiting calls without a run: the first answer to one of them has
 * the session continue the batch (`Hooks.resume`), which asks again for those still unanswered.
 */
import { Deferred, Effect, Option } from "effect"
import * as Approval from "../../Approval.ts"
import type * as Executor from "../../Executor.ts"
import type * as Snapshot from "../../Snapshot.ts"
import type { Publisher, Run } from "./Run.ts"

interface Waiting {
  readonly pending: Approval.Pending
  readonly answer: Deferred.Deferred<Approval.Answer>
  /** Restored from the store: no run waits on it yet. */
  readonly restored: boolean
}

/** What a session with a store does with its batch. */
export interface Hooks {
  /** Saves the batch (as `batchOf` gives it when the save runs) with the session's history, the message of its calls last. */
  readonly save: (batchOf: () => Snapshot.Batch) => Effect.Effect<void>
  /** A restored call was answered: the session continues the batch in a run. */
  readonly resume: Effect.Effect<void>
}

/** A session's waiting calls, by call id, in the order they asked. */
export class Approvals {
  readonly policy: Approval.Policy | undefined
  readonly #sessionId: string
  /** Made by the first request. */
  #waiting: Map<string, Waiting> | undefined = undefined
  #hooks: Hooks | undefined = undefined
  /** The results of the running batch's finished calls, kept only when there are hooks to save them. */
  #results: Array<Snapshot.Batch["results"][number]> = []

  constructor(sessionId: string, policy: Approval.Policy | undefined) {
    this.#sessionId = sessionId
    this.policy = policy
  }

  /** The calls still waiting for an answer (a restored call answered is no longer listed). */
  get pending(): ReadonlyArray<Approval.Pending> {
    if (this.#waiting === undefined) return []
    const out: Array<Approval.Pending> = []
    for (const waiting of this.#waiting.values()) if (!Deferred.isDoneUnsafe(waiting.answer)) out.push(waiting.pending)
    return out
  }

  /** A session with a store saves its batch through `hooks`. */
  useHooks(hooks: Hooks): void {
    this.#hooks = hooks
  }

  /** The calls a resumed session's snapshot left waiting: listed, answered, continued on the first answer. */
  restore(waiting: ReadonlyArray<Approval.Pending>): void {
    const map = (this.#waiting ??= new Map())
    for (const pending of waiting) map.set(pending.callId, { pending, answer: Deferred.makeUnsafe(), restored: true })
  }

  /** The executor's side, for one batch of `run`'s calls; `results`: those of the batch already known. */
  gate(events: Publisher, run: Run, results: ReadonlyArray<Snapshot.Batch["results"][number]> = []): Executor.Approvals {
    this.#results = [...results]
    return {
      policy: this.policy,
      request: (call) => this.request(events, run, call),
      settled: (result) => this.settled(result)
    }
  }

  private save(): Effect.Effect<void> {
    const hooks = this.#hooks
    if (hooks === undefined || this.#waiting === undefined || this.#waiting.size === 0) return Effect.void
    return hooks.save(this.#batch)
  }

  /** The batch as it stands, copied: what a save writes. */
  readonly #batch = (): Snapshot.Batch => ({ waiting: this.pending, results: [...this.#results] })

  private settled(result: Executor.Result): Effect.Effect<void> {
    if (this.#hooks === undefined) return Effect.void
    return Effect.suspend(() => {
      this.#results.push({ callId: result.callId, content: result.content, isError: result.isError })
      return this.save()
    })
  }

  private request(events: Publisher, run: Run, call: Executor.Call): Effect.Effect<Approval.Answer> {
    return Effect.suspend(() => {
      const restored = this.#waiting?.get(call.id)
      // A restored call already answered (the answer that resumed the batch) waits no more.
      if (restored !== undefined && Deferred.isDoneUnsafe(restored.answer)) {
        this.#waiting!.delete(call.id)
        return Deferred.await(restored.answer)
      }
      const waiting: Waiting = restored ?? {
        pending: { callId: call.id, tool: call.name, input: call.input },
        answer: Deferred.makeUnsafe<Approval.Answer>(),
        restored: false
      }
      ;(this.#waiting ??= new Map()).set(call.id, { ...waiting, restored: false })
      const entry = this.#waiting.get(call.id)!
      const timeoutMs = this.policy?.timeoutMs
      const answered = Deferred.await(waiting.answer)
      const wait = timeoutMs === undefined
        ? answered
        : Effect.map(Effect.timeoutOption(answered, timeoutMs), Option.getOrElse((): Approval.Answer => ({ _tag: "Expired", timeoutMs })))
      // Saved before it is published: whoever sees the request finds it in the store.
      return this.save().pipe(
        Effect.andThen(events.publish(run, { _tag: "ApprovalRequested", callId: call.id, tool: call.name, input: call.input }, true)),
        Effect.andThen(wait),
        Effect.ensuring(Effect.sync(() => this.forget(call.id, entry)))
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
      // A restored call stays listed until the batch's run takes the answer.
      if (waiting.restored) {
        if (Deferred.isDoneUnsafe(waiting.answer)) return Effect.fail(new Approval.NotPending({ sessionId: this.#sessionId, callId }))
        return Effect.andThen(Deferred.succeed(waiting.answer, answer), this.#hooks?.resume ?? Effect.void)
      }
      this.#waiting!.delete(callId)
      return Effect.asVoid(Deferred.succeed(waiting.answer, answer))
    })
  }

  /** Gives every waiting call `answer`. */
  answerAll(answer: Approval.Answer): Effect.Effect<void> {
    return Effect.suspend(() => {
      const waiting = this.#waiting
      if (waiting === undefined || waiting.size === 0) return Effect.void
      return Effect.forEach(Array.from(waiting.keys()), (callId) => Effect.ignore(this.answer(callId, answer)), { discard: true })
    })
  }
}

/**
 * approvals — the calls of a session waiting for a person's answer.
 *
 * A request is published as `ApprovalRequested` into its run and waits on a `Deferred`: a fiber
 * and nothing else, plus a timer only when the rules set a timeout. `answer` settles one waiting
 * call and forgets it, so a second answer to the same id, like an answer to an unknown one, fails
 * with `Approval.NotPending`. A wait that ends otherwise (its timeout, the run's abort) forgets its
 * call too. Only sessions with rules or a flagged tool make one.
 *
 * A run whose batch has nothing left to do but wait (every call either finished or waiting, and
 * no timeout set) parks: the calls stay listed with their answers to come, the finished calls'
 * results are kept, and the run's fibers end (`Gate.parked`). The first answer has the session
 * continue the batch in the same run (`Resumer`), as a resumed session does; a call still
 * unanswered then waits again without asking twice. So a waiting session holds its batch, not a
 * fiber (issue 26 item 4, ADR 0061).
 *
 * With a store, the batch is saved (its waiting calls, the results of those finished) before each
 * request is published and after each call that finishes while one waits. A session resumed from
 * such a snapshot restores the waiting calls without a run: the first answer to one of them has
 * the session continue the batch (`Resumer`), which asks again for those still unanswered.
 *
 * A stopped session (its scope closing or closed) lists no call and refuses every answer with
 * `NotPending` (`stopped`), checked in the same step that would take the answer: nothing would run
 * the call, and an answer taken then would vanish. Its saves still record the waiting calls
 * (`waiting`), so a store keeps them for the session's next start (docs/decisions/0080).
 *
 * A session given an `Approval.Answerer` has it answer each call this process publishes, in a
 * fiber of the session's scope (closing the session interrupts it; so does the call's wait ending
 * otherwise), through `answer` as `approve` and `deny` do: parking and saving are unchanged, and
 * an answer to a call no longer waiting is ignored. An answerer that fails (`Unanswered`) fails
 * the batch with `SessionError` (`ApprovalUnanswered`): a running batch at once (`Gate.refused`),
 * a parked one as soon as the session continues it (docs/decisions/0086).
 */
import { Deferred, Effect, Exit, type Fiber, Option, type Scope } from "effect"
import * as Approval from "../Approval.ts"
import type * as Executor from "../Executor.ts"
import * as Redactor from "../Redactor.ts"
import { SessionError } from "../SessionError.ts"
import type * as Snapshot from "../Snapshot.ts"
import type { Publisher, Run } from "./Run.ts"

interface Waiting {
  readonly pending: Approval.Pending
  readonly answer: Deferred.Deferred<Approval.Answer>
  /** Restored from the store or parked: no run waits on it yet. */
  readonly restored: boolean
  /** Published already in this process (a parked call): its run does not ask again. */
  readonly asked?: boolean
  /** The answerer's fiber deciding this call, when the session has an answerer. */
  answering?: Fiber.Fiber<void> | undefined
}

/** Who answers the session's calls in-process (Session's `answerer`), as whose agent, and the scope its fibers live in. */
export interface Answering {
  readonly answerer: Approval.Answerer
  readonly agent: string
  readonly scope: Scope.Scope
}

/** A batch parked: what its continuation needs. */
export interface Parking {
  /** The waiting calls and the finished calls' results, as a store saves them. */
  readonly batch: Snapshot.Batch
  /** The finished calls' results, whole (their tool's name, their data), in the order they finished. */
  readonly finished: ReadonlyArray<Executor.Result>
  /** What the finished calls set in the assigns, in the order they finished. */
  readonly patches: ReadonlyArray<Readonly<Record<string, unknown>>>
}

/** One batch's side of the waiting room: the rules, how a call asks, each result, and what completes when the batch parks. */
export interface Gate {
  readonly policy: Approval.Policy | undefined
  /** Asks a person about one call and waits for the answer. */
  readonly request: (call: Executor.Call) => Effect.Effect<Approval.Answer>
  /**
   * Hears each call's result as it finishes, with what it sets in the assigns, while the batch's
   * requests are asked (a store keeps them; a batch that parks keeps them for its continuation).
   */
  readonly settled: (result: Executor.Result, patch?: Readonly<Record<string, unknown>>) => Effect.Effect<void>
  /** Completed when every call is finished or waiting; made only when a batch can park (no timeout). */
  readonly parked: Deferred.Deferred<Parking> | undefined
  /** Failed when the session's answerer could not answer a call of the batch; made only when it has an answerer. */
  readonly refused: Deferred.Deferred<never, SessionError> | undefined
}

/** Where a session with a store saves its batch: the history, the message of its calls last, with the batch as `batchOf` gives it when the save runs. */
export interface Saver {
  readonly saveBatch: (batchOf: () => Snapshot.Batch) => Effect.Effect<void>
}

/** What continues a batch restored or parked, once a call of it is answered: the session's actor. */
export interface Resumer {
  readonly resumeBatch: Effect.Effect<void>
  /** The session has stopped, or its scope is closing: nothing waits in it any more. */
  readonly stopped: boolean
  /**
   * The session's redaction: a waiting call's arguments are shown (`pending`, ApprovalRequested)
   * redacted, as a restored one's were saved; the call runs with them as written.
   */
  readonly redact: (text: string) => string
}

/** A session's waiting calls, by call id, in the order they asked. */
export class Approvals {
  readonly policy: Approval.Policy | undefined
  readonly #sessionId: string
  /** Made by the first request. */
  #waiting: Array<Waiting> | undefined = undefined
  /** With a store. The two are the conversation and the actor themselves: an idle session pays no closure for them. */
  #saver: Saver | undefined = undefined
  #resumer: Resumer | undefined = undefined
  #answering: Answering | undefined = undefined
  /** Failed by an answerer that could not answer: the running batch, or the parked one when it goes on, fails with it. */
  #refused: Deferred.Deferred<never, SessionError> | undefined = undefined
  /** The results of the running batch's finished calls: what a save writes and a parked batch keeps. */
  #results: Array<Snapshot.Batch["results"][number]> = []
  /** The running batch: how many calls it has, how many of them wait, and what completes when it parks. */
  #calls = 0
  #finished: Array<Executor.Result> | undefined = undefined
  #patches: Array<Readonly<Record<string, unknown>>> | undefined = undefined
  #asking = 0
  #parked: Deferred.Deferred<Parking> | undefined = undefined
  /** The running batch's calls started and not finished, as its journal has them (with a store). */
  #started: (() => ReadonlyArray<string>) | undefined = undefined

  constructor(sessionId: string, policy: Approval.Policy | undefined) {
    this.#sessionId = sessionId
    this.policy = policy
  }

  /** What `session.pending` lists: the calls still waiting (`waiting`), none once the session has stopped. */
  get pending(): ReadonlyArray<Approval.Pending> {
    return this.#resumer?.stopped === true ? [] : this.waiting
  }

  /**
   * The calls still waiting for an answer (a restored call answered is no longer listed), as a save
   * records them: a session stopping keeps them in its store.
   */
  get waiting(): ReadonlyArray<Approval.Pending> {
    const all = this.#waiting
    if (all === undefined) return []
    // `map` and `filter` size their arrays to what they hold; a pushed one reserves room for 17.
    return all.every((waiting) => !Deferred.isDoneUnsafe(waiting.answer))
      ? all.map((waiting) => waiting.pending)
      : all.filter((waiting) => !Deferred.isDoneUnsafe(waiting.answer)).map((waiting) => waiting.pending)
  }

  /**
   * A session saves its batch through `saver` (with a store), continues it through `resumer`, and
   * has its calls answered by `answering` (with an answerer).
   */
  useHooks(saver: Saver | undefined, resumer: Resumer, answering?: Answering): void {
    this.#saver = saver
    this.#resumer = resumer
    this.#answering = answering
  }

  /** The calls a resumed session's snapshot left waiting: listed, answered, continued on the first answer. */
  restore(waiting: ReadonlyArray<Approval.Pending>): void {
    for (const pending of waiting) this.put({ pending, answer: Deferred.makeUnsafe(), restored: true })
  }

  /** Whether a call restored or parked was answered since (or refused by the answerer): the batch is to be continued. */
  get answered(): boolean {
    if (this.#refused !== undefined && Deferred.isDoneUnsafe(this.#refused)) return true
    if (this.#waiting === undefined) return false
    for (const waiting of this.#waiting) if (waiting.restored && Deferred.isDoneUnsafe(waiting.answer)) return true
    return false
  }

  /** The run holding the batch ended (an abort, or a failure): nothing waits any more, and no answerer decides. */
  drop(): void {
    this.#waiting?.forEach((waiting) => waiting.answering?.interruptUnsafe())
    this.#waiting = undefined
    this.#refused = undefined
    this.#started = undefined
    this.#results = []
    this.#finished = undefined
    this.#patches = undefined
  }

  /**
   * The executor's side, for one batch of `run`'s `calls` calls; `results`: those of the batch
   * already known. The batch can park when `parks`, unless its requests time out (a timer needs the run).
   * `started`: the calls running, which a save records (runtime/journal.ts).
   */
  gate(
    events: Publisher,
    run: Run,
    calls: number,
    results: ReadonlyArray<Snapshot.Batch["results"][number]> = [],
    parks = true,
    started?: () => ReadonlyArray<string>
  ): Gate {
    this.#started = started
    this.#results = [...results]
    this.#calls = calls
    this.#finished = undefined
    this.#patches = undefined
    this.#asking = 0
    this.#parked = parks && this.policy?.timeoutMs === undefined ? Deferred.makeUnsafe() : undefined
    // A parked batch refused while it waited keeps its refusal: it goes on only to fail.
    if (this.#answering !== undefined && (this.#refused === undefined || !Deferred.isDoneUnsafe(this.#refused))) this.#refused = Deferred.makeUnsafe()
    return {
      policy: this.policy,
      request: (call) => this.request(events, run, call),
      settled: (result, patch) => this.settled(result, patch),
      parked: this.#parked,
      refused: this.#refused
    }
  }

  /**
   * Parks the batch when nothing is left but waiting: each waiting call gets a fresh answer to
   * come (the run's waits never end, and are interrupted with it), and `parked` completes with the
   * batch, which the session continues on the first answer.
   */
  private parkIfWaiting(): void {
    const parked = this.#parked
    if (parked === undefined || this.#asking === 0 || this.#asking + (this.#finished?.length ?? 0) < this.#calls || this.#waiting === undefined) return
    this.#parked = undefined
    // The batch's last results: no call of it settles any more, and the next batch starts its own.
    const batch = this.batch()
    const all = this.#waiting
    all.forEach((waiting, i) => {
      if (!waiting.restored) all[i] = { pending: waiting.pending, answer: Deferred.makeUnsafe(), restored: true, asked: true, answering: waiting.answering }
    })
    Deferred.doneUnsafe(parked, Exit.succeed({ batch, finished: this.#finished ?? [], patches: this.#patches ?? [] }))
  }

  private save(): Effect.Effect<void> {
    const saver = this.#saver
    if (saver === undefined || this.#waiting === undefined || this.#waiting.length === 0) return Effect.void
    return saver.saveBatch(() => this.batch())
  }

  /** The batch as it stands, copied: what a save writes. */
  private batch(): Snapshot.Batch {
    const results = [...this.#results]
    return this.#started === undefined ? { waiting: this.waiting, results } : { waiting: this.waiting, results, started: this.#started() }
  }

  private settled(result: Executor.Result, patch: Readonly<Record<string, unknown>> | undefined): Effect.Effect<void> {
    return Effect.suspend(() => {
      // Copied, not pushed onto, as the waiting calls are (`put`): what a parked batch keeps is sized to it.
      this.#results = this.#results.concat({ callId: result.callId, content: result.content, isError: result.isError })
      this.#finished = this.#finished === undefined ? [result] : this.#finished.concat(result)
      if (patch !== undefined) this.#patches = this.#patches === undefined ? [patch] : this.#patches.concat(patch)
      // Saved before the batch parks: parking interrupts this call's fiber.
      return Effect.andThen(this.save(), Effect.sync(() => this.parkIfWaiting()))
    })
  }

  private request(events: Publisher, run: Run, call: Executor.Call): Effect.Effect<Approval.Answer> {
    return Effect.suspend(() => {
      const restored = this.find(call.id)
      // A restored call already answered (the answer that resumed the batch) waits no more.
      if (restored !== undefined && Deferred.isDoneUnsafe(restored.answer)) {
        this.remove(call.id)
        return Deferred.await(restored.answer)
      }
      const waiting: Waiting = restored ?? {
        pending: { callId: call.id, tool: call.name, input: Redactor.redactValue(this.#resumer?.redact ?? Redactor.none.redact, call.input) },
        answer: Deferred.makeUnsafe<Approval.Answer>(),
        restored: false
      }
      const entry: Waiting = { pending: waiting.pending, answer: waiting.answer, restored: false, answering: waiting.answering }
      this.put(entry)
      const timeoutMs = this.policy?.timeoutMs
      const answered = Deferred.await(waiting.answer)
      const wait = timeoutMs === undefined
        ? answered
        : Effect.map(Effect.timeoutOption(answered, timeoutMs), Option.getOrElse((): Approval.Answer => ({ _tag: "Expired", timeoutMs })))
      // Saved before it is published: whoever sees the request finds it in the store. A parked
      // call was published before it parked: it waits again without asking twice.
      const published = restored?.asked === true
        ? Effect.void
        : events.publish(run, { _tag: "ApprovalRequested", callId: call.id, tool: call.name, input: waiting.pending.input }, true)
      // A parked call's answerer, asked when it was published, is still deciding.
      const answering = this.#answering === undefined || restored?.asked === true ? Effect.void : this.answerWith(this.#answering, entry)
      return this.save().pipe(
        Effect.andThen(published),
        Effect.andThen(answering),
        Effect.andThen(Effect.sync(() => {
          this.#asking++
          this.parkIfWaiting()
        })),
        Effect.andThen(wait),
        Effect.ensuring(Effect.sync(() => this.forget(call.id, entry)))
      )
    })
  }

  // The waiting calls are few (one message's): an array, searched, costs less than a map.
  private find(callId: string): Waiting | undefined {
    return this.#waiting?.find((waiting) => waiting.pending.callId === callId)
  }

  /** Adds `entry`, or puts it in the place of its call's. */
  private put(entry: Waiting): void {
    const all = this.#waiting
    const at = all === undefined ? -1 : all.findIndex((waiting) => waiting.pending.callId === entry.pending.callId)
    // Copied, not pushed onto: a batch asks for a few calls, and a grown array keeps room for 17.
    if (at === -1) this.#waiting = all === undefined ? [entry] : all.concat(entry)
    else all![at] = entry
  }

  private remove(callId: string): void {
    const all = this.#waiting
    const at = all === undefined ? -1 : all.findIndex((waiting) => waiting.pending.callId === callId)
    if (at !== -1) all!.splice(at, 1)
  }

  /** A wait that ended otherwise (its timeout, the run's abort) forgets its call, and its answerer stops deciding. */
  private forget(callId: string, waiting: Waiting): void {
    if (this.find(callId) !== waiting) return
    this.remove(callId)
    waiting.answering?.interruptUnsafe()
  }

  /** Has the answerer decide `entry`'s call in a fiber of the session's scope, which outlives the batch's run if it parks. */
  private answerWith(answering: Answering, entry: Waiting): Effect.Effect<void> {
    const { callId, tool, input } = entry.pending
    const decided = Effect.matchEffect(answering.answerer({ agent: answering.agent, callId, tool, input }), {
      onFailure: (unanswered) => this.refuse(callId, unanswered),
      // Answered meanwhile (its timeout, an abort, `approve`): nothing waits for this answer.
      onSuccess: (answer) => Effect.ignore(this.answer(callId, answer))
    })
    return Effect.map(Effect.forkIn(decided, answering.scope), (fiber) => {
      entry.answering = fiber
    })
  }

  /**
   * The answerer could not answer a call still waiting: its batch fails with why. A running batch
   * fails at once; a parked one is continued, and fails before any call runs.
   */
  private refuse(callId: string, unanswered: Approval.Unanswered): Effect.Effect<void> {
    return Effect.suspend(() => {
      const refused = this.#refused
      const waiting = this.find(callId)
      if (this.#resumer?.stopped === true || refused === undefined || waiting === undefined || Deferred.isDoneUnsafe(refused)) return Effect.void
      Deferred.doneUnsafe(refused, Exit.fail(new SessionError({ sessionId: this.#sessionId, reason: unanswered })))
      return waiting.restored ? this.#resumer?.resumeBatch ?? Effect.void : Effect.void
    })
  }

  /**
   * Answers one waiting call; it then runs (or reads the denial) at once. The answer is taken in
   * the step that checks the session has not stopped (no yield between them).
   */
  answer(callId: string, answer: Approval.Answer): Effect.Effect<void, Approval.NotPending> {
    return Effect.suspend(() => {
      if (this.#resumer?.stopped === true) return Effect.fail(new Approval.NotPending({ sessionId: this.#sessionId, callId, stopped: true }))
      const waiting = this.find(callId)
      if (waiting === undefined) return Effect.fail(new Approval.NotPending({ sessionId: this.#sessionId, callId }))
      // A restored call stays listed until the batch's run takes the answer.
      if (waiting.restored) {
        if (Deferred.isDoneUnsafe(waiting.answer)) return Effect.fail(new Approval.NotPending({ sessionId: this.#sessionId, callId }))
        Deferred.doneUnsafe(waiting.answer, Exit.succeed(answer))
        return this.#resumer?.resumeBatch ?? Effect.void
      }
      this.remove(callId)
      this.#asking--
      Deferred.doneUnsafe(waiting.answer, Exit.succeed(answer))
      return Effect.void
    })
  }

  /** Gives every waiting call `answer`. */
  answerAll(answer: Approval.Answer): Effect.Effect<void> {
    return Effect.suspend(() => {
      const waiting = this.#waiting
      if (waiting === undefined || waiting.length === 0) return Effect.void
      return Effect.forEach(waiting.map((w) => w.pending.callId), (callId) => Effect.ignore(this.answer(callId, answer)), { discard: true })
    })
  }
}

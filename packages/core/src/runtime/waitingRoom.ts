/**
 * waitingRoom — the calls of a session waiting for a person's answer.
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
 * A session given an `Approval.Answerer` has it answer each call this process publishes, and a
 * request with a deadline expires at it (deciders.ts). An answerer that fails (`Unanswered`) fails
 * the batch with `SessionError` (`ApprovalUnanswered`): a running batch at once (`Gate.refused`),
 * a parked one as soon as the session continues it (docs/decisions/0086).
 *
 * Each request is a record (approvalRecords.ts, docs/decisions/0088): saved open with the batch,
 * its answer recorded in the store's approval log before the call takes it. An answer recorded
 * elsewhere first (the CLI, another process) is not run on by a live session (another holder may
 * have run the call); a session started later takes what the log says of the calls it restores (`wake`).
 */
import { Deferred, Effect, Exit, Option, type Scope } from "effect"
import * as Approval from "../Approval.ts"
import type * as ApprovalRecord from "../ApprovalRecord.ts"
import type * as Executor from "../Executor.ts"
import * as Redactor from "../Redactor.ts"
import { SessionError } from "../SessionError.ts"
import type * as Snapshot from "../Snapshot.ts"
import * as Records from "./approvalRecords.ts"
import * as Deciders from "./deciders.ts"
import * as Waitlist from "./waitlist.ts"
import type { Gate, Parking } from "./admission.ts"
import type { Publisher, Resumer, Run, Saver } from "./Run.ts"
import type * as Tool from "../Tool.ts"

/** A session's waiting calls, by call id, in the order they asked. */
export class WaitingRoom {
  readonly policy: Approval.Policy | undefined
  readonly #recorder: Records.Recorder
  /** The session's scope, where a request's expiry timer lives (set with the hooks). */
  #scope: Scope.Scope | undefined = undefined
  /** Made by the first request. */
  #waiting: Array<Waitlist.Waiting> | undefined = undefined
  /** With a store. The two are the conversation and the actor themselves: an idle session pays no closure for them. */
  #saver: Saver | undefined = undefined
  #resumer: Resumer | undefined = undefined
  #answering: Deciders.Answering | undefined = undefined
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

  constructor(recorder: Records.Recorder, policy: Approval.Policy | undefined) {
    this.#recorder = recorder
    this.policy = policy
  }

  /** What `session.pending` lists: the calls still waiting (`waiting`), none once the session has stopped. */
  get pending(): ReadonlyArray<Approval.Pending> {
    return this.#resumer?.stopped === true ? [] : Waitlist.pending(this.#waiting, true)
  }

  /** `pending` without the calls the session's answerer is deciding: those only a person answers (waitNotice.ts). */
  get unanswered(): ReadonlyArray<Approval.Pending> {
    return this.#resumer?.stopped === true ? [] : Waitlist.pending(this.#waiting?.filter((waiting) => waiting.answering === undefined), true)
  }

  /** The calls still waiting to run (not those asking mid-call), as a save records them: a stopping session's store keeps them. */
  get waiting(): ReadonlyArray<Approval.Pending> {
    return Waitlist.pending(this.#waiting)
  }

  /** A session saves its batch through `saver` (with a store), continues it through `resumer`, its calls answered by `answering`. */
  useHooks(saver: Saver | undefined, resumer: Resumer, scope: Scope.Scope, answering?: Deciders.Answering): void {
    this.#saver = saver
    this.#resumer = resumer
    this.#scope = scope
    this.#answering = answering
  }

  /** The calls a resumed session's snapshot left waiting, with their records: listed, answered, continued on the first answer. */
  restore(waiting: ReadonlyArray<Approval.Pending>, records: ReadonlyArray<ApprovalRecord.ApprovalRecord> = []): void {
    const recordOf = (callId: string) => records.find((r) => r.callId === callId && r.outcome === undefined)
    for (const pending of waiting) this.put({ pending, answer: Deferred.makeUnsafe(), restored: true, record: recordOf(pending.callId) })
  }

  /**
   * The restored calls checked against the store's log once the session has started: one answered
   * elsewhere meanwhile (the CLI, another process) takes that answer, one past its deadline
   * expires, the others expire at theirs.
   */
  get wake(): Effect.Effect<void> {
    return Effect.suspend(() => {
      const restored = this.#waiting?.filter((waiting) => waiting.record !== undefined) ?? []
      const settled = Effect.forEach(restored, (waiting) =>
        Effect.flatMap(Records.settled(this.#recorder.log, waiting.record!), (answer) =>
          answer === undefined ? this.expireLater(waiting) : Effect.ignore(this.answer(waiting.pending.callId, answer, undefined, true))), { discard: true })
      return Effect.andThen(Records.orphans(this.#recorder, new Set(restored.map((waiting) => waiting.record!.id))), settled)
    })
  }

  /** Expires `waiting`'s request at its record's deadline (deciders.ts). */
  private expireLater(waiting: Waitlist.Waiting): Effect.Effect<void> {
    const at = waiting.record?.expiresAt
    const scope = this.#scope
    if (at === undefined || scope === undefined || waiting.expiring !== undefined) return Effect.void
    return Effect.map(Deciders.expiry(waiting.pending.callId, at, this.#recorder.expiresMs ?? 0, scope, this), (fiber) => {
      waiting.expiring = fiber
    })
  }

  /** Whether a call restored or parked was answered since (or refused by the answerer): the batch is to be continued. */
  get answered(): boolean {
    if (this.#refused !== undefined && Deferred.isDoneUnsafe(this.#refused)) return true
    if (this.#waiting === undefined) return false
    for (const waiting of this.#waiting) if (waiting.restored && Deferred.isDoneUnsafe(waiting.answer)) return true
    return false
  }

  /** The run holding the batch ended (an abort, or a failure): nothing waits any more, and no answerer decides. */
  drop(): Effect.Effect<void> {
    const open = this.#waiting?.filter((waiting) => waiting.record !== undefined && !Deferred.isDoneUnsafe(waiting.answer)) ?? []
    this.#waiting?.forEach((waiting) => {
      waiting.answering?.interruptUnsafe()
      waiting.expiring?.interruptUnsafe()
    })
    this.#waiting = undefined
    this.#refused = undefined
    this.#started = undefined
    this.#results = []
    this.#finished = undefined
    this.#patches = undefined
    // Their records end with the run, in the store's log: nothing will answer them.
    const log = this.#recorder.log
    if (log === undefined || open.length === 0) return Effect.void
    return Effect.forEach(open, (waiting) => Records.end(log, waiting.record!), { discard: true })
  }

  /**
   * The executor's side, for one batch of `run`'s `calls` calls (`results`: those already known); it parks when `parks`,
   * unless its requests time out (a timer needs the run). `started`: the calls running, as a save records them (journal.ts).
   */
  gate(
    events: Publisher, run: Run, calls: number, results: ReadonlyArray<Snapshot.Batch["results"][number]> = [], parks = true, started?: () => ReadonlyArray<string>
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
      request: (call, rule) => this.request(events, run, call, rule),
      settled: (result, patch) => this.settled(result, patch),
      parked: this.#parked,
      refused: this.#refused,
      observe: this.policy === undefined ? undefined : Records.observer(this.#recorder, this.policy.policies, this.#scope, run.id, this.#resumer?.redact ?? Redactor.none.redact)
    }
  }

  /**
   * Parks the batch when nothing is left but waiting: each waiting call gets a fresh answer to come (the run's waits never
   * end, and are interrupted with it), and `parked` completes with the batch, which the session continues on the first answer.
   */
  private parkIfWaiting(): void {
    const parked = this.#parked
    if (parked === undefined || this.#asking === 0 || this.#asking + (this.#finished?.length ?? 0) < this.#calls || this.#waiting === undefined) return
    this.#parked = undefined
    // The batch's last results: no call of it settles any more, and the next batch starts its own.
    const batch = this.batch()
    const all = this.#waiting
    all.forEach((waiting, i) => {
      if (!waiting.restored) all[i] = { ...waiting, answer: Deferred.makeUnsafe(), restored: true, asked: true }
    })
    Deferred.doneUnsafe(parked, Exit.succeed({ batch, finished: this.#finished ?? [], patches: this.#patches ?? [] }))
  }

  private save(): Effect.Effect<void> {
    const saver = this.#saver
    if (saver === undefined || this.#waiting === undefined || this.#waiting.length === 0) return Effect.void
    return saver.saveBatch(() => this.batch())
  }

  /** The records of the calls still waiting: what every save of the batch carries. */
  get records(): ReadonlyArray<ApprovalRecord.ApprovalRecord> {
    return Waitlist.openRecords(this.#waiting)
  }

  /** The batch as it stands, copied: what a save writes. */
  private batch(): Snapshot.Batch {
    const results = [...this.#results]
    const batch: Snapshot.Batch = this.#started === undefined ? { waiting: this.waiting, results } : { waiting: this.waiting, results, started: this.#started() }
    const approvals = Waitlist.openRecords(this.#waiting)
    return approvals.length === 0 ? batch : { ...batch, approvals }
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

  private request(events: Publisher, run: Run, call: Executor.Call, rule: string): Effect.Effect<Approval.Answer> {
    return Effect.suspend(() => {
      const restored = this.find(call.id)
      // A restored call already answered (the answer that resumed the batch) waits no more.
      if (restored !== undefined && Deferred.isDoneUnsafe(restored.answer)) {
        this.remove(call.id)
        return Deferred.await(restored.answer)
      }
      const input = restored?.pending.input ?? Redactor.redactValue(this.#resumer?.redact ?? Redactor.none.redact, call.input)
      // A restored call keeps its record; a call a snapshot of an older Condukt left waiting gets one now.
      const recorded = restored?.record === undefined ? Records.opened(this.#recorder, run.id, { id: call.id, name: call.name }, input, rule) : Effect.succeed(restored.record)
      return Effect.flatMap(recorded, (record) => this.ask(events, run, call, restored, input, record))
    })
  }

  /** `call`'s request, its record made: saved, published, answered (by a person, the answerer, its deadline), awaited. */
  private ask(
    events: Publisher,
    run: Run,
    call: Executor.Call,
    restored: Waitlist.Waiting | undefined,
    input: unknown,
    record: ApprovalRecord.ApprovalRecord,
    midCall = false
  ): Effect.Effect<Approval.Answer> {
    return Effect.suspend(() => {
      const waiting: Waitlist.Waiting = restored ?? { pending: { callId: call.id, tool: call.name, input }, answer: Deferred.makeUnsafe<Approval.Answer>(), restored: false }
      const entry: Waitlist.Waiting = { pending: waiting.pending, answer: waiting.answer, restored: false, answering: waiting.answering, record, expiring: waiting.expiring, midCall }
      this.put(entry)
      const timeoutMs = this.policy?.timeoutMs
      const answered = Deferred.await(waiting.answer)
      const log = this.#recorder.log
      const wait = timeoutMs === undefined
        ? answered
        : Effect.flatMap(Effect.timeoutOption(answered, timeoutMs), (got) => {
          if (Option.isSome(got)) return Effect.succeed(got.value)
          const expired: Approval.Answer = { _tag: "Expired", timeoutMs }
          // Its timeout ended it here: the log records so (an answer recorded elsewhere first stays the log's).
          return log === undefined ? Effect.succeed(expired) : Effect.as(Records.take(log, record, expired, undefined), expired)
        })
      // Saved before it is published: whoever sees the request finds it in the store. A parked
      // call was published before it parked: it waits again without asking twice.
      const published = restored?.asked === true
        ? Effect.void
        : events.publish(run, { _tag: "ApprovalRequested", callId: call.id, tool: call.name, input, ...Records.asked(record) }, true)
      // A parked call's answerer, asked when it was published, is still deciding.
      const answering = this.#answering === undefined || restored?.asked === true ? Effect.void : this.answerWith(this.#answering, entry)
      return this.save().pipe(
        Effect.andThen(published),
        Effect.andThen(answering),
        Effect.andThen(this.expireLater(entry)),
        Effect.andThen(Effect.sync(() => {
          // A call asking mid-call runs: its batch cannot park on it.
          if (midCall) return
          this.#asking++
          this.parkIfWaiting()
        })),
        Effect.andThen(wait),
        Effect.ensuring(Effect.suspend(() => this.forget(call.id, entry)))
      )
    })
  }

  /** A running call asks mid-call (`Tool.Context.approve`): a request as any other, on which its batch does not park. */
  askWhileRunning(events: Publisher, run: Run, call: Executor.Call, asked: Tool.Asked): Effect.Effect<Approval.Answer> {
    const input = Redactor.redactValue(this.#resumer?.redact ?? Redactor.none.redact, call.input)
    return Effect.flatMap(Records.opened(this.#recorder, run.id, call, input, "tool", asked), (record) => this.ask(events, run, call, undefined, input, record, true))
  }

  private find(callId: string): Waitlist.Waiting | undefined {
    return Waitlist.find(this.#waiting, callId)
  }

  private put(entry: Waitlist.Waiting): void {
    this.#waiting = Waitlist.put(this.#waiting, entry)
  }

  private remove(callId: string): void {
    Waitlist.remove(this.#waiting, callId)
  }

  /** A wait that ended otherwise (its timeout, the run's abort) forgets its call, and its answerer stops deciding. */
  private forget(callId: string, waiting: Waitlist.Waiting): Effect.Effect<void> {
    if (this.find(callId) !== waiting) return Effect.void
    this.remove(callId)
    waiting.answering?.interruptUnsafe()
    waiting.expiring?.interruptUnsafe()
    // Ended unanswered by its run's abort: its record ends too (a stopping session's stays open in its store).
    const log = this.#resumer?.stopped === true ? undefined : this.#recorder.log
    return log === undefined || waiting.record === undefined || Waitlist.isAnswered(waiting) ? Effect.void : Records.end(log, waiting.record)
  }

  /** Has the answerer decide `entry`'s call (deciders.ts). */
  private answerWith(answering: Deciders.Answering, entry: Waitlist.Waiting): Effect.Effect<void> {
    return Effect.map(Deciders.answerer(answering, entry.pending, entry.record, this), (fiber) => {
      entry.answering = fiber
    })
  }

  /** The answerer could not answer a call still waiting: its batch fails with why (a parked one once continued, before any call runs). */
  refuse(callId: string, unanswered: Approval.Unanswered): Effect.Effect<void> {
    return Effect.suspend(() => {
      const refused = this.#refused
      const waiting = this.find(callId)
      if (this.#resumer?.stopped === true || refused === undefined || waiting === undefined || Deferred.isDoneUnsafe(refused)) return Effect.void
      Deferred.doneUnsafe(refused, Exit.fail(new SessionError({ sessionId: this.#recorder.sessionId, reason: unanswered })))
      return waiting.restored ? this.#resumer?.resumeBatch ?? Effect.void : Effect.void
    })
  }

  /**
   * Answers one waiting call, which then runs (or reads the denial). With a log, the answer (`by`:
   * who, why) is recorded there first, once: when another was recorded first, this one is refused
   * (`NotPending` naming it) and the call waits for the next start. `recorded`: it came from the log.
   */
  answer(callId: string, answer: Approval.Answer, by?: ApprovalRecord.By, recorded = false): Effect.Effect<void, Approval.NotPending> {
    return Effect.suspend(() => {
      const refused = this.refusal(callId, by?.approval), waiting = this.find(callId)!
      if (refused !== undefined) return Effect.fail(refused)
      const log = this.#recorder.log, record = waiting.record
      if (recorded || log === undefined || record === undefined) return this.settle(waiting, answer)
      return Effect.flatMap(Records.take(log, record, answer, by), (taken) =>
        Effect.suspend(() => {
          // Answered elsewhere first (the CLI, or another process holding this session too, which may
          // have run the call): not run here on it; the session takes it when it next starts (`wake`).
          if (taken.first !== undefined) return Effect.fail(new Approval.NotPending({ sessionId: this.#recorder.sessionId, callId, answered: taken.first }))
          // Ended meanwhile (a timeout, an abort, a stop: the log has it for the next start); parked meanwhile, its new entry takes it.
          const late = this.refusal(callId, record.id)
          return late === undefined ? this.settle(this.find(callId)!, taken.answer) : Effect.fail(late)
        }))
    })
  }

  /** Why `callId` takes no answer now (for record `approval`), if it does not: the session stopped, or no such call waits. */
  private refusal(callId: string, approval?: string): Approval.NotPending | undefined {
    if (this.#resumer?.stopped === true) return new Approval.NotPending({ sessionId: this.#recorder.sessionId, callId, stopped: true })
    const waiting = this.find(callId)
    // A restored call stays listed until its run takes the answer; one asking again since is another request (`approval`).
    const other = waiting === undefined || (waiting.restored && Deferred.isDoneUnsafe(waiting.answer)) || (approval !== undefined && waiting.record?.id !== approval)
    if (other) return new Approval.NotPending({ sessionId: this.#recorder.sessionId, callId })
    return undefined
  }

  /** `waiting` takes `answer`: a restored or parked call has its batch go on; a running one's wait ends. */
  private settle(waiting: Waitlist.Waiting, answer: Approval.Answer): Effect.Effect<void> {
    // Its timer stops, unless it is the timer answering (a fiber interrupting itself would stop here).
    if (answer._tag !== "Expired" || answer.at === undefined) waiting.expiring?.interruptUnsafe()
    if (waiting.restored) {
      Deferred.doneUnsafe(waiting.answer, Exit.succeed(answer))
      return this.#resumer?.resumeBatch ?? Effect.void
    }
    this.remove(waiting.pending.callId)
    if (waiting.midCall !== true) this.#asking--
    Deferred.doneUnsafe(waiting.answer, Exit.succeed(answer))
    return Effect.void
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

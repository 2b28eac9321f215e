/**
 * journal — no silent repeats: a session with a store commits each tool call's start before the
 * call runs, so a process that dies while calls run leaves a snapshot saying which ones may have
 * taken effect (issue 25 item 3, docs/decisions/0065).
 *
 * A batch's record is the store's `Snapshot.Batch`: per call, not started (in no list), started
 * (`started`), finished (`results`), or waiting for a person's answer (`waiting`). Starts are
 * committed in groups: a call that starts while no commit is queued queues one; calls starting
 * before that commit reads the batch join it. So a message whose calls start together costs one
 * commit, whatever their number; a call that runs alone after others costs its own. A result is
 * committed only while other calls of the batch still run (once none runs, the results are the
 * turn's commit's, which follows at once: a process dying between the two reads those calls as
 * interrupted, and never runs them twice). A commit that fails is logged and the call runs: the
 * store is behind, as after any failed save. A `retrySafe` tool's call commits its start too: cut
 * off, it runs once more from the committed message, which the model is not asked for again.
 *
 * A run's commit of a message's results, the model's next turn due, keeps an empty batch
 * (`answered`): the snapshot then says the run is in flight, and a session resumed from it asks
 * for that turn and goes on.
 *
 * On resume (`resolve`), a call that had started and not finished is answered with
 * `INTERRUPTED_RESULT` and does not run again, unless its tool is `retrySafe`, which runs once
 * more; a finished call keeps its result; a call that had not started runs. The model is asked
 * for no turn it had already given: the loop goes on from the batch's results.
 */
import { Deferred, Effect, Exit } from "effect"
import type * as Executor from "../Executor.ts"
import type * as Message from "../Message.ts"
import type * as Snapshot from "../Snapshot.ts"

/** What a model reads for a call that was running when the machine (its process) running it died. */
export const INTERRUPTED_RESULT =
  "Interrupted: the machine running this call failed before the call finished, and the call was not run again. Whatever it did before the failure may or may not have taken effect: check before relying on it."

type BatchResult = Snapshot.Batch["results"][number]

/** One batch's journal: the executor's side (`started`, `settled`) and what a save of the batch records. */
export class Journal {
  readonly #save: (batchOf: () => Snapshot.Batch) => Effect.Effect<void>
  readonly #waiting: () => Snapshot.Batch["waiting"]
  /** Started, not finished, in the order they started. */
  readonly #running: Array<string> = []
  readonly #results: Array<BatchResult>
  /** The commit queued and not yet reading the batch: a call starting now joins it. */
  #queued: Deferred.Deferred<void> | undefined = undefined

  /**
   * `save` commits the history with the batch `batchOf` gives when the save's turn comes;
   * `waiting` lists the calls waiting for an answer; `known`, the batch's results known before it ran.
   */
  constructor(
    save: (batchOf: () => Snapshot.Batch) => Effect.Effect<void>,
    waiting: () => Snapshot.Batch["waiting"],
    known: ReadonlyArray<BatchResult>
  ) {
    this.#save = save
    this.#waiting = waiting
    this.#results = [...known]
  }

  /** The calls started and not finished. */
  readonly running = (): ReadonlyArray<string> => [...this.#running]

  /** The batch as it stands: what a save writes. */
  readonly batch = (): Snapshot.Batch => ({ waiting: this.#waiting(), results: [...this.#results], started: [...this.#running] })

  started(call: Executor.Call): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.#running.push(call.id)
      return this.commit()
    })
  }

  settled(result: Executor.Result): Effect.Effect<void> {
    return Effect.suspend(() => {
      const at = this.#running.indexOf(result.callId)
      if (at !== -1) this.#running.splice(at, 1)
      this.#results.push({ callId: result.callId, content: result.content, isError: result.isError })
      return this.#running.length === 0 ? Effect.void : this.commit()
    })
  }

  /** Waits for a commit that reads the batch from now on: the one queued, or a new one. */
  private commit(): Effect.Effect<void> {
    const queued = this.#queued
    if (queued !== undefined) return Deferred.await(queued)
    const done = Deferred.makeUnsafe<void>()
    this.#queued = done
    const batchOf = () => {
      if (this.#queued === done) this.#queued = undefined
      return this.batch()
    }
    // The calls forked beside this one start before the commit reads the batch: one commit for all.
    // Once none runs (a start waits in the list), the results are the turn's commit's, which follows.
    const save = Effect.suspend(() => {
      if (this.#running.length > 0) return this.#save(batchOf)
      if (this.#queued === done) this.#queued = undefined
      return Effect.void
    })
    return Effect.ensuring(Effect.andThen(Effect.yieldNow, save), Deferred.done(done, Exit.void))
  }
}

/** The batch of a message whose calls are all answered in the history: the run is in flight, the model's next turn due. */
export const answered = (): Snapshot.Batch => ANSWERED

const ANSWERED: Snapshot.Batch = { waiting: [], results: [], started: [] }

/** What resuming a batch decides: the calls to run now, and the outputs of those that will not run. */
export interface Resolved {
  readonly run: ReadonlyArray<Message.ToolCallPart>
  readonly outputs: ReadonlyArray<BatchResult>
}

/**
 * The calls of `pending` (the last message's) as a resumed `batch` leaves them: the waiting ones
 * and those that had not started run; a started one runs again only when `retrySafe` says its
 * tool may; the others that had started read `INTERRUPTED_RESULT`, or `aborted` for a snapshot
 * of an older Condukt (no `started`: a call in no list was running).
 */
export const resolve = (
  pending: ReadonlyArray<Message.ToolCallPart>,
  batch: Snapshot.Batch,
  retrySafe: (tool: string) => boolean,
  aborted: string
): Resolved => {
  const waiting = new Set(batch.waiting.map((w) => w.callId))
  const finished = new Set(batch.results.map((r) => r.callId))
  const started = batch.started === undefined ? undefined : new Set(batch.started)
  const run: Array<Message.ToolCallPart> = []
  const outputs: Array<BatchResult> = []
  for (const call of pending) {
    if (finished.has(call.id)) continue
    if (waiting.has(call.id)) run.push(call)
    else if (started === undefined) outputs.push({ callId: call.id, content: aborted, isError: true })
    else if (!started.has(call.id) || retrySafe(call.name)) run.push(call)
    else outputs.push({ callId: call.id, content: INTERRUPTED_RESULT, isError: true })
  }
  return { run, outputs }
}

/** The journal as the executor's wrapper: each call's start committed before it runs, each result heard. */
export const wrapper = <R>(journal: Journal): Executor.Wrapper<R> => ({
  started: (call) => journal.started(call),
  settled: (done) => journal.settled(done.result)
})

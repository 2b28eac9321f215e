/**
 * waitlist — the waiting room's calls, one entry each, in the order they asked. They are few (one
 * message's calls): an array, searched, costs less than a map, and one copied as it grows (not
 * pushed onto: a grown array keeps room for 17) is sized to what it holds.
 */
import { Deferred, type Fiber } from "effect"
import type * as Approval from "../Approval.ts"
import type * as ApprovalRecord from "../ApprovalRecord.ts"

/** One waiting call. */
export interface Waiting {
  readonly pending: Approval.Pending
  readonly answer: Deferred.Deferred<Approval.Answer>
  /** Restored from the store or parked: no run waits on it yet. */
  readonly restored: boolean
  /** Published already in this process (a parked call): its run does not ask again. */
  readonly asked?: boolean
  /** The answerer's fiber deciding this call, when the session has an answerer. */
  answering?: Fiber.Fiber<void> | undefined
  /** Its approval record (ADR 0088); none for a call a snapshot of an older Condukt left waiting. */
  readonly record?: ApprovalRecord.ApprovalRecord | undefined
  /** The timer that expires it at its record's deadline, a fiber of the session's scope. */
  expiring?: Fiber.Fiber<void> | undefined
  /** Asked by its call while it runs (`Tool.Context.approve`): listed, saved with its record, never run again from here. */
  readonly midCall?: boolean | undefined
}

export const find = (all: ReadonlyArray<Waiting> | undefined, callId: string): Waiting | undefined => all?.find((waiting) => waiting.pending.callId === callId)

/** `all` with `entry` added, or in the place of its call's. */
export const put = (all: Array<Waiting> | undefined, entry: Waiting): Array<Waiting> => {
  const at = all === undefined ? -1 : all.findIndex((waiting) => waiting.pending.callId === entry.pending.callId)
  if (at === -1) return all === undefined ? [entry] : all.concat(entry)
  all![at] = entry
  return all!
}

export const remove = (all: Array<Waiting> | undefined, callId: string): void => {
  const at = all === undefined ? -1 : all.findIndex((waiting) => waiting.pending.callId === callId)
  if (at !== -1) all!.splice(at, 1)
}

/** Whether `waiting` has its answer (a restored call stays listed until its batch's run takes it). */
export const isAnswered = (waiting: Waiting): boolean => Deferred.isDoneUnsafe(waiting.answer)

/** The calls still waiting for an answer: to run, and (`midCall`) those asking while they run. */
export const pending = (all: ReadonlyArray<Waiting> | undefined, midCall = false): ReadonlyArray<Approval.Pending> => {
  if (all === undefined) return []
  const listed = (waiting: Waiting) => !isAnswered(waiting) && (midCall || waiting.midCall !== true)
  // `map` and `filter` size their arrays to what they hold.
  return all.every(listed) ? all.map((waiting) => waiting.pending) : all.filter(listed).map((waiting) => waiting.pending)
}

/** The records of the calls still waiting: what a save of the batch carries. */
export const openRecords = (all: ReadonlyArray<Waiting> | undefined): ReadonlyArray<ApprovalRecord.ApprovalRecord> =>
  all?.flatMap((waiting) => (waiting.record === undefined || isAnswered(waiting) ? [] : [waiting.record])) ?? []

/**
 * deciders — what answers a waiting call in-process, each in a fiber of the session's scope (so it
 * outlives a batch that parks, and ends with the session): the session's `Approval.Answerer`, and
 * the request's deadline (`expires`: the record's `expiresAt`, saved, so a session started after
 * a restart expires the request at the same time, or at once when it has passed). Each answers
 * through the waiting room's `answer`, as `approve` and `deny` do; one that finds its call no
 * longer waiting does nothing.
 */
import { Clock, Effect, type Fiber, type Scope } from "effect"
import type * as Approval from "../Approval.ts"
import type * as ApprovalRecord from "../ApprovalRecord.ts"

/** Who answers the session's calls in-process (Session's `answerer`), as whose agent, and the scope its fibers live in. */
export interface Answering {
  readonly answerer: Approval.Answerer
  readonly agent: string
  readonly scope: Scope.Scope
}

/** The waiting room as a decider answers through it. */
export interface Answers {
  readonly answer: (callId: string, answer: Approval.Answer) => Effect.Effect<void, Approval.NotPending>
  /** The answerer could not answer `callId`: its batch fails with why. */
  readonly refuse: (callId: string, unanswered: Approval.Unanswered) => Effect.Effect<void>
}

/** Has the answerer decide one call, whose record is `record` when it has one. */
export const answerer = (
  answering: Answering,
  pending: Approval.Pending,
  record: ApprovalRecord.ApprovalRecord | undefined,
  room: Answers
): Effect.Effect<Fiber.Fiber<void>> => {
  const { callId, input, tool } = pending
  const request: Approval.Request = record === undefined
    ? { agent: answering.agent, callId, tool, input }
    : { agent: answering.agent, callId, tool, input, id: record.id, rule: record.rule, ...(record.expiresAt === undefined ? {} : { expiresAt: record.expiresAt }) }
  const decided = Effect.matchEffect(answering.answerer(request), {
    onFailure: (unanswered) => room.refuse(callId, unanswered),
    // Answered meanwhile (its timeout, an abort, `approve`): nothing waits for this answer.
    onSuccess: (answer) => Effect.ignore(room.answer(callId, answer))
  })
  return Effect.forkIn(decided, answering.scope)
}

/** Expires one call's request at `at` (epoch ms), at once when it has passed. */
export const expiry = (
  callId: string,
  at: number,
  timeoutMs: number,
  scope: Scope.Scope,
  room: Answers
): Effect.Effect<Fiber.Fiber<void>> => {
  const expired: Approval.Answer = { _tag: "Expired", timeoutMs, at }
  const expire = Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.andThen(Effect.sleep(Math.max(0, at - now)), Effect.ignore(room.answer(callId, expired))))
  return Effect.forkIn(expire, scope)
}

/**
 * approvalRecords — the records of a session's requests for approval (ApprovalRecord, ADR 0088).
 *
 * A call that asks gets a record (its own UUIDv7 id, the session, the run, the agent path, the
 * call, its redacted and bounded input, the rule that asked, when, and its deadline when the rules
 * set `expires`), which travels in the batch's saves (the open ones: `Snapshot.Batch.approvals`),
 * so a store's approval log has it in the same commit as the wait. An answer goes to the log
 * first (`take`): the log takes one answer per record, from any process; a live session refused
 * there (the CLI's answer, another holder's) does not run the call on it, and a session started
 * later takes what the log says (`settled`). An answer that comes after the request's deadline
 * (before its timer fired) is its expiry. The end of a request no one answered (its deadline, a
 * timeout, its run's end) is recorded the same way, best effort: a log that fails is logged, and
 * the call goes on.
 */
import { Clock, Effect, Option, type Scope } from "effect"
import type * as Approval from "../Approval.ts"
import * as ApprovalPolicy from "../ApprovalPolicy.ts"
import type * as ApprovalLog from "../ApprovalLog.ts"
import * as ApprovalRecord from "../ApprovalRecord.ts"
import type * as Executor from "../Executor.ts"
import * as Redactor from "../Redactor.ts"
import type { SessionStoreError } from "../SessionStoreError.ts"
import type * as Tool from "../Tool.ts"
import * as Uuid7 from "../Uuid7.ts"

/** Where a session's records go, and what they say of it. */
export interface Recorder {
  readonly sessionId: string
  /** The asking agent's path, joined with `/`. */
  readonly agent: string
  /** The store's approval log, when the session has a store that keeps one. */
  readonly log: ApprovalLog.Service<SessionStoreError> | undefined
  /** From the rules: how long a request stays open. */
  readonly expiresMs: number | undefined
  /** A sub-agent's: its records are put in the log as they are made (its session saves no snapshot of its own). */
  readonly detached?: boolean | undefined
}

/** A new open record for `call`, whose `input` is already redacted. */
export const make = (
  recorder: Recorder,
  runId: string | undefined,
  call: { readonly id: string; readonly name: string },
  input: unknown,
  rule: string
): Effect.Effect<ApprovalRecord.ApprovalRecord> =>
  Effect.flatMap(Uuid7.make, (id) =>
    Effect.map(Clock.currentTimeMillis, (now): ApprovalRecord.ApprovalRecord => ({
      id,
      sessionId: recorder.sessionId,
      ...(runId === undefined || runId === "" ? {} : { runId }),
      agent: recorder.agent,
      callId: call.id,
      tool: call.name,
      input: ApprovalRecord.boundedInput(input),
      rule,
      requestedAt: now,
      ...(recorder.expiresMs === undefined ? {} : { expiresAt: now + recorder.expiresMs })
    })))

/**
 * A request's record, `make`'s, in the log at once when the session is a sub-agent's (its waits are
 * not saved with a snapshot of its own): a log that fails is logged, and the request goes on.
 */
export const opened = (
  recorder: Recorder,
  runId: string | undefined,
  call: { readonly id: string; readonly name: string },
  input: unknown,
  rule: string,
  asked?: Tool.Asked | undefined
): Effect.Effect<ApprovalRecord.ApprovalRecord> => {
  const plain = make(recorder, runId, call, input, rule)
  // A tool asking mid-call says what it is about to do.
  const made = asked === undefined ? plain : Effect.map(plain, (record) => ({
    ...record,
    summary: ApprovalRecord.boundedText(asked.summary),
    ...(asked.details === undefined ? {} : { details: ApprovalRecord.boundedText(asked.details) })
  }))
  const log = recorder.log
  if (recorder.detached !== true || log === undefined) return made
  return Effect.tap(made, (record) =>
    Effect.catchTag(log.put([record]), "SessionStoreError", (error) => Effect.logWarning(`Session ${recorder.sessionId}: approval ${record.id} not recorded: ${error.message}`)))
}

/** What an `ApprovalRequested` says of a request a tool made mid-call: its summary and details. */
export const asked = (record: ApprovalRecord.ApprovalRecord): { readonly summary?: string; readonly details?: string } =>
  record.summary === undefined ? {} : record.details === undefined ? { summary: record.summary } : { summary: record.summary, details: record.details }

/** How an answer is recorded: its outcome, and who gave it when no person did. */
export const outcomeOf = (answer: Approval.Answer): { readonly outcome: ApprovalRecord.Outcome; readonly by?: string } => {
  switch (answer._tag) {
    case "Approved":
      return { outcome: "approved" }
    case "Denied":
      return { outcome: "denied" }
    case "Expired":
      return { outcome: "expired", by: answer.at === undefined ? "timeout" : "expiry" }
  }
}

/** The answer a call gets for a record answered in the log; `undefined` for one still open. */
export const answerOf = (record: ApprovalRecord.ApprovalRecord): Approval.Answer | undefined => {
  switch (record.outcome) {
    case undefined:
      return undefined
    case "approved":
      return { _tag: "Approved" }
    case "denied":
      return { _tag: "Denied", reason: record.reason }
    case "expired":
      return { _tag: "Expired", timeoutMs: 0, at: record.expiresAt ?? record.answeredAt ?? record.requestedAt }
    case "aborted":
      return { _tag: "Denied", reason: "the request was ended without an answer" }
  }
}

/**
 * Records `answer` to `record` in `log`: the answer the call gets — `answer` itself, its expiry
 * when it came past the deadline (recorded so), or the one the log already had (another process
 * answered first: `first`). A log that fails is logged and `answer` stands: the store is behind,
 * as after any failed save.
 */
export const take = (
  log: ApprovalLog.Service<SessionStoreError>,
  record: ApprovalRecord.ApprovalRecord,
  answer: Approval.Answer,
  by: ApprovalRecord.By | undefined
): Effect.Effect<{ readonly answer: Approval.Answer; readonly first?: ApprovalRecord.ApprovalRecord | undefined }> => {
  const { outcome, by: who } = outcomeOf(answer)
  const given: ApprovalRecord.By = {
    by: by?.by ?? who,
    reason: by?.reason ?? (answer._tag === "Denied" ? answer.reason : undefined)
  }
  return Effect.flatMap(Clock.currentTimeMillis, (now) =>
    log.answer(record.id, outcome, now, given).pipe(
      Effect.as({ answer }),
      Effect.catchTag("ApprovalRefused", (refused) => {
        // Too late: the request expired before this answer came, and the call reads so.
        if (refused.reason === "expired") {
          const expiry: Approval.Answer = { _tag: "Expired", timeoutMs: 0, at: record.expiresAt ?? now }
          return take(log, record, expiry, undefined)
        }
        const recorded = refused.record === undefined ? undefined : answerOf(refused.record)
        // Unknown to the log (a save that failed, a store emptied): this answer stands.
        return Effect.succeed(recorded === undefined ? { answer } : { answer: recorded, first: refused.record })
      }),
      Effect.catchTag("SessionStoreError", (error) =>
        Effect.as(Effect.logWarning(`Session ${record.sessionId}: approval ${record.id} not recorded: ${error.message}`), { answer }))
    ))
}

/** Records that `record`'s run ended before anyone answered it (an abort): best effort, as `take`. */
export const end = (log: ApprovalLog.Service<SessionStoreError>, record: ApprovalRecord.ApprovalRecord, by = "abort"): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    log.answer(record.id, "aborted", now, { by }).pipe(
      Effect.asVoid,
      Effect.catchTag("ApprovalRefused", () => Effect.void),
      Effect.catchTag("SessionStoreError", (error) => Effect.logWarning(`Session ${record.sessionId}: approval ${record.id} not recorded: ${error.message}`))
    ))

/**
 * The session's records the log still has open that no restored call holds (`held`: their ids):
 * a process that died after indexing them and before its snapshot said so, or a run that ended
 * without the log hearing of it. Nothing waits on them: they end as aborted, best effort.
 */
export const orphans = (recorder: Recorder, held: ReadonlySet<string>): Effect.Effect<void> => {
  const log = recorder.log
  if (log === undefined) return Effect.void
  return log.list({ sessionId: recorder.sessionId, status: "open", limit: 1000 }).pipe(
    Effect.flatMap((page) => Effect.forEach(page.records.filter((record) => !held.has(record.id)), (record) => end(log, record, "restart"), { discard: true })),
    Effect.catchTag("SessionStoreError", (error) => Effect.logWarning(`Session ${recorder.sessionId}: approvals not read: ${error.message}`))
  )
}

/**
 * What the log says now of a record a session restored open: answered elsewhere meanwhile, or
 * past its deadline (then recorded expired). `undefined`: still open.
 */
export const settled = (
  log: ApprovalLog.Service<SessionStoreError> | undefined,
  record: ApprovalRecord.ApprovalRecord
): Effect.Effect<Approval.Answer | undefined> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const expired = record.expiresAt !== undefined && record.expiresAt <= now
    const expiry: Approval.Answer = { _tag: "Expired", timeoutMs: 0, at: record.expiresAt }
    if (log === undefined) return Effect.succeed(expired ? expiry : undefined)
    return log.get(record.id).pipe(
      Effect.flatMap((found) => {
        const answered = Option.isSome(found) ? answerOf(found.value) : undefined
        if (answered !== undefined) return Effect.succeed(answered)
        return expired ? Effect.map(take(log, record, expiry, undefined), (taken) => taken.answer) : Effect.undefined
      }),
      Effect.catchTag("SessionStoreError", (error) =>
        Effect.as(Effect.logWarning(`Session ${record.sessionId}: approval ${record.id} not read: ${error.message}`), expired ? expiry : undefined))
    )
  })

/**
 * What runs the session's shadow policies over one call once the rules decided it (`rule`), in a
 * fiber of the session's scope (no call waits for it), each decision a shadow record put in the
 * store's log; `undefined` when no policy is a shadow one or the session keeps no log.
 */
export const observer = (
  recorder: Recorder,
  policies: ReadonlyArray<ApprovalPolicy.ApprovalPolicy>,
  scope: Scope.Scope | undefined,
  runId: string,
  redact: (text: string) => string
): ((call: Executor.Call, args: unknown, context: Tool.Context, rule: string) => Effect.Effect<void>) | undefined => {
  const shadows = policies.filter((policy) => policy.shadow === true)
  const log = recorder.log
  if (shadows.length === 0 || log === undefined || scope === undefined) return undefined
  return (call, args, context, rule) => {
    const seen: ApprovalPolicy.Call = { tool: call.name, input: args, sessionId: context.sessionId, agent: context.agent, assigns: context.assigns }
    const input = Redactor.redactValue(redact, call.input)
    const observed = Effect.forEach(shadows, (policy) =>
      Effect.flatMap(ApprovalPolicy.decideSafely(policy, seen), (decision) =>
        Effect.map(make(recorder, runId, call, input, rule), (record): ReadonlyArray<ApprovalRecord.ApprovalRecord> =>
          decision === undefined ? [] : [{
            ...record,
            answeredAt: record.requestedAt,
            shadow: { policy: policy.name, decision: decision.decision, ...(decision.reason === undefined ? {} : { reason: ApprovalRecord.boundedText(decision.reason) }) }
          }])))
    const put = Effect.flatMap(observed, (records) => {
      const all = records.flat()
      return all.length === 0 ? Effect.void : log.put(all)
    })
    return Effect.asVoid(Effect.forkIn(
      Effect.catchTag(put, "SessionStoreError", (error) => Effect.logWarning(`Session ${recorder.sessionId}: shadow decisions not recorded: ${error.message}`)),
      scope
    ))
  }
}

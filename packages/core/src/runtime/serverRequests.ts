/**
 * serverRequests — what a session's tool sources (MCP servers) ask of its user while it lives:
 * approvals of a server's sampling request, and questions (elicitation).
 *
 * An approval is published as `ApprovalRequested` (its call id fresh, its tool what the source
 * names) and answered with `session.approve` / `deny`, as a tool call's is; the session's approval
 * timeout applies. A question goes to the session's elicitation handler when it has one;
 * otherwise it is published as `ElicitationRequested` and answered with `session.respond`, whose
 * accepted values are checked by the source's `validate` (a misfit fails the `respond`, and the
 * question goes on waiting). Nobody reading the session's events and no handler: the question is
 * refused at once (`Unanswerable`). Each wait is a `Deferred`, plus a timer only when a timeout is
 * set, and ends with the run that was running when it was asked (an abort ends it): a question is
 * then cancelled, an approval denied. Whatever ends a wait forgets it. A stopped session (its
 * scope closing or closed) lists none and refuses every answer (`NotPending`, `stopped`): its
 * servers' requests end with it (docs/decisions/0080). Made only for a session with MCP servers,
 * by its start; the tool calls' approvals stay in `approvals.ts`.
 */
import { Deferred, Duration, Effect, Exit, Option } from "effect"
import * as Approval from "../Approval.ts"
import * as Elicitation from "../Elicitation.ts"
import * as Redactor from "../Redactor.ts"
import * as uuid7 from "../Uuid7.ts"
import type { Publisher, Run } from "./Run.ts"

/** What the requests need of their session: its actor. */
export interface Host extends Publisher {
  /** The run running now, if one is. */
  readonly current: Run | undefined
  /** Whether anyone reads the session's events now: the running run's stream, or an observer. */
  readonly observed: boolean
  readonly redact: (text: string) => string
  /** The session has stopped, or its scope is closing. */
  readonly stopped: boolean
}

interface Waiting<A> {
  readonly id: string
  readonly answer: Deferred.Deferred<A>
}

interface ApprovalWaiting extends Waiting<Approval.Answer> {
  readonly pending: Approval.Pending
}

interface Question extends Waiting<Elicitation.Answer> {
  readonly validate: (content: Elicitation.Content) => string | undefined
}

/** Why an approval asked in a run that ended was not given. */
export const RUN_ENDED = "the run that was running when it was asked has ended"

const ended: Approval.Answer = Approval.denied(RUN_ENDED)

/** The session's waiting server requests, in the order they were asked. */
export class ServerRequests {
  readonly #sessionId: string
  readonly #host: Host
  readonly #handler: Elicitation.Handler | undefined
  readonly #questionMs: number | undefined
  readonly #approvalMs: number | undefined
  #approvals: Array<ApprovalWaiting> = []
  #questions: Array<Question> = []

  constructor(sessionId: string, host: Host, elicitation: Elicitation.Options | undefined, approvalTimeoutMs: number | undefined) {
    this.#sessionId = sessionId
    this.#host = host
    this.#handler = elicitation?.handler
    this.#questionMs = elicitation?.timeout === undefined ? undefined : Duration.toMillis(Duration.fromInputUnsafe(elicitation.timeout))
    this.#approvalMs = approvalTimeoutMs
  }

  /** The approvals waiting, in the order they were asked; none once the session has stopped. */
  get pending(): ReadonlyArray<Approval.Pending> {
    return this.#host.stopped ? [] : this.#approvals.map((waiting) => waiting.pending)
  }

  /**
   * Asks a person whether the source may do `tool` with `input` (an `ApprovalRequested` event),
   * and waits for the answer: the session's approval timeout expires it, the end of the run
   * running now denies it.
   */
  approve(request: { readonly tool: string; readonly input: unknown }): Effect.Effect<Approval.Answer> {
    return Effect.flatMap(uuid7.make, (id) => {
      const host = this.#host
      const run = host.current
      const input = Redactor.redactValue(host.redact, request.input)
      const waiting: ApprovalWaiting = { id, answer: Deferred.makeUnsafe(), pending: { callId: id, tool: request.tool, input } }
      this.#approvals.push(waiting)
      const timeoutMs = this.#approvalMs
      const expired: Approval.Answer | undefined = timeoutMs === undefined ? undefined : { _tag: "Expired", timeoutMs }
      return host.publish(run, { _tag: "ApprovalRequested", callId: id, tool: request.tool, input }, true).pipe(
        Effect.andThen(wait(waiting.answer, run, ended, timeoutMs, expired)),
        Effect.ensuring(Effect.sync(() => {
          this.#approvals = this.#approvals.filter((w) => w !== waiting)
        }))
      )
    })
  }

  /**
   * Puts a source's question to the program: its handler's answer (checked against the form), or
   * an `ElicitationRequested` event and the `respond` to it. Refused when nobody can answer.
   */
  elicit(request: Elicitation.Request): Effect.Effect<Elicitation.Answer, Elicitation.Unanswerable> {
    return Effect.flatMap(uuid7.make, (id) => {
      const host = this.#host
      const message = host.redact(request.message)
      const handler = this.#handler
      if (handler !== undefined) {
        return Effect.flatMap(handler({ id, server: request.server, message, schema: request.schema }), (answer) => {
          const misfit = answer.action === "accept" ? request.validate(answer.content) : undefined
          return misfit === undefined ? Effect.succeed(answer) : Effect.fail(new Elicitation.Unanswerable({ description: Elicitation.handlerMisfit(misfit) }))
        })
      }
      if (!host.observed) return Effect.fail(new Elicitation.Unanswerable({ description: Elicitation.NOBODY_TO_ASK }))
      const run = host.current
      const question: Question = { id, answer: Deferred.makeUnsafe(), validate: request.validate }
      this.#questions.push(question)
      return host.publish(run, { _tag: "ElicitationRequested", id, server: request.server, message, schema: request.schema }, true).pipe(
        Effect.andThen(wait(question.answer, run, Elicitation.cancel, this.#questionMs, Elicitation.cancel)),
        Effect.ensuring(Effect.sync(() => {
          this.#questions = this.#questions.filter((q) => q !== question)
        }))
      )
    })
  }

  /** Answers one waiting approval; an unknown id, or one answered, fails with `NotPending`. */
  answer(callId: string, answer: Approval.Answer): Effect.Effect<void, Approval.NotPending> {
    return Effect.suspend(() => {
      if (this.#host.stopped) return Effect.fail(new Approval.NotPending({ sessionId: this.#sessionId, callId, stopped: true }))
      const waiting = this.#approvals.find((w) => w.id === callId)
      if (waiting === undefined) return Effect.fail(new Approval.NotPending({ sessionId: this.#sessionId, callId }))
      this.#approvals = this.#approvals.filter((w) => w !== waiting)
      Deferred.doneUnsafe(waiting.answer, Exit.succeed(answer))
      return Effect.void
    })
  }

  /** Gives every waiting approval `answer`. */
  answerAll(answer: Approval.Answer): Effect.Effect<void> {
    return Effect.suspend(() => Effect.forEach(this.#approvals.map((w) => w.id), (id) => Effect.ignore(this.answer(id, answer)), { discard: true }))
  }

  /** Answers one waiting question; accepted values the form does not take fail, and it waits on. */
  respond(id: string, answer: Elicitation.Answer): Effect.Effect<void, Elicitation.NotPending | Elicitation.InvalidAnswer> {
    return Effect.suspend((): Effect.Effect<void, Elicitation.NotPending | Elicitation.InvalidAnswer> => {
      if (this.#host.stopped) return Effect.fail(new Elicitation.NotPending({ sessionId: this.#sessionId, id, stopped: true }))
      const question = this.#questions.find((q) => q.id === id)
      if (question === undefined) return Effect.fail(new Elicitation.NotPending({ sessionId: this.#sessionId, id }))
      const misfit = answer.action === "accept" ? question.validate(answer.content) : undefined
      if (misfit !== undefined) return Effect.fail(new Elicitation.InvalidAnswer({ sessionId: this.#sessionId, id, description: misfit }))
      this.#questions = this.#questions.filter((q) => q !== question)
      Deferred.doneUnsafe(question.answer, Exit.succeed(answer))
      return Effect.void
    })
  }
}

/** Waits for `answer`: `onEnd` once `run` has ended, `onTimeout` after `timeoutMs`. */
const wait = <A>(
  answer: Deferred.Deferred<A>,
  run: Run | undefined,
  onEnd: A,
  timeoutMs: number | undefined,
  onTimeout: A | undefined
): Effect.Effect<A> => {
  const answered = run === undefined ? Deferred.await(answer) : Effect.raceFirst(Deferred.await(answer), Effect.as(Effect.exit(Deferred.await(run.done)), onEnd))
  return timeoutMs === undefined || onTimeout === undefined
    ? answered
    : Effect.map(Effect.timeoutOption(answered, timeoutMs), Option.getOrElse(() => onTimeout))
}

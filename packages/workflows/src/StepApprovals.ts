/**
 * StepApprovals — who answers when a tool call of an agent step waits for a person (docs/approvals.md):
 * the step's `approvals` rules, or a caller's tool flagged `needsApproval`, make a call ask; the
 * run's `approve` answerer says yes or no (the CLI asks on its terminal, or follows `--approve`).
 * A run given no answerer cannot ask anyone: the step fails at the first request, naming the
 * tool, instead of waiting forever (docs/decisions/0060). (Not core's approvals, a session's
 * waiting calls: an agent step's session asks, and this answers for the run.)
 */
import type { Approval } from "@condukt/core"
import { Effect, Schema } from "effect"

/**
 * A call of an agent step waiting for an answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly step: string
  readonly callId: string
  readonly tool: string
  readonly input: unknown
}

/**
 * Nobody can answer `request`: the step fails with `description`.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unanswered extends Schema.TaggedError<Unanswered>()("ApprovalUnanswered", {
  step: Schema.String,
  callId: Schema.String,
  tool: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return this.description
  }
}

/**
 * Answers one request: an approval or a denial (the model reads its reason), or `Unanswered`.
 *
 * @since 0.1.0
 * @category models
 */
export type Answerer = (request: Request) => Effect.Effect<Approval.Answer, Unanswered>

/**
 * The answerer of a run given none: every request fails its step.
 *
 * @since 0.1.0
 * @category constructors
 */
export const nobody: Answerer = (request) =>
  Effect.fail(
    new Unanswered({
      ...request,
      description: `${request.tool} (call ${request.callId}) needs approval and nobody can answer: give the run an \`approve\` answerer`
    })
  )

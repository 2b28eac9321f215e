/**
 * answer — the typed answer of a run given an `output` Schema (docs/sessions.md, Typed answers).
 *
 * On the native path (a model that takes the Schema itself) the final reply's text is the answer;
 * on the submit path the model answers by calling `submit`, and a final reply without that call
 * is no answer. An answer that does not decode is sent back to the model with the reason, up to
 * the run's `outputRetries` (default 2) corrections counted by the loop, then the run fails with
 * `OutputInvalid`. A reply that calls `submit` has its other calls run first (they may not park);
 * a decoded answer ends the run with the call's result recorded, so the history stays one a
 * provider accepts; one that does not is the call's error result, and the model goes on.
 */
import { Effect, Result } from "effect"
import type * as Executor from "../Executor.ts"
import * as Loop from "../Loop.ts"
import * as Output from "../Output.ts"
import * as Redactor from "../Redactor.ts"
import { OutputInvalid, SessionError } from "../SessionError.ts"
import * as Batch from "./batch.ts"
import type { Conversation } from "./Conversation.ts"
import type { Publisher, Run } from "./Run.ts"

/** What the run's step does next: the loop's step to interpret, or the run's end. */
/** `save`: the step completed a turn, saved before it is taken. */
export type Next = { readonly _tag: "Step"; readonly step: Loop.Step; readonly save: boolean } | { readonly _tag: "Complete"; readonly state: Loop.State; readonly text: string; readonly value: unknown }

const retriesOf = (run: Run) => run.options?.outputRetries ?? Output.DEFAULT_MAX_RETRIES

/** The call of `calls` that submits the answer, when the run wants one on the submit path. */
export const submitCall = <R>(conversation: Conversation<R>, run: Run, calls: ReadonlyArray<Executor.Call>): Executor.Call | undefined =>
  run.options?.output === undefined || conversation.model.nativeOutput === true ? undefined : calls.find((call) => call.name === Output.SUBMIT_TOOL)

/** A final reply of a run that wants a typed answer: decoded, or sent back with why, or the run fails. */
export const decide = <R>(conversation: Conversation<R>, run: Run, state: Loop.State, text: string, output: Output.Output): Effect.Effect<Next, SessionError> => {
  const native = conversation.model.nativeOutput === true
  const decoded = native ? Output.parse(output, text) : Result.fail(Output.SUBMIT_REQUIRED)
  if (Result.isSuccess(decoded)) return Effect.succeed({ _tag: "Complete", state, text, value: decoded.success })
  const retries = state.progress?.retries ?? 0
  if (retries >= retriesOf(run)) return invalid(conversation, text, decoded.failure, retries)
  return Effect.succeed({ _tag: "Step", step: Loop.correct(state, native ? Output.retryPrompt(decoded.failure) : decoded.failure), save: false })
}

/** A reply that calls `submit`: its other calls run, then the answer decodes. */
export const submitted = <R>(
  conversation: Conversation<R>,
  events: Publisher,
  run: Run,
  state: Loop.State,
  calls: ReadonlyArray<Executor.Call>,
  submit: Executor.Call,
  output: Output.Output
): Effect.Effect<Next, SessionError, R> => {
  const others = calls.filter((call) => call !== submit)
  // The submit call is answered here, after the others: they may not park.
  const ran = others.length === 0
    ? Effect.succeed<ReadonlyArray<Executor.Result>>([])
    : Effect.map(Batch.run(conversation, events, run, others, { parks: false }), (outcome) => (Batch.isParked(outcome) ? [] : outcome))
  return Effect.flatMap(ran, (results): Effect.Effect<Next, SessionError> => {
    const decoded = Output.decode(output, submit.input)
    const content = Result.isSuccess(decoded) ? Output.SUBMITTED : Output.retryPrompt(decoded.failure)
    const outputs = [...results, { callId: submit.id, content, isError: Result.isFailure(decoded) }]
    const announced = Effect.andThen(
      events.publish(run, { _tag: "ToolCall", callId: submit.id, name: submit.name, input: Redactor.redactValue(conversation.redact, submit.input) }, true),
      events.publish(run, { _tag: "ToolResult", callId: submit.id, name: submit.name, content, isError: Result.isFailure(decoded) }, true)
    )
    const retries = state.progress?.retries ?? 0
    if (Result.isFailure(decoded) && retries < retriesOf(run)) {
      return Effect.as(announced, { _tag: "Step", step: Loop.receiveToolOutputs(state, outputs, true), save: true } satisfies Next)
    }
    // Arguments that were not JSON arrive as their raw text.
    const reply = typeof submit.input === "string" ? submit.input : JSON.stringify(submit.input) ?? ""
    // The run ends here: the loop is idle again, at the turn of this reply, the results saved.
    const step = Loop.finish(state, outputs, reply)
    // A prompt queued behind a restored batch goes on from here: the loop asked for its first turn.
    if (Result.isSuccess(decoded) && !(step._tag === "Next" && step.action._tag === "Complete")) return Effect.as(announced, { _tag: "Step", step, save: true } satisfies Next)
    conversation.loop = step.state
    const settled = Effect.andThen(announced, conversation.commit())
    return Result.isSuccess(decoded)
      ? Effect.as(settled, { _tag: "Complete", state: step.state, text: reply, value: decoded.success } satisfies Next)
      : Effect.andThen(settled, invalid(conversation, reply, decoded.failure, retries))
  })
}

const invalid = <R>(conversation: Conversation<R>, reply: string, error: string, retries: number) =>
  Effect.fail(new SessionError({ sessionId: conversation.id, reason: new OutputInvalid({ reply: conversation.redact(reply), error: conversation.redact(error), retries }) }))

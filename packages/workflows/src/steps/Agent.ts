/**
 * Agent — an `agent` step: one anonymous `Condukt.run` on the run's sandbox, with the step's model
 * (else the run's), tools by id from the run's registry (MCP ids included), `system`, and `input`
 * as the prompt (JSON-encoded unless a string). With `output_schema` (imported by Effect's JSON
 * Schema importer) the run asks for a typed answer (`Condukt.run`'s `output`: the provider's native
 * mechanism, else a submit tool), and the decoded answer is the step's output. The result is
 * `{ ok: true, output }`; any failure fails the run (`AgentFailed`).
 * When the run has a listener, the step reports each model turn (with the tokens so far) and each
 * tool call as it starts and ends. A call its `approvals` rules (or the tool) make wait is
 * reported and handed to the run's answerer; an answerer that cannot answer aborts the run and
 * fails the step with its description.
 */
import { Approval, type Output, Sandbox, type Session, type SessionEvent } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { Clock, Effect, JsonSchema, Layer, SchemaRepresentation } from "effect"
import type * as StepApprovals from "../StepApprovals.ts"
import type * as Expression from "../Expression.ts"
import type * as Document from "../Document.ts"
import * as WorkflowEvent from "../WorkflowEvent.ts"
import { failed, type Fields, type StepContext } from "./StepContext.ts"

/**
 * The session's events as the step's: turns and tool calls, named by `step`. Its state (the tokens
 * so far, when each call started) lives as long as the step's one run.
 */
const progress = (step: string, emit: (event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) => {
  let tokensSoFar = 0
  const started = new Map<string, number>()
  return (event: SessionEvent.SessionEvent): Effect.Effect<void> => {
    switch (event._tag) {
      case "TurnStart":
        return Effect.flatMap(Clock.currentTimeMillis, (at) => emit(new WorkflowEvent.TurnStarted({ step, at, turn: event.turn })))
      case "TurnEnd": {
        const { usage } = event
        tokensSoFar += usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0) + usage.outputTokens
        return Effect.flatMap(Clock.currentTimeMillis, (at) =>
          emit(
            new WorkflowEvent.TurnFinished({
              step,
              at,
              turn: event.turn,
              inputTokens: usage.inputTokens,
              outputTokens: usage.outputTokens,
              tokensSoFar
            })
          ))
      }
      case "ToolCall":
        return Effect.flatMap(Clock.currentTimeMillis, (at) => {
          started.set(event.callId, at)
          return emit(new WorkflowEvent.ToolStarted({ step, at, callId: event.callId, tool: event.name }))
        })
      case "ToolResult":
        return Effect.flatMap(Clock.currentTimeMillis, (at) =>
          emit(
            new WorkflowEvent.ToolFinished({
              step,
              at,
              callId: event.callId,
              tool: event.name,
              durationMs: at - (started.get(event.callId) ?? at),
              ok: !event.isError
            })
          ))
      default:
        return Effect.void
    }
  }
}

/**
 * Each `ApprovalRequested` reported and answered by `approve`; the first request nobody can answer
 * is kept in `unanswered` and aborts the run (which would otherwise wait forever).
 */
const answering = (
  step: string,
  approve: StepApprovals.Answerer,
  emit: ((event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) | undefined,
  unanswered: { value: StepApprovals.Unanswered | undefined }
) =>
(event: SessionEvent.ApprovalRequested, session: Session.Session): Effect.Effect<void> => {
  const request = { step, callId: event.callId, tool: event.tool, input: event.input }
  const report = emit === undefined
    ? Effect.void
    : Effect.flatMap(Clock.currentTimeMillis, (at) => emit(new WorkflowEvent.ApprovalRequested({ ...request, at })))
  return report.pipe(
    Effect.andThen(approve(request)),
    Effect.flatMap((answer) => answer._tag === "Approved" ? session.approve(event.callId) : session.deny(event.callId, answer._tag === "Denied" ? answer.reason : Approval.render(answer))),
    // Answered meanwhile (an abort, a timeout): nothing is waiting any more.
    Effect.catchTag("ApprovalNotPending", () => Effect.void),
    Effect.catchTag("ApprovalUnanswered", (error) => {
      unanswered.value ??= error
      return session.abort
    })
  )
}

/** @since 0.1.0 @category constructors */
export const run = Effect.fnUntraced(function*(id: string, fields: Fields, context: StepContext) {
  const model = typeof fields["model"] === "string" ? fields["model"] : context.model
  if (model === undefined) {
    return yield* failed("AgentFailed", id, "no model: set model on the step, in the runtime block, or with --model")
  }
  const ids = (fields["tools"] ?? []) as ReadonlyArray<string>
  const unknown = ids.filter((name) => !context.tools.has(name))
  if (unknown.length > 0) {
    return yield* failed("AgentFailed", id, `unknown tools ${unknown.join(", ")}; the tools here are ${[...context.tools.keys()].sort().join(", ")}`)
  }
  const input = fields["input"]
  const schema = fields["output_schema"]
  const output = schema === undefined ? undefined : yield* Effect.try({
    // An imported schema needs no service to decode.
    try: () => SchemaRepresentation.fromJsonSchemaDocument(JsonSchema.fromSchemaDraft2020_12(schema as JsonSchema.JsonSchema)) as Output.Output,
    catch: (cause) => failed("AgentFailed", id, `output_schema cannot be used: ${cause instanceof Error ? cause.message : String(cause)}`)
  })
  const system = typeof fields["system"] === "string" && fields["system"] !== "" ? fields["system"] : undefined
  const rules = fields["approvals"] as (typeof Document.AgentStep.Type)["approvals"]
  const report = context.onEvent === undefined ? undefined : progress(id, context.onEvent)
  const unanswered: { value: StepApprovals.Unanswered | undefined } = { value: undefined }
  const answer = answering(id, context.approve, context.onEvent, unanswered)
  const exit = yield* Effect.exit(
    Condukt.run(typeof input === "string" ? input : JSON.stringify(input), {
      name: id,
      model,
      system,
      output,
      tools: ids.map((name) => context.tools.get(name)!),
      sandbox: Layer.succeed(Sandbox.Sandbox, context.sandbox),
      approvals: rules === undefined ? undefined : { ...rules, timeout: rules.timeout === undefined ? undefined : rules.timeout * 1000 },
      onEvent: (event, session) =>
        event._tag === "ApprovalRequested"
          ? answer(event, session)
          : report === undefined
          ? Effect.void
          : report(event)
    })
  )
  if (unanswered.value !== undefined) return yield* failed("AgentFailed", id, unanswered.value.description, unanswered.value)
  const result = yield* Effect.mapError(exit, (error) => failed("AgentFailed", id, error.message, error))
  return { ok: true, output: output === undefined ? result.text : result.value as Expression.Value }
})

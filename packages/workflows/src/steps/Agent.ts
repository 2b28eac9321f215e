/**
 * Agent — an `agent` step: one anonymous `Condukt.run` on the run's sandbox, with the step's model
 * (else the run's), tools by id from the run's registry (MCP ids included), `system`, and `input`
 * as the prompt (JSON-encoded unless a string). With `output_schema` (imported by Effect's JSON
 * Schema importer) the run asks for a typed answer (`Condukt.run`'s `output`: the provider's native
 * mechanism, else a submit tool), and the decoded answer is the step's output. The result is
 * `{ ok: true, output }`; any failure fails the run (`AgentFailed`).
 * When the run has a listener, the step reports each model turn (with the tokens so far) and each
 * tool call as it starts and ends. A call its approval rules (the workflow's `approval` block
 * joined with the step's `approvals`: internal/approvalRules.ts), or the tool, make wait is
 * reported and answered by the run's answerer, which the step's session is given (`answerer`),
 * one call at a time; an answerer that cannot answer fails the session's run, and the step with
 * its description.
 */
import { type Approval, type Output, Sandbox, type SessionEvent } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { Clock, Deferred, Effect, Exit, JsonSchema, Layer, SchemaRepresentation, Semaphore } from "effect"
import type * as Expression from "../Expression.ts"
import type * as Document from "../Document.ts"
import * as ApprovalRules from "../internal/approvalRules.ts"
import * as WorkflowEvent from "../WorkflowEvent.ts"
import { failed, type Fields, type StepContext } from "./StepContext.ts"

/**
 * The session's events as the step's: turns and tool calls, named by `step`. Its state (the tokens
 * so far, when each call started) lives as long as the step's one run. `seen` hears of each
 * approval request as it comes by (the answerer reports it).
 */
const progress = (step: string, emit: (event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>, seen: (callId: string) => void) => {
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
      case "ApprovalRequested":
        return Effect.sync(() => seen(event.callId))
      default:
        return Effect.void
    }
  }
}

/**
 * The run's answerer as the step's session asks it, and what the step's events are reported with.
 * It is asked about one call at a time, in the order they asked (a person at one terminal answers
 * one question at a time). With a listener, each request is reported just before it is asked, once
 * the session's events were reported up to it (after its call's `ToolStarted`).
 */
const asking = (step: string, approve: Approval.Answerer, emit: ((event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) | undefined) => {
  const one = Semaphore.makeUnsafe(1)
  if (emit === undefined) return { answerer: (request: Approval.Request) => Semaphore.withPermit(one, approve(request)), onEvent: undefined }
  const seen = new Map<string, Deferred.Deferred<void>>()
  const seenOf = (callId: string) => {
    const known = seen.get(callId)
    if (known !== undefined) return known
    const made = Deferred.makeUnsafe<void>()
    seen.set(callId, made)
    return made
  }
  const report = (request: Approval.Request) =>
    Effect.flatMap(Clock.currentTimeMillis, (at) =>
      emit(new WorkflowEvent.ApprovalRequested({ step, at, callId: request.callId, tool: request.tool, input: request.input })))
  return {
    answerer: (request: Approval.Request) =>
      Semaphore.withPermit(one, Deferred.await(seenOf(request.callId)).pipe(Effect.andThen(report(request)), Effect.andThen(approve(request)))),
    onEvent: progress(step, emit, (callId) => Deferred.doneUnsafe(seenOf(callId), Exit.void))
  }
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
  const rules = ApprovalRules.forStep(context.approval, fields["approvals"] as Document.ApprovalRules | undefined)
  const asked = asking(id, context.approve, context.onEvent)
  const exit = yield* Effect.exit(
    Condukt.run(typeof input === "string" ? input : JSON.stringify(input), {
      name: id,
      model,
      system,
      output,
      tools: ids.map((name) => context.tools.get(name)!),
      sandbox: Layer.succeed(Sandbox.Sandbox, context.sandbox),
      approvals: rules,
      // The session is named after the step: a request's `agent` is the step's id.
      answerer: asked.answerer,
      onEvent: asked.onEvent
    })
  )
  const result = yield* Effect.mapError(exit, (error) =>
    error._tag === "SessionError" && error.reason._tag === "ApprovalUnanswered"
      ? failed("AgentFailed", id, error.reason.description, error.reason)
      : failed("AgentFailed", id, error.message, error))
  return { ok: true, output: output === undefined ? result.text : result.value as Expression.Value }
})

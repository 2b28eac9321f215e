/**
 * batch — one message's tool calls: the `RunTools` action performed.
 *
 * The calls are announced (`ToolCall`, their arguments redacted), the secrets each call of a tool
 * that hands them to processes receives are named (`SecretsUsed`, names only), and the executor
 * runs them with the session's tool context (made once, with the sandbox), wrapped by what the
 * session adds: a span per call (callSpans.ts); with a store, each call's start committed before
 * it runs (journal.ts); with approvals, each call that must ask admitted by the session's waiting
 * room (admission.ts, approvals.ts), and a batch with nothing left to do but wait
 * parks: its calls' fibers end, and what finished is handed back for the loop to keep. A call the
 * session's answerer could not answer fails the batch (`ApprovalUnanswered`), its calls' fibers
 * ended. The results are published in the model's order; a batch going on after it parked
 * published its calls already, and its caller publishes all of its results at once.
 */
import { Deferred, Effect } from "effect"
import * as Executor from "../Executor.ts"
import type * as Loop from "../Loop.ts"
import * as Redactor from "../Redactor.ts"
import type { SessionError } from "../SessionError.ts"
import * as Admission from "./admission.ts"
import * as CallSpans from "./callSpans.ts"
import type { Conversation, ToolContext } from "./Conversation.ts"
import * as Journal from "./journal.ts"
import type { Publisher, Run } from "./Run.ts"

/** The calls' results in the model's order, or the batch parked waiting for approval. */
export type Outcome = ReadonlyArray<Executor.Result> | Admission.Parking

/** Whether `outcome` is the batch parked. */
export const isParked = (outcome: Outcome): outcome is Admission.Parking => !Array.isArray(outcome)

/** `f` of each item in order; one item (a turn's usual one call) without a loop around it. */
export const inOrder = <A>(items: ReadonlyArray<A>, f: (item: A, i: number) => Effect.Effect<void>): Effect.Effect<void> =>
  items.length === 1 ? f(items[0]!, 0) : Effect.forEach(items, f, { discard: true })

/** A call's result as its event. */
export const publishResult = (events: Publisher, run: Run, name: string, r: Loop.ToolOutput): Effect.Effect<void> =>
  events.publish(run, {
    _tag: "ToolResult",
    callId: r.callId,
    name,
    content: r.content,
    isError: r.isError,
    ...(r.data === undefined ? {} : { data: r.data })
  }, true)

/**
 * Runs `calls`. Combinators, not a generator: this frame is held for as long as the calls run.
 */
export const run = <R>(
  conversation: Conversation<R>,
  events: Publisher,
  run: Run,
  calls: ReadonlyArray<Executor.Call>,
  options: {
    /** The results of the batch's calls that finished before (a restored or parked batch's). */
    readonly known?: ReadonlyArray<Loop.ToolOutput> | undefined
    /** The calls of a parked run going on: announced already, their results published by the caller. */
    readonly continued?: boolean | undefined
    /** Whether the batch may park (not when the run's step goes on with the results itself: `submit`). */
    readonly parks?: boolean | undefined
  } = {}
): Effect.Effect<Outcome, SessionError, R> => {
  const continued = options.continued === true
  const redact = conversation.redact
  const announced = continued
    ? Effect.void
    : inOrder(calls, (call) => events.publish(run, { _tag: "ToolCall", callId: call.id, name: call.name, input: Redactor.redactValue(redact, call.input) }, true))
  const context = conversation.toolContext()
  const started = conversation.audited === undefined || continued ? context : Effect.andThen(Effect.suspend(() => audit(conversation, events, run, calls)), context)
  // The outcome's step is taken inside the one that starts the calls: a batch waiting on its calls
  // holds that step, not the announcements before it.
  return Effect.flatMap(Effect.andThen(announced, started), (context) => Effect.flatMap(ran(conversation, events, run, calls, options, context), (outcome) => settled(conversation, events, run, outcome, continued)))
}

/** The executor over `calls`, wrapped by what the session adds; or the batch parked. */
const ran = <R>(
  conversation: Conversation<R>,
  events: Publisher,
  run: Run,
  calls: ReadonlyArray<Executor.Call>,
  options: { readonly known?: ReadonlyArray<Loop.ToolOutput> | undefined; readonly parks?: boolean | undefined },
  context: ToolContext
): Effect.Effect<Executor.Outcome | Admission.Parking, SessionError, R> => {
  const known = options.known?.map(({ callId, content, isError }) => ({ callId, content, isError })) ?? []
  const approvals = conversation.approvals
  // With a store, each call's start is committed before it runs (journal.ts).
  const journal = conversation.persistence === undefined
    ? undefined
    : new Journal.Journal((batchOf) => conversation.saveBatch(batchOf), () => approvals?.waiting ?? [], known)
  const executor = conversation.tools.executor
  const journaled = journal === undefined ? undefined : Journal.wrapper<R>(journal)
  // Spans only when the run's tracer exports them: an untraced call carries no wrapper for them.
  const spans = run.traced === true ? CallSpans.wrapper<R>() : undefined
  if (approvals === undefined) return executor.run(calls, context, conversation.assigns, Executor.compose(spans, journaled))
  const gate = approvals.gate(events, run, calls.length, known, options.parks !== false, journal?.running)
  const refused = gate.refused
  // Refused by the answerer while it was parked: it goes on only to fail, before any call runs.
  if (refused !== undefined && Deferred.isDoneUnsafe(refused)) return Deferred.await(refused)
  const wrapper = Executor.compose(spans, journaled, Admission.admission<R>(gate, executor.flagged))
  // A tool declared `asks` asks through the waiting room while it runs.
  const asking = { ...context, asker: Admission.asker((call, asked) => approvals.askWhileRunning(events, run, call, asked)) }
  const running = executor.run(calls, asking, conversation.assigns, wrapper)
  // Parked: the calls' fibers end; the batch waits without them (approvals.ts).
  const parking = gate.parked === undefined ? running : Effect.raceFirst(running, Deferred.await(gate.parked))
  // Refused: the calls' fibers end, and the run fails with why.
  return refused === undefined ? parking : Effect.raceFirst(parking, Deferred.await(refused))
}

/** The batch's outcome kept: the assigns its calls set, its results published in order (unless its caller publishes them). */
const settled = <R>(conversation: Conversation<R>, events: Publisher, run: Run, outcome: Executor.Outcome | Admission.Parking, continued: boolean): Effect.Effect<Outcome> => {
  if ("finished" in outcome) {
    conversation.assign(outcome.patches)
    return Effect.succeed(outcome)
  }
  conversation.assigns = outcome.assigns
  return continued ? Effect.succeed(outcome.results) : Effect.as(inOrder(outcome.results, (r) => publishResult(events, run, r.name, r)), outcome.results)
}

/** The secrets each call of a tool that hands them to processes receives (names only), after the announcements. */
const audit = <R>(conversation: Conversation<R>, events: Publisher, run: Run, calls: ReadonlyArray<Executor.Call>): Effect.Effect<void> => {
  const audited = conversation.audited
  if (audited === undefined) return Effect.void
  return Effect.forEach(calls, (call) =>
    audited.tools.has(call.name)
      ? events.publish(run, { _tag: "SecretsUsed", callId: call.id, name: call.name, secrets: audited.secrets }, true)
      : Effect.void, { discard: true })
}

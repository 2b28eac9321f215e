/**
 * interpreter — a run of a session: the pure `Loop` interpreted over its `Conversation`.
 *
 * One action out of the loop, its effect performed by the module that owns it (a model request:
 * turn.ts; a batch of calls: batch.ts; a typed answer: answer.ts; the run's end: result.ts), its
 * outcome fed back as the loop's next input, until the loop completes the run, fails it or parks
 * it waiting for a person's answer (`Wait`: the run holds no fiber, and the first answer has the
 * actor drive it again, the loop going on with `proceed`). Only `interpret` takes the next step;
 * every step's events are published through the actor as they happen, and every completed turn is
 * saved before the next step (`feed`). Nothing here decides how a run ends: it returns or fails,
 * and the `Actor` settles it.
 */
import { Effect } from "effect"
import * as Agent from "../Agent.ts"
import type * as Executor from "../Executor.ts"
import * as Loop from "../Loop.ts"
import * as ProjectInstructions from "../ProjectInstructions.ts"
import { MaxTurnsExceeded, type RunError, SessionError } from "../SessionError.ts"
import type * as Tool from "../Tool.ts"
import * as Answer from "./answer.ts"
import * as Batch from "./batch.ts"
import { ABORTED_RESULT, type Conversation, PARKED, type Parked } from "./Conversation.ts"
import * as Journal from "./journal.ts"
import * as Persistence from "./persistence.ts"
import * as Result from "./result.ts"
import type { Publisher, Run, RunResult } from "./Run.ts"
import * as SubAgents from "./subAgents.ts"
import * as ToolSet from "./toolSet.ts"
import * as Turn from "./turn.ts"

/**
 * A run: the loop interpreted to its end, or until its batch parks. Combinators, not a
 * generator: a run waiting on its model or its tools holds this frame all along.
 */
export const drive = <R>(c: Conversation<R>, events: Publisher, run: Run): Effect.Effect<RunResult | Parked, RunError, R> => {
  const started = Effect.suspend(() => {
    if (c.persistence !== undefined) c.options = Persistence.savedOptions(run.options)
    const step = first(c, run)
    return step === undefined ? Effect.succeed(Result.empty) : interpret(c, events, run, step)
  })
  const driven = c.instructions ? Effect.andThen(readInstructions(c), started) : started
  // The sub-agents its calls start work under the session and report into this run (only an
  // agent with a sub-agent tool pays for the host and the context that carries it).
  return c.agent.tools.some(isSubAgent)
    ? Effect.provideService(driven, Agent.SubAgentHost, new SubAgents.Host(c.scope, c.agent.mcpServers, c.sources, c.known, c.redact, events, run, c.persistence?.store.approvals))
    : driven
}

/**
 * A run's first step: its prompt, or the batch the loop holds first (parked, or restored from
 * the store, its calls asking again), then the prompt. A run that only continues a batch
 * (`Run.resume`) with none left has nothing to do.
 */
const first = <R>(c: Conversation<R>, run: Run): Loop.Step | undefined => {
  const restored = c.restored
  if (restored !== undefined) {
    // The batch the store held is resolved once: what finished keeps its result, what was cut off reads so (journal.ts).
    c.restored = undefined
    const resolved = Journal.resolve(c.loop.pending, restored, (name) => ToolSet.retrySafe(c.agent, c.tools, name), ABORTED_RESULT)
    c.loop = Loop.restore(c.loop, [...restored.results, ...resolved.outputs], false, Persistence.savedLoop(restored.run))
  }
  // A parked run going on, or a run continuing a restored batch, has no prompt of its own to submit.
  const prompt = run.resume === true || run.continues === true ? undefined : run.prompt
  if (Loop.hasBatch(c.loop)) return Loop.proceed(c.loop, prompt)
  return prompt === undefined ? undefined : Loop.submit(c.loop, prompt)
}

/** One step of the loop: its state becomes the session's, then its action is performed and its outcome fed back. */
const interpret = <R>(c: Conversation<R>, events: Publisher, run: Run, step: Loop.Step): Effect.Effect<RunResult | Parked, RunError, R> => {
  c.loop = step.state
  if (step._tag === "Rejected") {
    if (step.reason === "MaxTurnsExceeded") return Effect.fail(new SessionError({ sessionId: c.id, reason: new MaxTurnsExceeded({ maxTurns: step.state.maxTurns }) }))
    return Effect.die(new Error(`Session ${c.id}: the loop rejected its own input (${step.reason})`))
  }
  const state = step.state
  const action = step.action
  switch (action._tag) {
    case "Request": {
      const tools = c.sources.length === 0
        ? Effect.void
        : Effect.map(ToolSet.refresh(c.agent, c.tools, c.sources, c.redact), (tools) => {
          c.tools = tools
        })
      return tools.pipe(
        Effect.andThen(Effect.suspend(() => Turn.request(c, events, run, action.request, action.turn))),
        Effect.flatMap((reply) => feed(c, events, run, Loop.receiveCompletion(state, reply.message, Turn.shown(c.redact), reply), true))
      )
    }
    case "RunTools": {
      const submit = Answer.submitCall(c, run, action.calls)
      if (submit !== undefined) return Effect.flatMap(Answer.submitted(c, events, run, state, action.calls, submit, run.options!.output!), (decided) => next(c, events, run, decided))
      // A parked run going on published its calls before it parked: it publishes all their results now, in order.
      const continued = action.announced === true
      // Built once it runs (a suspension): a run waiting on its calls holds the next step, not these.
      const ran = action.calls.length === 0
        ? Effect.succeed<Batch.Outcome>([])
        : Effect.suspend(() => Batch.run(c, events, run, action.calls, { known: action.known, continued }))
      return Effect.flatMap(ran, (outcome) => {
        if (Batch.isParked(outcome)) return Effect.andThen(showFinished(events, run, action.calls, outcome.finished), Effect.suspend(() => interpret(c, events, run, Loop.park(state, outcome.finished))))
        const byId = new Map<string, Loop.ToolOutput>(state.finished.map((r) => [r.callId, r]))
        for (const result of outcome) byId.set(result.callId, result)
        const outputs = state.pending.map((call) => byId.get(call.id) ?? { callId: call.id, content: ABORTED_RESULT, isError: true })
        const results = Loop.receiveToolOutputs(state, outputs)
        return continued
          ? Effect.andThen(
            Batch.inOrder(state.pending, (call, i) => (run.shown?.has(call.id) === true ? Effect.void : Batch.publishResult(events, run, call.name, outputs[i]!))),
            Effect.suspend(() => feed(c, events, run, results, true))
          )
          : feed(c, events, run, results, true)
      })
    }
    case "Wait":
      return Effect.succeed(PARKED)
    case "Complete": {
      const output = run.options?.output
      if (output === undefined) return Result.complete(c, events, run, state, action.text, undefined)
      return Effect.flatMap(Answer.decide(c, run, state, action.text, output), (decided) => next(c, events, run, decided))
    }
  }
}

/**
 * A batch parks: the results of its calls that finished are published now, in the model's order, so
 * whoever answers the waiting calls sees them (a chat client waits for every other call's output);
 * the run publishes the others when it goes on.
 */
const showFinished = (events: Publisher, run: Run, calls: ReadonlyArray<Executor.Call>, finished: ReadonlyArray<Executor.Result>): Effect.Effect<void> => {
  const byId = new Map(finished.map((result) => [result.callId, result]))
  const fresh = calls.filter((call) => byId.has(call.id) && run.shown?.has(call.id) !== true)
  if (fresh.length === 0) return Effect.void
  const shown = run.shown ??= new Set()
  return Batch.inOrder(fresh, (call) => {
    shown.add(call.id)
    return Batch.publishResult(events, run, call.name, byId.get(call.id)!)
  })
}

/** What a typed answer decided: the run's end, or the loop's next step. */
const next = <R>(c: Conversation<R>, events: Publisher, run: Run, decided: Answer.Next): Effect.Effect<RunResult | Parked, RunError, R> =>
  decided._tag === "Complete" ? Result.complete(c, events, run, decided.state, decided.text, decided.value) : feed(c, events, run, decided.step, decided.save)

/**
 * Feeds the loop's step on: a completed turn (a reply without calls, or every result of a
 * message's calls) is saved first, unless calls of it are still to run (their starts are
 * committed as they start). Mid-run, the model's next turn due, with an empty batch: the run is
 * in flight, and a session resumed from it goes on with it (journal.ts).
 */
const feed = <R>(c: Conversation<R>, events: Publisher, run: Run, step: Loop.Step, save: boolean): Effect.Effect<RunResult | Parked, RunError, R> => {
  if (!save || step.state.status === "AwaitingTools" || c.persistence === undefined) return interpret(c, events, run, step)
  c.loop = step.state
  return Effect.andThen(
    c.commit(step.state.status === "AwaitingCompletion" ? Journal.answered : undefined),
    Effect.suspend(() => interpret(c, events, run, step))
  )
}

/**
 * The project's instructions (AGENTS.md, CLAUDE.md, skills) join the system prompt before the
 * session's first model request. They are read through the sandbox, so the first run builds it:
 * an idle session still holds none.
 */
const readInstructions = <R>(c: Conversation<R>) =>
  Effect.flatMap(c.toolContext(), ({ sandbox }) =>
    Effect.map(ProjectInstructions.load(sandbox), (project) => {
      c.instructions = false
      if (project !== undefined) c.loop = { ...c.loop, system: ProjectInstructions.withProject(c.agent.system, project) }
    }))

const isSubAgent = (tool: Tool.Tool<unknown>) => tool.subAgent === true

/**
 * result — a run's end: what its caller receives, and the compaction after it.
 *
 * A completed run's result holds its final text and finish, its messages (those after its prompt),
 * its tokens (its replies', what its MCP servers sampled while it ran, and its sub-agents'), their
 * cost when the program's price table names the models, and the decoded answer when it was given
 * an `output`. After it, the session's compactor may shorten the idle history (compaction.ts).
 */
import { type Context, Effect } from "effect"
import type * as Loop from "../Loop.ts"
import type { Message } from "../Message.ts"
import * as Model from "../Model.ts"
import * as Usage from "../Usage.ts"
import * as Compaction from "./compaction.ts"
import type { Conversation } from "./Conversation.ts"
import type { Publisher, Run, RunResult } from "./Run.ts"
import * as SubAgents from "./subAgents.ts"

/** An empty run's result: a run that had nothing left to continue. */
export const empty: RunResult = { text: "", finishReason: "other", usage: Model.emptyUsage, turns: 0, messages: [] }

/** The run's end: its result, with the decoded answer when it was given an `output`; then the compaction. */
export const complete = <R>(
  conversation: Conversation<R>,
  events: Publisher,
  run: Run,
  state: Loop.State,
  text: string,
  value: unknown
): Effect.Effect<RunResult> => {
  const progress = state.progress
  const history = state.history
  const messages: Array<Message> = []
  for (let i = progress?.from ?? history.length; i < history.length; i++) messages.push(history.at(i)!)
  // What the session's MCP servers sampled while the run ran counts in it too.
  const spent = progress?.usage ?? Model.emptyUsage
  const usage = run.sampled === undefined ? spent : Model.addUsage(spent, run.sampled)
  // The price table is the program's (read from the run's context, not kept per session).
  return Effect.contextWith((context: Context.Context<never>) => {
    const price = conversation.priceIn(context)
    const result: RunResult = {
      text,
      finishReason: progress?.finishReason ?? "other",
      usage,
      ...(price === undefined ? {} : { cost: Usage.cost(usage, price) }),
      turns: state.turn,
      messages,
      ...(run.options?.output === undefined ? {} : { value })
    }
    return Effect.as(Compaction.afterRun(conversation, events, run), SubAgents.total(result, run, context, conversation.agent.name))
  })
}

/**
 * ToolAsk — a tool asking a person while it runs (`Tool.Context.approve`, issue 39 item 7): what
 * it asks, the refusal a call fails with when the answer is not yes, and the `approve` of a call
 * that cannot ask. `Tool` re-exports all of this.
 */
import { Effect, Schema } from "effect"

/**
 * What a tool asks a person mid-call: what it is about to do, and more when it has more.
 *
 * @since 0.1.0
 * @category models
 */
export interface Asked {
  readonly summary: string
  readonly details?: string | undefined
}

/**
 * The answer to what a tool asked mid-call was not yes (a denial, an expiry, its run's end), or
 * it could not ask: the call fails with it, and the model reads its message.
 *
 * @since 0.1.0
 * @category errors
 */
export class AskRefused extends Schema.TaggedError<AskRefused>()("ToolAskRefused", { description: Schema.String }) {
  override get message() {
    return this.description
  }
}

/**
 * The `approve` of a call that cannot ask: its tool did not declare `asks: true`, or nothing can
 * answer where it runs (a workflow's tool step).
 *
 * @since 0.1.0
 * @category constructors
 */
export const cannotAsk = (tool: string) => (_asked: Asked): Effect.Effect<void, AskRefused> =>
  Effect.fail(new AskRefused({ description: `${tool} cannot ask for approval while it runs here: its tool does not declare asks: true, or nothing can answer` }))

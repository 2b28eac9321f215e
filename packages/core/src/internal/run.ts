/**
 * run — what one `Session.run` takes and gives back. Session re-exports both (`Session.RunOptions`,
 * `Session.RunResult`); they live here so the actor and its mailbox, which Session imports, name
 * them without importing Session back.
 */
import type { Message } from "../Message.ts"
import type * as Model from "../Model.ts"

/** @since 0.1.0 @category models */
export interface RunOptions {
  /** Settings for this run's model requests; each wins over the agent's setting of the same key. */
  readonly modelOptions?: Model.Options | undefined
}

/**
 * What a completed run produced.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunResult {
  /** The final reply's text. */
  readonly text: string
  /** Why the model ended its final reply. */
  readonly finishReason: Model.FinishReason
  /** Tokens of all the run's model requests, summed. */
  readonly usage: Model.Usage
  /** Model requests the run made. */
  readonly turns: number
  /** What the run added to the history after the prompt: replies and tool results, in order. */
  readonly messages: ReadonlyArray<Message>
}

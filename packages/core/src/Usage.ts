/**
 * Usage — the tokens a model request, a run or a session spent, and what they cost.
 *
 * One shape everywhere: a `TurnEnd` event's `usage`, a `RunResult`'s and a session's are the same
 * `Usage` (uncached input, output, and the prompt-cache reads and writes when there were some).
 * Cost comes only from a price table the program provides (`Prices`): no price is built in, since
 * a vendor's list price, a negotiated one and a gateway's differ, and a figure we made up would be
 * wrong without anyone noticing. A model the table does not name has no cost (absent, not 0).
 */
import { Context, Option, Schema } from "effect"

/**
 * Tokens counted by the provider. `inputTokens` are the uncached ones for every provider; tokens
 * read from or written to a prompt cache are counted apart (absent when there were none).
 *
 * @since 0.1.0
 * @category models
 */
export const Usage = Schema.Struct({
  inputTokens: Schema.Int,
  outputTokens: Schema.Int,
  cacheReadTokens: Schema.optionalKey(Schema.Int),
  cacheWriteTokens: Schema.optionalKey(Schema.Int)
})
export type Usage = typeof Usage.Type

/**
 * What a model's tokens cost, per million, in the program's currency. Cache reads and writes are
 * priced as uncached input unless the price says otherwise.
 *
 * @since 0.1.0
 * @category models
 */
export interface Price {
  readonly inputPerMillion: number
  readonly outputPerMillion: number
  readonly cacheReadPerMillion?: number | undefined
  readonly cacheWritePerMillion?: number | undefined
}

/**
 * The program's price table, by model name as agents give it (`"anthropic:claude-sonnet-4-6"`).
 * Provided around `Session.start` (or `Condukt.run`), it gives each `RunResult` a `cost` and each
 * session its running `cost`.
 *
 * @since 0.1.0
 * @category services
 */
export class Prices extends Context.Service<Prices, Readonly<Record<string, Price>>>()("@condukt/core/Usage/Prices") {}

/**
 * What `usage` costs at `price`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const cost = (usage: Usage, price: Price): number =>
  (usage.inputTokens * price.inputPerMillion +
    usage.outputTokens * price.outputPerMillion +
    (usage.cacheReadTokens ?? 0) * (price.cacheReadPerMillion ?? price.inputPerMillion) +
    (usage.cacheWriteTokens ?? 0) * (price.cacheWritePerMillion ?? price.inputPerMillion)) / 1_000_000

/**
 * The price `context`'s price table (`Prices`) gives `model`, if it names it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const priceOf = (context: Context.Context<never>, model: string): Price | undefined => {
  const prices = Context.getOption(context, Prices)
  return Option.isSome(prices) && Object.hasOwn(prices.value, model) ? prices.value[model] : undefined
}

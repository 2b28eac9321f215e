/**
 * accountHandlers — the `account` group: who is asking and what this server serves them (`/me`),
 * and their tokens added up by agent, by UTC day or by session (`/usage`), priced with the server's
 * `prices` where it has them.
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import * as Usage from "@condukt/core/Usage"
import { Api, USAGE_DAYS, type UsageReport } from "../Api.ts"
import { Principal } from "../Auth.ts"
import type * as ServerStore from "../ServerStore.ts"
import { WorkflowRuns } from "../WorkflowRuns.ts"
import { answerOf, now, Served } from "./served.ts"
import { add, dayOf, NO_USAGE } from "./storeParts.ts"

/** The sums `GET /usage` gives when it is not told how many. */
const DEFAULT_ROWS = 50

const DAY = 24 * 60 * 60 * 1000

type Row = UsageReport["rows"][number]

export const layer = HttpApiBuilder.group(Api, "account", Effect.fn(function*(handlers) {
  const { settings, store } = yield* Served
  const workflows = Option.isSome(yield* Effect.serviceOption(WorkflowRuns))

  const priced = (usage: Usage.Usage, agent: string): number | undefined => {
    const price = settings.prices?.(agent)
    return price === undefined ? undefined : Usage.cost(usage, price)
  }
  const row = (key: string, usage: Usage.Usage, cost: number | undefined): Row => (cost === undefined ? { key, usage } : { key, usage, cost })

  /** A day's rows (one per agent) as one: the tokens summed, the cost when every agent's is known. */
  const byDay = (rows: ReadonlyArray<ServerStore.UsageRow>): Array<Row> => {
    const days = new Map<string, { usage: Usage.Usage; cost: number | undefined }>()
    for (const { agent, key, usage } of rows) {
      const day = days.get(key) ?? { usage: NO_USAGE, cost: 0 }
      const cost = priced(usage, agent)
      days.set(key, { usage: add(day.usage, usage), cost: day.cost === undefined || cost === undefined ? undefined : day.cost + cost })
    }
    return Array.from(days, ([key, { cost, usage }]) => row(key, usage, cost))
  }

  return handlers
    .handle("me", () =>
      Effect.map(Principal, (principal) => ({
        principal: principal.id,
        ...(settings.agents === undefined ? {} : { agents: settings.agents }),
        workflows
      })))
    .handle("usage", ({ query }) =>
      Effect.gen(function*() {
        const principal = yield* Principal
        const since = dayOf((yield* now) - (USAGE_DAYS - 1) * DAY)
        const rows = yield* store.usage(principal.id, query.by, { limit: query.limit ?? DEFAULT_ROWS, since }).pipe(Effect.mapError(answerOf))
        return {
          by: query.by,
          rows: query.by === "day" ? byDay(rows) : rows.map(({ agent, key, usage }) => row(key, usage, priced(usage, agent)))
        }
      }))
}))

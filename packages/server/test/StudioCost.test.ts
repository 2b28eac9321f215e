/**
 * The Studio's Cost view in a real headless Chromium, against a real server on loopback with a
 * price for one of its two agents: sessions that ran (every scripted reply counts 10 input and 5
 * output tokens) are plotted per agent, per day and per session, each plot named for screen
 * readers, and the data table under each holds the very numbers `GET /usage` answers; another
 * principal's sessions count for nobody else.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as Sandbox from "@condukt/core/Sandbox"
import type { Page } from "playwright-core"
import { axeViolations, screenshot, start, type StudioServer } from "./fixtures/studio.ts"

const ALICE = "tok-alice"
const BOB = "tok-bob"
const tokens = { [ALICE]: "alice", [BOB]: "bob" }

const writer = Agent.make({ name: "writer", model: "test:scripted" })
const reviewer = Agent.make({ name: "reviewer", model: "test:scripted" })

/** Dollars per million tokens: the writer's model only; the reviewer's has no price. */
const prices = { writer: { inputPerMillion: 3, outputPerMillion: 15 } }

/** Alice's sessions and how many runs each has, then Bob's. */
const SESSIONS = [
  { token: ALICE, id: "draft-1", agent: "writer", runs: 2 },
  { token: ALICE, id: "draft-2", agent: "writer", runs: 1 },
  { token: ALICE, id: "review-1", agent: "reviewer", runs: 3 },
  { token: BOB, id: "bob-1", agent: "writer", runs: 4 }
] as const

const runs = SESSIONS.reduce((total, session) => total + session.runs, 0)

const Usage = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cacheReadTokens: Schema.optional(Schema.Number),
  cacheWriteTokens: Schema.optional(Schema.Number)
})
const Report = Schema.Struct({
  by: Schema.String,
  rows: Schema.Array(Schema.Struct({ key: Schema.String, usage: Usage, cost: Schema.optional(Schema.Number) }))
})
type Report = typeof Report.Type

const usage = (studio: StudioServer, by: string) =>
  studio.request(ALICE, "GET", `/usage?by=${by}${by === "session" ? "&limit=50" : ""}`).pipe(
    Effect.flatMap(({ body }) => Schema.decodeUnknownEffect(Report)(body)),
    Effect.orDie
  )

const count = (value: number) => value.toLocaleString("en-US")

/** A report's rows as its data table writes them. */
const tableOf = (report: Report) =>
  report.rows.map((row) => [
    row.key,
    count(row.usage.inputTokens),
    count(row.usage.outputTokens),
    count(row.usage.cacheReadTokens ?? 0),
    count(row.usage.cacheWriteTokens ?? 0),
    count(row.usage.inputTokens + row.usage.outputTokens),
    row.cost === undefined ? "—" : `$${row.cost.toFixed(6)}`
  ])

const Plot = Schema.Struct({
  name: Schema.String,
  bars: Schema.Array(Schema.Struct({ key: Schema.String, title: Schema.String })),
  table: Schema.Array(Schema.Array(Schema.String))
})

/** One plot as the page shows it: its accessible name, its bars' keys and titles (key and value), its data table's cells. */
const plot = (tab: Page, id: string) =>
  Effect.promise(() =>
    tab.evaluate(`(() => {
      const section = document.querySelector('[data-testid="cost-${id}"]')
      const svg = section.querySelector('[data-testid="cost-plot"]')
      return {
        name: document.getElementById(svg.getAttribute("aria-labelledby")).textContent,
        bars: [...svg.querySelectorAll('[data-testid="cost-bar"]')].map((bar) => ({ key: bar.dataset.key, title: bar.querySelector("title").textContent })),
        table: [...section.querySelectorAll('[data-testid="cost-row"]')].map((row) => [...row.children].map((cell) => cell.textContent))
      }
    })()`)
  ).pipe(Effect.flatMap(Schema.decodeUnknownEffect(Plot)), Effect.orDie)

describe("the Studio's cost", () => {
  it.live("a person sees tokens and cost plotted per agent, per day and per session, the data tables holding the numbers GET /usage answers", () =>
    Effect.gen(function*() {
      const studio = yield* start({ agents: { writer, reviewer }, tokens, prices })
      for (const session of SESSIONS) {
        assert.strictEqual((yield* studio.request(session.token, "POST", "/sessions", { id: session.id, agent: session.agent })).status, 201)
        for (let run = 0; run < session.runs; run++) {
          assert.strictEqual((yield* studio.request(session.token, "POST", `/sessions/${session.id}/runs`, { prompt: "Go" })).status, 200)
        }
      }
      const [byAgent, byDay, bySession] = [yield* usage(studio, "agent"), yield* usage(studio, "day"), yield* usage(studio, "session")]
      // What the API answers: Alice's sessions only, 10 input and 5 output tokens a run, cost for the writer alone.
      const day = new Date().toISOString().slice(0, 10)
      assert.deepStrictEqual([...byAgent.rows].sort((a, b) => a.key.localeCompare(b.key)), [
        { key: "reviewer", usage: { inputTokens: 30, outputTokens: 15 } },
        { key: "writer", usage: { inputTokens: 30, outputTokens: 15 }, cost: (30 * 3 + 15 * 15) / 1e6 }
      ])
      assert.deepStrictEqual(byDay.rows.map((row) => [row.key, row.usage]), [[day, { inputTokens: 60, outputTokens: 30 }]])
      assert.deepStrictEqual(bySession.rows.map((row) => [row.key, row.usage.inputTokens + row.usage.outputTokens]), [["review-1", 45], ["draft-1", 30], ["draft-2", 15]])

      const tab = yield* studio.open({ token: ALICE, hash: "/cost" })
      yield* Effect.promise(() => tab.getByTestId("cost-agent").waitFor())
      const tokensOf = (report: Report) => report.rows.map((row) => ({ key: row.key, title: `${row.key}: ${count(row.usage.inputTokens + row.usage.outputTokens)}` }))
      assert.deepStrictEqual(yield* plot(tab, "agent"), { name: "Per agent, tokens", bars: tokensOf(byAgent), table: tableOf(byAgent) })
      assert.deepStrictEqual(yield* plot(tab, "day"), { name: "Per day (UTC, the last 90 days), tokens", bars: tokensOf(byDay), table: tableOf(byDay) })
      assert.deepStrictEqual(yield* plot(tab, "session"), { name: "Per session (the 50 that used most), tokens", bars: tokensOf(bySession), table: tableOf(bySession) })
      // Each session of the table links to its timeline.
      assert.deepStrictEqual(
        yield* Effect.promise(() => tab.evaluate(`[...document.querySelectorAll('[data-testid="cost-session"] [data-testid="cost-row"] a')].map((a) => a.getAttribute("href"))`)),
        bySession.rows.map((row) => `#/sessions/${row.key}`)
      )
      assert.deepStrictEqual(
        yield* Effect.promise(() => tab.evaluate(`[...document.querySelectorAll('[data-testid="cost-totals"] dd')].map((dd) => [dd.dataset.testid, dd.textContent])`)),
        [["total-tokens", "90"], ["total-input", "60"], ["total-output", "30"], ["total-cache-read", "0"], ["total-cost", "$0.0003"], ["total-unpriced", "1 agent"]]
      )
      assert.deepStrictEqual(yield* axeViolations(tab), { light: [], dark: [] })
      yield* screenshot(tab, "cost")

      // Cost plotted instead, chosen by keyboard (the radio group's arrow keys): the unpriced agent says so.
      yield* Effect.promise(() => tab.getByTestId("cost-metric-tokens").focus())
      yield* Effect.promise(() => tab.keyboard.press("ArrowRight"))
      yield* Effect.promise(() => tab.getByText("Per agent, cost in dollars").waitFor({ state: "attached" }))
      const agentCost = yield* plot(tab, "agent")
      assert.deepStrictEqual(agentCost.bars, byAgent.rows.map((row) => ({ key: row.key, title: `${row.key}: ${row.cost === undefined ? "no price" : `$${row.cost.toFixed(4)}`}` })))
      assert.deepStrictEqual(yield* axeViolations(tab), { light: [], dark: [] })
    }).pipe(Effect.provide(Layer.merge(TestModel.layer(Array.from({ length: runs }, () => TestModel.text("Done."))), Sandbox.layerNoop()))))
})

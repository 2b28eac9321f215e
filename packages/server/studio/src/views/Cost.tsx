/**
 * Cost — what the principal's sessions used (`#/cost`), from `GET /usage`: the totals, then tokens
 * or cost plotted per agent, per UTC day (the last 90, oldest first) and per session (the 50 that
 * used most), each plot with its data table. Cost is there when the server has prices for the
 * agents' models; a row without one says "no price" and the total says how much went unpriced.
 */
import { useEffect, useState } from "preact/hooks"
import { announce } from "../announce.ts"
import { type Client, errorText } from "../client.ts"
import { cost, count, tokens } from "../format.ts"
import { href } from "../route.ts"
import type { UsageReport } from "../types.ts"
import { CostChart, type Metric } from "./CostChart.tsx"
import "./Cost.css"

/** The sessions the per-session plot shows: those that used most. */
const SESSIONS_SHOWN = 50

interface Reports {
  readonly agent: UsageReport
  readonly day: UsageReport
  readonly session: UsageReport
}

/** The totals over every agent (every session is some agent's). */
function Totals(props: { report: UsageReport }) {
  const rows = props.report.rows
  const sum = (pick: (row: UsageReport["rows"][number]) => number) => rows.reduce((total, row) => total + pick(row), 0)
  const priced = rows.filter((row) => row.cost !== undefined)
  const unpriced = rows.length - priced.length
  return (
    <dl class="cost-totals" data-testid="cost-totals">
      <div><dt>Tokens</dt><dd data-testid="total-tokens">{count(sum((row) => tokens(row.usage)))}</dd></div>
      <div><dt>Input</dt><dd data-testid="total-input">{count(sum((row) => row.usage.inputTokens))}</dd></div>
      <div><dt>Output</dt><dd data-testid="total-output">{count(sum((row) => row.usage.outputTokens))}</dd></div>
      <div><dt>Cache read</dt><dd data-testid="total-cache-read">{count(sum((row) => row.usage.cacheReadTokens ?? 0))}</dd></div>
      <div><dt>Cost</dt><dd data-testid="total-cost">{priced.length === 0 ? "no price known" : cost(priced.reduce((total, row) => total + (row.cost ?? 0), 0))}</dd></div>
      {unpriced > 0 && priced.length > 0 ? <div><dt>Unpriced</dt><dd data-testid="total-unpriced">{unpriced === 1 ? "1 agent" : `${unpriced} agents`}</dd></div> : null}
    </dl>
  )
}

export function CostView(props: { client: Client }) {
  const [reports, setReports] = useState<Reports | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [metric, setMetric] = useState<Metric>("tokens")
  const [tick, setTick] = useState(0)

  useEffect(() => {
    let live = true
    Promise.all([props.client.usage("agent"), props.client.usage("day"), props.client.usage("session", SESSIONS_SHOWN)]).then(
      ([agent, day, session]) => {
        if (!live) return
        setReports({ agent, day, session })
        setError(undefined)
        if (tick > 0) announce("Usage read again.")
      },
      (cause: unknown) => live && setError(errorText(cause))
    )
    return () => void (live = false)
  }, [props.client, tick])

  return (
    <div>
      <div class="cost-head">
        <h1>Cost</h1>
        <fieldset class="cost-metric">
          <legend>Plot</legend>
          {(["tokens", "cost"] as const).map((value) => (
            <label key={value}>
              <input type="radio" name="cost-metric" value={value} data-testid={`cost-metric-${value}`} checked={metric === value} onChange={() => setMetric(value)} />
              {value === "tokens" ? "Tokens" : "Cost"}
            </label>
          ))}
        </fieldset>
        <button type="button" class="btn" data-testid="cost-refresh" onClick={() => setTick((n) => n + 1)}>Refresh</button>
      </div>
      {error === undefined ? null : <p role="alert" class="error" data-testid="cost-error">{error}</p>}
      {reports === undefined ? (error === undefined ? <p class="muted">Loading…</p> : null) : (
        <>
          <Totals report={reports.agent} />
          <CostChart id="agent" title="Per agent" keyName="Agent" rows={reports.agent.rows} metric={metric} />
          <CostChart id="day" title="Per day (UTC, the last 90 days)" keyName="Day" rows={reports.day.rows} metric={metric} columns />
          <CostChart id="session" title={`Per session (the ${SESSIONS_SHOWN} that used most)`} keyName="Session" rows={reports.session.rows} metric={metric} link={(id) => href("sessions", id)} />
        </>
      )}
    </div>
  )
}

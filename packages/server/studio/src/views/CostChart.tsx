/**
 * CostChart — one plot of the Cost view: an inline SVG bar chart of usage rows (an agent, a day or
 * a session each) as bars, or days as columns, tokens (input and output stacked) or cost, with an accessible name, and under it
 * the same rows as a data table in a <details> for screen readers and for reading the numbers.
 * Colours come from classes (Cost.css), not attributes: the page's style policy allows no inline CSS.
 */
import { count, tokens } from "../format.ts"
import type { UsageRow } from "../types.ts"

export type Metric = "tokens" | "cost"

/** The most characters of a row's key a label shows (a session id can be long). */
const MAX_LABEL_CHARS = 28

const WIDTH = 1000
const ROW_HEIGHT = 24
const LABEL_WIDTH = 230
const VALUE_WIDTH = 120
/** The columns' plot (days): its height, and the room under it for the dates. */
const COLUMNS_HEIGHT = 180
const AXIS_HEIGHT = 22
/** The most dates written under the columns. */
const MAX_DATE_LABELS = 10
/** The days the columns span (the server's `by=day` reaches back as far). */
const DAYS = 90

/** A cost as the data table writes it: dollars to six places (the plot's labels round). */
export const exactCost = (value: number | undefined): string => value === undefined ? "—" : `$${value.toFixed(6)}`

/** A cost as a plot's label writes it. */
const shortCost = (value: number | undefined): string =>
  value === undefined ? "no price" : `$${value >= 1 ? value.toFixed(2) : value.toFixed(4)}`

const label = (key: string): string => key.length <= MAX_LABEL_CHARS ? key : `${key.slice(0, MAX_LABEL_CHARS - 1)}…`

/** A row's value and, for tokens, the input's part of it. */
const measure = (row: UsageRow, metric: Metric): { value: number; input: number } =>
  metric === "tokens" ? { value: tokens(row.usage), input: row.usage.inputTokens } : { value: row.cost ?? 0, input: 0 }

/** A row's value as its bar's label writes it. */
const valueText = (row: UsageRow, metric: Metric): string => metric === "tokens" ? count(tokens(row.usage)) : shortCost(row.cost)

/** The days the columns span: the `DAYS` UTC days up to the newest row's (or today), oldest first. */
const daysUpTo = (rows: ReadonlyArray<UsageRow>): Array<string> => {
  const today = new Date().toISOString().slice(0, 10)
  const newest = rows.reduce((latest, row) => row.key > latest ? row.key : latest, today)
  const end = Date.parse(`${newest}T00:00:00Z`)
  if (!Number.isFinite(end)) return rows.map((row) => row.key)
  return Array.from({ length: DAYS }, (_, i) => new Date(end - (DAYS - 1 - i) * 86_400_000).toISOString().slice(0, 10))
}

/**
 * The days as vertical columns, one slot for each of the last 90 (a day without usage an empty
 * slot), a date under every few counted back from the newest; each column titled with its day and value.
 */
function Columns(props: { rows: ReadonlyArray<UsageRow>; metric: Metric; title: string; id: string }) {
  const days = daysUpTo(props.rows)
  const slot = new Map(days.map((day, i) => [day, i]))
  const shown = props.rows.filter((row) => slot.has(row.key))
  const max = Math.max(1e-12, ...shown.map((row) => measure(row, props.metric).value))
  const step = WIDTH / days.length
  const width = Math.max(1, step * 0.75)
  const every = Math.max(1, Math.ceil(days.length / MAX_DATE_LABELS))
  return (
    <svg class="cost-svg" viewBox={`0 0 ${WIDTH} ${COLUMNS_HEIGHT + AXIS_HEIGHT}`} width={WIDTH} height={COLUMNS_HEIGHT + AXIS_HEIGHT} role="img" aria-labelledby={`${props.id}-title`} data-testid="cost-plot">
      <title id={`${props.id}-title`}>{props.title}</title>
      <line class="cost-axis" x1={0} x2={WIDTH} y1={COLUMNS_HEIGHT + 0.5} y2={COLUMNS_HEIGHT + 0.5} />
      <text class="cost-label" x={4} y={12}>{`highest: ${props.metric === "tokens" ? `${count(max)} tokens` : shortCost(max)}`}</text>
      {days.map((day, i) => (days.length - 1 - i) % every === 0
        ? <text key={day} class="cost-label" x={i === days.length - 1 ? WIDTH : i * step + step / 2} y={COLUMNS_HEIGHT + 15} text-anchor={i === days.length - 1 ? "end" : "middle"}>{day.slice(5)}</text>
        : null)}
      {shown.map((row) => {
        const { input, value } = measure(row, props.metric)
        const whole = (value / max) * (COLUMNS_HEIGHT - 20)
        const inputHeight = props.metric === "tokens" && value > 0 ? whole * (input / value) : 0
        const x = slot.get(row.key)! * step + (step - width) / 2
        return (
          <g key={row.key} data-testid="cost-bar" data-key={row.key}>
            <title>{`${row.key}: ${valueText(row, props.metric)}`}</title>
            {props.metric === "tokens"
              ? (
                <>
                  <rect class="cost-input" x={x} y={COLUMNS_HEIGHT - inputHeight} width={width} height={inputHeight} />
                  <rect class="cost-output" x={x} y={COLUMNS_HEIGHT - whole} width={width} height={Math.max(0, whole - inputHeight)} />
                </>
              )
              : <rect class="cost-money" x={x} y={COLUMNS_HEIGHT - whole} width={width} height={whole} />}
          </g>
        )
      })}
    </svg>
  )
}

/** The horizontal bars of `rows`: each row's label, its bar (stacked input/output for tokens) and its value. */
function Bars(props: { rows: ReadonlyArray<UsageRow>; metric: Metric; title: string; id: string }) {
  const values = props.rows.map((row) => props.metric === "tokens" ? tokens(row.usage) : row.cost ?? 0)
  const max = Math.max(1e-12, ...values)
  const span = WIDTH - LABEL_WIDTH - VALUE_WIDTH
  const height = Math.max(1, props.rows.length) * ROW_HEIGHT
  return (
    <svg class="cost-svg" viewBox={`0 0 ${WIDTH} ${height}`} width={WIDTH} height={height} role="img" aria-labelledby={`${props.id}-title`} data-testid="cost-plot">
      <title id={`${props.id}-title`}>{props.title}</title>
      {props.rows.map((row, i) => {
        const y = i * ROW_HEIGHT
        const value = values[i] ?? 0
        const whole = (value / max) * span
        const input = props.metric === "tokens" && value > 0 ? whole * (row.usage.inputTokens / value) : 0
        return (
          <g key={row.key} data-testid="cost-bar" data-key={row.key}>
            <title>{`${row.key}: ${valueText(row, props.metric)}`}</title>
            <text class="cost-label" x={LABEL_WIDTH - 8} y={y + ROW_HEIGHT / 2} text-anchor="end" dominant-baseline="middle">{label(row.key)}</text>
            {props.metric === "tokens"
              ? (
                <>
                  <rect class="cost-input" x={LABEL_WIDTH} y={y + 4} width={input} height={ROW_HEIGHT - 8} />
                  <rect class="cost-output" x={LABEL_WIDTH + input} y={y + 4} width={Math.max(0, whole - input)} height={ROW_HEIGHT - 8} />
                </>
              )
              : <rect class="cost-money" x={LABEL_WIDTH} y={y + 4} width={whole} height={ROW_HEIGHT - 8} />}
            <text class="cost-value" x={LABEL_WIDTH + whole + 6} y={y + ROW_HEIGHT / 2} dominant-baseline="middle">{valueText(row, props.metric)}</text>
          </g>
        )
      })}
    </svg>
  )
}

/** The rows as a table: every number whole (tokens) or to six places (cost). */
function DataTable(props: { rows: ReadonlyArray<UsageRow>; keyName: string; title: string; link: ((key: string) => string) | undefined }) {
  return (
    <details class="cost-details">
      <summary>Data table: {props.title}</summary>
      <div class="cost-scroll">
        <table class="table" data-testid="cost-table">
          <caption class="sr-only">{props.title}</caption>
          <thead>
            <tr>
              <th scope="col">{props.keyName}</th>
              <th scope="col">Input tokens</th>
              <th scope="col">Output tokens</th>
              <th scope="col">Cache read tokens</th>
              <th scope="col">Cache write tokens</th>
              <th scope="col">Tokens</th>
              <th scope="col">Cost</th>
            </tr>
          </thead>
          <tbody>
            {props.rows.map((row) => (
              <tr key={row.key} data-testid="cost-row">
                <th scope="row" class="mono">{props.link === undefined ? row.key : <a href={props.link(row.key)}>{row.key}</a>}</th>
                <td>{count(row.usage.inputTokens)}</td>
                <td>{count(row.usage.outputTokens)}</td>
                <td>{count(row.usage.cacheReadTokens ?? 0)}</td>
                <td>{count(row.usage.cacheWriteTokens ?? 0)}</td>
                <td>{count(tokens(row.usage))}</td>
                <td>{exactCost(row.cost)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  )
}

/** A plot and its table, or a sentence when there is nothing to plot. */
export function CostChart(props: { id: string; title: string; keyName: string; rows: ReadonlyArray<UsageRow>; metric: Metric; columns?: boolean; link?: (key: string) => string }) {
  const Plot = props.columns === true ? Columns : Bars
  return (
    <section class="card cost-card" aria-labelledby={`${props.id}-heading`} data-testid={`cost-${props.id}`}>
      <h2 id={`${props.id}-heading`}>{props.title}</h2>
      {props.rows.length === 0
        ? <p class="muted" data-testid="cost-empty">No usage yet.</p>
        : (
          <>
            {props.metric === "tokens"
              ? (
                <p class="cost-legend" aria-hidden="true">
                  <span class="cost-swatch cost-input-swatch" /> input <span class="cost-swatch cost-output-swatch" /> output
                </p>
              )
              : null}
            <div class="cost-scroll">
              <Plot rows={props.rows} metric={props.metric} title={`${props.title}, ${props.metric === "tokens" ? "tokens" : "cost in dollars"}`} id={props.id} />
            </div>
            <DataTable rows={props.rows} keyName={props.keyName} title={props.title} link={props.link} />
          </>
        )}
    </section>
  )
}

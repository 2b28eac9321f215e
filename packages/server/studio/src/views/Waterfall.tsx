/**
 * Waterfall — a session's runs on one time axis: a row per run, turn and tool call (a sub-agent's
 * indented under the call that started it), each a bar from its start to its end (the events'
 * `at`: TurnStart → TurnEnd, ToolCall → ToolResult, AgentStart → AgentEnd; still open: to the
 * last event seen). The bars are drawing only; each row says its duration in text.
 */
import * as format from "../format.ts"
import type * as T from "../timeline.ts"

/** The most rows drawn: past it the waterfall says how many it left out. */
const MAX_ROWS = 500

interface Row {
  readonly key: string
  readonly label: string
  readonly depth: number
  readonly kind: "run" | "turn" | "call"
  readonly start: number
  readonly end: number | undefined
  readonly error: boolean
}

/** The tree as rows, in drawing order. */
const rowsOf = (runs: ReadonlyArray<T.Run>, depth: number, into: Row[]): Row[] => {
  for (const run of runs) {
    const agent = run.agentPath.at(-1)
    into.push({ key: run.key, label: agent === undefined ? "Run" : `Sub-agent ${agent}`, depth, kind: "run", start: run.startedAt, end: run.endedAt, error: run.outcome !== undefined && run.outcome !== "completed" })
    for (const turn of run.turns) {
      into.push({ key: `${run.key} turn ${turn.turn} ${turn.startedAt}`, label: `Turn ${turn.turn}`, depth: depth + 1, kind: "turn", start: turn.startedAt, end: turn.endedAt, error: false })
      for (const call of turn.calls) {
        into.push({ key: `${run.key} call ${call.callId}`, label: call.name, depth: depth + 2, kind: "call", start: call.startedAt, end: call.endedAt, error: call.isError === true })
        rowsOf(call.agents, depth + 3, into)
      }
    }
  }
  return into
}

export function Waterfall(props: { timeline: T.Timeline }) {
  const { timeline } = props
  const rows = rowsOf(timeline.runs, 0, [])
  if (rows.length === 0) return null
  const from = timeline.from
  const span = Math.max(1, timeline.to - from)
  return (
    <section class="card waterfall" data-testid="waterfall" aria-labelledby="waterfall-title">
      <h2 id="waterfall-title">Waterfall <span class="muted">{format.duration(span)} from the first event to the last</span></h2>
      <table class="table">
        <thead>
          <tr>
            <th scope="col">Step</th>
            <th scope="col">Took</th>
            <th scope="col" class="wf-bar-col">When</th>
          </tr>
        </thead>
        <tbody>
          {rows.slice(0, MAX_ROWS).map((row) => {
            const left = ((row.start - from) / span) * 100
            const width = (((row.end ?? timeline.to) - row.start) / span) * 100
            return (
              <tr key={row.key} data-testid="waterfall-row" data-kind={row.kind}>
                <td class={`wf-label wf-${row.kind}`} style={{ paddingLeft: `${8 + row.depth * 16}px` }}>{row.label}</td>
                <td class="wf-took">{row.end === undefined ? "running" : format.duration(row.end - row.start)}</td>
                <td class="wf-bar-col" aria-hidden="true">
                  <div class="tl-track">
                    <div class={`tl-bar ${row.kind}${row.error ? " error" : ""}`} style={{ left: `${Math.min(100, Math.max(0, left))}%`, width: `${Math.max(0.4, Math.min(100 - Math.max(0, left), width))}%` }} />
                  </div>
                </td>
              </tr>
            )
          })}
        </tbody>
      </table>
      {rows.length > MAX_ROWS ? <p class="muted">… {format.count(rows.length - MAX_ROWS)} more steps not drawn.</p> : null}
    </section>
  )
}

/**
 * Approvals — the inbox of the calls waiting for a person, across the principal's sessions, and
 * the audit of the answered ones (`#/approvals`, `#/approvals/audit`), over `GET /approvals` and
 * `POST /approvals/{id}`. The inbox shows each request oldest first with what the call would do
 * (its input, bounded), the rule that asked and the time left before it expires; a person gives
 * a reason and approves or denies, and the request leaves the inbox for the audit, which names
 * who answered and why. Both refresh every 2 s, so a request another tab answered leaves too.
 */
import { useEffect, useMemo, useState } from "preact/hooks"
import { announce } from "../announce.ts"
import { type Client, errorText } from "../client.ts"
import { bounded, duration, json, time } from "../format.ts"
import { href } from "../route.ts"
import type { ApprovalRecord } from "../types.ts"
import { poll } from "../poll.ts"
import { AuditView, loadRecords, REFRESH_MS } from "./ApprovalsAudit.tsx"
import "./Approvals.css"

/** The most characters of a call's input the inbox shows. */
const MAX_INPUT_SHOWN = 4000

/** The longest tool name the filter takes (the server's `MAX_ID_LENGTH`). */
const MAX_TOOL_CHARS = 128

/** The longest reason a person may give (the server's `MAX_TEXT_CHARS`). */
const MAX_REASON_CHARS = 4096

/** The listeners of the one timer every shown deadline ticks with. */
const ticking = new Set<(now: number) => void>()
let ticker: ReturnType<typeof setInterval> | undefined

/** Epoch ms now, ticking every second while the component is shown; one timer for all of them. */
const useNow = (): number => {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    ticking.add(setNow)
    ticker ??= setInterval(() => {
      const now = Date.now()
      for (const listener of ticking) listener(now)
    }, 1000)
    return () => {
      ticking.delete(setNow)
      if (ticking.size === 0) {
        clearInterval(ticker)
        ticker = undefined
      }
    }
  }, [])
  return now
}

/** What is left before `expiresAt`, ticking; "no expiry" when the request has none. */
function TimeLeft(props: { expiresAt: number | undefined }) {
  const now = useNow()
  if (props.expiresAt === undefined) return <span data-testid="approval-time-left">no expiry</span>
  const left = props.expiresAt - now
  return (
    <span data-testid="approval-time-left" data-expires-at={String(props.expiresAt)} class={left <= 60_000 ? "error" : undefined}>
      {left <= 0 ? "expired" : `${duration(Math.ceil(left / 1000) * 1000)} left`}
    </span>
  )
}

/** One waiting request: what it is, and the reason field with Approve and Deny. */
function Request(props: { client: Client; record: ApprovalRecord; onAnswered: (record: ApprovalRecord) => void }) {
  const { record } = props
  const [reason, setReason] = useState("")
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  // A record's input never changes: it is written out once, not at every refresh.
  const input = useMemo(() => json(record.input, MAX_INPUT_SHOWN), [record.id])
  const reasonId = `reason-${record.id}`
  const headingId = `approval-${record.id}`

  const answer = (approved: boolean) => {
    setBusy(true)
    setError(undefined)
    const given = reason.trim()
    props.client.answerApproval(record.id, given === "" ? { approved } : { approved, reason: given }).then(
      (answered) => {
        announce(`${approved ? "Approved" : "Denied"} the ${record.tool} call of session ${record.sessionId}.`)
        props.onAnswered(answered)
      },
      (cause: unknown) => {
        setBusy(false)
        setError(errorText(cause))
      }
    )
  }

  return (
    <li class="card approval" data-testid="approval" data-id={record.id} aria-labelledby={headingId}>
      <h3 id={headingId} class="approval-title">
        <span data-testid="approval-tool">{record.tool}</span>
        {record.shadow === true ? <span class="badge badge-accent">shadow</span> : null}
      </h3>
      {record.summary === undefined ? null : <p data-testid="approval-summary">{bounded(record.summary, 500)}</p>}
      <dl class="approval-facts">
        <dt>Session</dt>
        <dd><a href={href("sessions", record.sessionId)} data-testid="approval-session">{record.sessionId}</a></dd>
        <dt>Agent</dt>
        <dd data-testid="approval-agent">{record.agent}</dd>
        <dt>Rule</dt>
        <dd data-testid="approval-rule">{record.rule}</dd>
        <dt>Asked</dt>
        <dd data-testid="approval-requested">{time(record.requestedAt)}</dd>
        <dt>Time left</dt>
        <dd><TimeLeft expiresAt={record.expiresAt} /></dd>
      </dl>
      <p class="approval-label">Input</p>
      <pre data-testid="approval-input" tabIndex={0} aria-label={`Input of the ${record.tool} call`}>{input}</pre>
      {record.details === undefined ? null : (
        <details>
          <summary>Details</summary>
          <pre data-testid="approval-details">{bounded(record.details, MAX_INPUT_SHOWN)}</pre>
        </details>
      )}
      <div class="approval-answer">
        <div class="field">
          <label for={reasonId}>Reason (optional)</label>
          <input id={reasonId} type="text" data-testid="approval-reason" maxLength={MAX_REASON_CHARS} value={reason} disabled={busy} onInput={(event) => setReason(event.currentTarget.value)} />
        </div>
        <button type="button" class="btn btn-primary" data-testid="approval-approve" disabled={busy} onClick={() => answer(true)}>Approve</button>
        <button type="button" class="btn btn-danger" data-testid="approval-deny" disabled={busy} onClick={() => answer(false)}>Deny</button>
      </div>
      {error === undefined ? null : <p role="alert" class="error" data-testid="approval-error">{error}</p>}
    </li>
  )
}

/** The open requests, oldest first (of one tool when the filter names one), read again every 2 s. */
function InboxView(props: { client: Client }) {
  const [tool, setTool] = useState("")
  const filter = tool.trim()
  const [records, setRecords] = useState<ReadonlyArray<ApprovalRecord> | undefined>(undefined)
  const [more, setMore] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const [answered, setAnswered] = useState<ReadonlySet<string>>(new Set())
  const [tick, setTick] = useState(0)

  useEffect(() =>
    poll(
      () => loadRecords(props.client, "open", { tool: filter === "" ? undefined : filter }),
      (page) => {
        setRecords([...page.records].sort((a, b) => a.requestedAt - b.requestedAt))
        setMore(page.more)
        setError(undefined)
      },
      (cause) => setError(errorText(cause)),
      REFRESH_MS
    ), [props.client, tick, filter])

  const onAnswered = (record: ApprovalRecord) => {
    setAnswered((before) => new Set([...before, record.id]))
    setTick((n) => n + 1)
  }

  const shown = records?.filter((record) => !answered.has(record.id))
  return (
    <section aria-labelledby="inbox-title" data-testid="approvals-inbox">
      <h2 id="inbox-title">Waiting for an answer{shown === undefined ? "" : ` (${shown.length})`}</h2>
      <div class="toolbar">
        <div class="field">
          <label for="approvals-tool">Tool</label>
          <input id="approvals-tool" type="search" data-testid="approvals-tool" maxLength={MAX_TOOL_CHARS} placeholder="All tools" value={tool} onInput={(event) => setTool(event.currentTarget.value)} />
        </div>
      </div>
      {error === undefined ? null : <p role="alert" class="error" data-testid="approvals-error">{error}</p>}
      {shown === undefined ? (error === undefined ? <p class="muted">Loading…</p> : null) : shown.length === 0
        ? <p class="muted" data-testid="approvals-empty">{filter === "" ? "No call is waiting for an answer." : `No ${filter} call is waiting for an answer.`}</p>
        : <ol class="approvals-list">{shown.map((record) => <Request key={record.id} client={props.client} record={record} onAnswered={onAnswered} />)}</ol>}
      {more ? <p class="muted" data-testid="approvals-more">More requests are waiting than this page shows: answer these first.</p> : null}
    </section>
  )
}

export function ApprovalsView(props: { client: Client; route: string[] }) {
  const audit = props.route[0] === "audit"
  return (
    <div>
      <div class="approvals-head">
        <h1>Approvals</h1>
        <nav aria-label="Approvals">
          <ul class="approvals-tabs">
            <li><a href={href("approvals")} data-testid="approvals-tab-inbox" aria-current={audit ? undefined : "page"}>Inbox</a></li>
            <li><a href={href("approvals", "audit")} data-testid="approvals-tab-audit" aria-current={audit ? "page" : undefined}>Audit</a></li>
          </ul>
        </nav>
      </div>
      {audit ? <AuditView client={props.client} /> : <InboxView client={props.client} />}
    </div>
  )
}

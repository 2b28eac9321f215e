/**
 * ApprovalsAudit — the answered requests (`#/approvals/audit`), newest first: when each was
 * answered, how (approved, denied, expired, aborted), by whom and why, with the call it was about.
 * Also the reading both approval views share: the log's pages followed up to a bound (the server
 * lists oldest first and keeps only the principal's records of each page).
 */
import { useEffect, useState } from "preact/hooks"
import { type Client, errorText } from "../client.ts"
import { bounded, time } from "../format.ts"
import { poll } from "../poll.ts"
import { href } from "../route.ts"
import type { ApprovalRecord } from "../types.ts"

/** How often the inbox and the audit are read again. */
export const REFRESH_MS = 2000

/** Records asked for per page (the server's largest page). */
const PAGE = 1000

/** The most pages read at once: past them the view says more are there. */
const MAX_PAGES = 5


/**
 * The principal's records of `status` (of `tool` alone when given) in `order` of their requests, the
 * log's pages followed up to `MAX_PAGES`; `more` when pages were left.
 */
export const loadRecords = async (
  client: Client,
  status: "open" | "answered",
  options: { readonly tool?: string | undefined; readonly order?: "oldest" | "newest" } = {}
): Promise<{ records: ReadonlyArray<ApprovalRecord>; more: boolean }> => {
  const records: Array<ApprovalRecord> = []
  let cursor: string | undefined
  for (let page = 0; page < MAX_PAGES; page++) {
    const answer = await client.approvals({
      status,
      limit: PAGE,
      ...(options.tool === undefined ? {} : { tool: options.tool }),
      ...(options.order === undefined ? {} : { order: options.order }),
      ...(cursor === undefined ? {} : { cursor })
    })
    records.push(...answer.records)
    cursor = answer.next
    if (cursor === undefined) return { records, more: false }
  }
  return { records, more: true }
}

const OUTCOME_BADGE: Record<NonNullable<ApprovalRecord["outcome"]>, string> = {
  approved: "badge badge-ok",
  denied: "badge badge-danger",
  expired: "badge badge-warn",
  aborted: "badge badge-warn"
}

/** The answered requests, newest first, read again every 2 s. */
export function AuditView(props: { client: Client }) {
  const [records, setRecords] = useState<ReadonlyArray<ApprovalRecord> | undefined>(undefined)
  const [more, setMore] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)

  useEffect(() =>
    poll(
      // The newest requests first: past `MAX_PAGES`, the older ones are left out, not the newer.
      () => loadRecords(props.client, "answered", { order: "newest" }),
      (page) => {
        setRecords([...page.records].sort((a, b) => (b.answeredAt ?? b.requestedAt) - (a.answeredAt ?? a.requestedAt)))
        setMore(page.more)
        setError(undefined)
      },
      (cause) => setError(errorText(cause)),
      REFRESH_MS
    ), [props.client])

  return (
    <section aria-labelledby="audit-title" data-testid="approvals-audit">
      <h2 id="audit-title">Answered</h2>
      {error === undefined ? null : <p role="alert" class="error" data-testid="approvals-error">{error}</p>}
      {records === undefined ? (error === undefined ? <p class="muted">Loading…</p> : null) : records.length === 0
        ? <p class="muted" data-testid="audit-empty">No request has been answered yet.</p>
        : (
          <div class="approvals-scroll">
            <table class="table" data-testid="audit-table">
              <caption class="sr-only">Answered approval requests, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Answered</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Session</th>
                  <th scope="col">Agent</th>
                  <th scope="col">By</th>
                  <th scope="col">Reason</th>
                </tr>
              </thead>
              <tbody>
                {records.map((record) => (
                  <tr key={record.id} data-testid="audit-row" data-id={record.id}>
                    <td data-testid="audit-answered">{record.answeredAt === undefined ? "—" : time(record.answeredAt)}</td>
                    <td><span data-testid="audit-outcome" class={record.outcome === undefined ? "badge" : OUTCOME_BADGE[record.outcome]}>{record.outcome ?? "—"}</span></td>
                    <td data-testid="audit-tool">{record.tool}</td>
                    <td><a href={href("sessions", record.sessionId)} data-testid="audit-session">{record.sessionId}</a></td>
                    <td data-testid="audit-agent">{record.agent}</td>
                    <td data-testid="audit-by">{record.by ?? "—"}</td>
                    <td data-testid="audit-reason" class="approvals-reason">{record.reason === undefined ? "—" : bounded(record.reason, 1000)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      {more ? <p class="muted" data-testid="audit-more">More answers are kept than the page reads at once: it shows those of the newest 5,000 requests.</p> : null}
    </section>
  )
}

/**
 * Sessions — the principal's sessions, newest first, as a table that stays fast at any count:
 * rows have one height and only those in view (and a few around) are in the DOM; the next page
 * (`before` the last id) is fetched as the scroll nears the end. Filter by agent (a choice of the
 * server's agents when `/me` names them) and search by id (server-side `q`, debounced). A
 * session's state is running, waiting (an approval of it is open) or idle; the table follows new
 * sessions and states while it is scrolled to its top.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { announce } from "../announce.ts"
import type { Client } from "../client.ts"
import * as format from "../format.ts"
import { href } from "../route.ts"
import type { Me, SessionRow } from "../types.ts"

/** One row's height in pixels (studio.css's --row-h). */
export const ROW_HEIGHT = 40
/** Rows kept in the DOM above and below the visible ones. */
const OVERSCAN = 10
const FIRST_PAGE = 100
const PAGE = 500
/** Fetch the next page once the scroll is this many rows from the end. */
const NEAR_END_ROWS = 60
const SEARCH_DEBOUNCE_MS = 300
/** How often the table looks for new sessions and states while it is shown. */
const POLL_MS = 3000
const MAX_QUERY_CHARS = 256
/** The most rows held (a million sessions would still scroll, this many at a time). */
const MAX_ROWS = 200_000

type State = "running" | "waiting" | "idle"

const stateOf = (row: SessionRow, waiting: ReadonlySet<string>): State => row.running ? (waiting.has(row.id) ? "waiting" : "running") : waiting.has(row.id) ? "waiting" : "idle"

const BADGE: Record<State, string> = { running: "badge badge-accent", waiting: "badge badge-warn", idle: "badge" }

const COLUMNS = ["Session", "Agent", "State", "Runner", "Started", "Last activity", "Tokens", "Cost"]

interface Listing {
  readonly rows: SessionRow[]
  readonly done: boolean
  readonly loading: boolean
  readonly error?: string
}

/**
 * `listing` with `fresh`, a first page read again, on top: the rows after the fresh page's last
 * are kept; when that row is not among them (more than a page of new sessions), the listing is
 * the fresh page and what follows is fetched again as the scroll nears it.
 */
const merged = (listing: Listing, fresh: ReadonlyArray<SessionRow>): Listing => {
  const last = fresh.at(-1)
  if (last === undefined) return { rows: [], done: true, loading: false }
  const at = listing.rows.findIndex((row) => row.id === last.id)
  return at < 0
    ? { rows: [...fresh], done: fresh.length < FIRST_PAGE, loading: false }
    : { rows: [...fresh, ...listing.rows.slice(at + 1)], done: listing.done, loading: false }
}

function Row(props: { row: SessionRow; index: number; waiting: ReadonlySet<string> }) {
  const { row } = props
  const state = stateOf(row, props.waiting)
  return (
    <div role="row" class="vrow vbody-row" aria-rowindex={props.index + 2} data-testid="session-row" data-id={row.id} style={{ top: `${props.index * ROW_HEIGHT}px` }}>
      <span role="cell" class="mono"><a href={href("sessions", row.id)} title={row.id} data-testid="session-link">{row.id}</a></span>
      <span role="cell" data-testid="session-agent">{row.agent}</span>
      <span role="cell"><span class={BADGE[state]} data-testid="session-state">{state}</span></span>
      <span role="cell" class="muted" data-testid="session-runner">{row.runner ?? "this server"}</span>
      <span role="cell">{format.time(row.createdAt)}</span>
      <span role="cell">{format.time(row.lastActivity)}</span>
      <span role="cell" data-testid="session-tokens">{format.count(format.tokens(row.usage))}</span>
      <span role="cell">{format.cost(row.cost)}</span>
    </div>
  )
}

export function SessionsView(props: { client: Client; me: Me }) {
  const { client } = props
  const [agent, setAgent] = useState("")
  const [search, setSearch] = useState("")
  const [q, setQ] = useState("")
  const [listing, setListing] = useState<Listing>({ rows: [], done: false, loading: true })
  const [waiting, setWaiting] = useState<ReadonlySet<string>>(new Set())
  const [reload, setReload] = useState(0)
  const [viewport, setViewport] = useState({ top: 0, height: 600 })
  const scroller = useRef<HTMLDivElement>(null)
  /** The filter a response answers: a late answer to an older filter is dropped. */
  const generation = useRef(0)
  const loading = useRef(false)

  useEffect(() => {
    const timer = setTimeout(() => setQ(search.slice(0, MAX_QUERY_CHARS)), SEARCH_DEBOUNCE_MS)
    return () => clearTimeout(timer)
  }, [search])

  const fetchPage = useCallback((rows: SessionRow[], first: boolean) => {
    const asked = generation.current
    loading.current = true
    setListing({ rows, done: false, loading: true })
    const before = rows.at(-1)?.id
    client.sessions({
      limit: first ? FIRST_PAGE : PAGE,
      ...(before === undefined ? {} : { before }),
      ...(agent === "" ? {} : { agent }),
      ...(q === "" ? {} : { q })
    }).then(
      ({ sessions }) => {
        if (asked !== generation.current) return
        loading.current = false
        const next = [...rows, ...sessions].slice(0, MAX_ROWS)
        const done = sessions.length < (first ? FIRST_PAGE : PAGE) || next.length >= MAX_ROWS
        setListing({ rows: next, done, loading: false })
        if (first) announce(`${next.length}${done ? "" : " or more"} sessions`)
      },
      (error: unknown) => {
        if (asked !== generation.current) return
        loading.current = false
        setListing({ rows, done: true, loading: false, error: error instanceof Error ? error.message : String(error) })
      }
    )
  }, [client, agent, q])

  // A new filter starts over from the first page.
  useEffect(() => {
    generation.current++
    scroller.current?.scrollTo({ top: 0 })
    setViewport((viewport) => ({ ...viewport, top: 0 }))
    fetchPage([], true)
  }, [fetchPage, reload])

  // Live while in view: every few seconds the open approvals (who waits) and, when the table is
  // scrolled to its top, the first page again (new sessions, states and tokens), merged above the
  // rows already loaded.
  useEffect(() => {
    let live = true
    const poll = () => {
      if (document.hidden) return
      client.approvals({ status: "open", limit: 1000 }).then(
        ({ records }) => live && setWaiting(new Set(records.map((record) => record.sessionId))),
        () => {}
      )
      const element = scroller.current
      if (loading.current || element === null || element.scrollTop > ROW_HEIGHT * 5) return
      const asked = generation.current
      client.sessions({ limit: FIRST_PAGE, ...(agent === "" ? {} : { agent }), ...(q === "" ? {} : { q }) }).then(
        ({ sessions }) => {
          if (live && asked === generation.current && !loading.current) setListing((listing) => merged(listing, sessions))
        },
        () => {}
      )
    }
    poll()
    const timer = setInterval(poll, POLL_MS)
    return () => {
      live = false
      clearInterval(timer)
    }
  }, [client, agent, q, reload])

  const measure = () => {
    const element = scroller.current
    if (element !== null) setViewport({ top: element.scrollTop, height: element.clientHeight })
  }
  useEffect(() => {
    measure()
    addEventListener("resize", measure)
    return () => removeEventListener("resize", measure)
  }, [])

  // Near the end of what is loaded: the next page.
  const total = listing.rows.length
  const lastVisible = Math.ceil((viewport.top + viewport.height) / ROW_HEIGHT)
  useEffect(() => {
    if (!listing.done && !loading.current && total > 0 && lastVisible >= total - NEAR_END_ROWS) fetchPage(listing.rows, false)
  }, [lastVisible, total, listing.done, fetchPage])

  const first = Math.max(0, Math.floor(viewport.top / ROW_HEIGHT) - OVERSCAN)
  const last = Math.min(total, lastVisible + OVERSCAN)
  const agents = props.me.agents

  return (
    <section aria-labelledby="sessions-title">
      <h1 id="sessions-title">Sessions</h1>
      <div class="toolbar" role="search">
        <div class="field">
          <label for="filter-agent">Agent</label>
          {agents === undefined
            ? <input id="filter-agent" data-testid="filter-agent" value={agent} maxLength={256} onChange={(event) => setAgent(event.currentTarget.value.trim())} />
            : (
              <select id="filter-agent" data-testid="filter-agent" value={agent} onChange={(event) => setAgent(event.currentTarget.value)}>
                <option value="">All agents</option>
                {agents.map((name) => <option key={name} value={name}>{name}</option>)}
              </select>
            )}
        </div>
        <div class="field">
          <label for="search-id">Search by id</label>
          <input id="search-id" type="search" data-testid="search" value={search} maxLength={MAX_QUERY_CHARS} onInput={(event) => setSearch(event.currentTarget.value)} />
        </div>
        <button type="button" class="btn" data-testid="sessions-refresh" onClick={() => setReload((n) => n + 1)}>Refresh</button>
        <p class="muted" data-testid="sessions-count">
          {listing.loading && total === 0 ? "Loading…" : `${format.count(total)}${listing.done ? "" : "+"} sessions`}
        </p>
      </div>
      {listing.error === undefined ? null : <p role="alert" class="error" data-testid="sessions-error">{listing.error}</p>}
      <div class="vtable vtable-scroll" ref={scroller} onScroll={measure} tabIndex={0} role="table" aria-label="Sessions" aria-rowcount={listing.done ? total + 1 : -1} data-testid="sessions-table" data-rows={total} data-done={String(listing.done)}>
        <div role="rowgroup" class="vhead-group">
          <div role="row" class="vrow vhead" aria-rowindex={1}>
            {COLUMNS.map((column) => <span role="columnheader" key={column}>{column}</span>)}
          </div>
        </div>
        <div role="rowgroup" class="vtable-body" style={{ height: `${total * ROW_HEIGHT}px` }}>
          {listing.rows.slice(first, last).map((row, offset) => <Row key={row.id} row={row} index={first + offset} waiting={waiting} />)}
        </div>
      </div>
      {total === 0 && !listing.loading ? <p class="vfoot" data-testid="sessions-empty">No sessions{agent !== "" || q !== "" ? " match" : " yet"}.</p> : null}
      {listing.loading && total > 0 ? <p class="vfoot" data-testid="sessions-loading">Loading more…</p> : null}
    </section>
  )
}

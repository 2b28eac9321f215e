/**
 * ServerStore — what the server keeps of its own: which principal owns each session it started, and
 * a window of each session's events, numbered, so that a stream dropped, a server restarted or a
 * client sent to another runner resumes exactly after the last event it saw (docs/server.md).
 *
 * A session's events are numbered here from 1, one after another, as the server writes them (the
 * SSE `id`); the session's own `seq` restarts with each incarnation of the session, so it cannot be
 * a stream's position across restarts. An event reaches a client only after it is written: what a
 * client saw, a store that survives the server holds. The last `window` events of a session are kept
 * (default `WINDOW`), and in memory no more than `windowBytes` of them (default `WINDOW_BYTES`: a
 * model's huge tool inputs cannot grow the process); a reader asking for older ones is told where
 * the window starts.
 *
 * Each event is kept with the time it was written; each session with the tokens of its turns (in
 * all, and per UTC day, for the principal's usage by agent, day or session) and whether its events
 * show a run going (for a list that says which sessions run without reading their events).
 *
 * `makeMemory` keeps them in memory (one process); `SqlServerStore` in SQL (SQLite, Postgres), so
 * several servers in front of one cluster share them.
 */
import { Context, Deferred, Effect, Layer, Option, Schema } from "effect"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import * as Usage from "@condukt/core/Usage"
import { add, dayOf, makeWaiters, NO_USAGE, runningAfter, sizeOf, tokensOf, usageOf } from "./internal/storeParts.ts"

export {
  /** The usage a batch of events adds: the sum of its turns'. */
  usageOf,
  /** No tokens. */
  NO_USAGE,
  /** Wakes the readers waiting on a session's next event. */
  makeWaiters
}

/**
 * The events a session keeps for readers that resume.
 *
 * @since 0.1.0
 * @category models
 */
export const WINDOW = 10_000

/**
 * The characters of a session's events the memory store keeps at most (their texts and JSON
 * values, roughly): past it the oldest go, as past `WINDOW`.
 *
 * @since 0.1.0
 * @category models
 */
export const WINDOW_BYTES = 32 * 1024 * 1024

/**
 * A session the server started: whose it is, which agent, when, and what it spent.
 *
 * @since 0.1.0
 * @category models
 */
export const Owned = Schema.Struct({
  id: Schema.String,
  principal: Schema.String,
  agent: Schema.String,
  /** Epoch ms. */
  createdAt: Schema.Number,
  /** The number of the last event written (0: none yet). */
  lastEventId: Schema.Int,
  /** Epoch ms of the last event written, or the creation. */
  lastActivity: Schema.Number,
  /** The tokens of every turn the server saw end. */
  usage: Usage.Usage
})
export type Owned = typeof Owned.Type

/**
 * One written event: its number in the session's stream, when it was written (epoch ms), and the event.
 *
 * @since 0.1.0
 * @category models
 */
export interface Entry {
  readonly id: number
  readonly at: number
  readonly event: SessionEvent.SessionEvent
}

/**
 * A session as a list shows it: its record, and whether its written events show a run going (a
 * top-level `AgentStart` written after the last top-level `AgentEnd`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Listed extends Owned {
  readonly running: boolean
}

/**
 * A page of a principal's sessions: at most `limit`, after the cursor `before` (a previous page's
 * last id), of the agent `agent` only, whose id holds `q` (as written, case and all) only.
 *
 * @since 0.1.0
 * @category models
 */
export interface ListQuery {
  readonly limit: number
  readonly before?: string | undefined
  readonly agent?: string | undefined
  readonly q?: string | undefined
}

/**
 * How a principal's tokens are added up: by agent, by UTC day, by session.
 *
 * @since 0.1.0
 * @category models
 */
export type UsageBy = "agent" | "day" | "session"

/**
 * One sum of tokens: its key (the agent's name, the day as `YYYY-MM-DD`, the session's id) and the
 * agent they were spent by (by day, one row per day and agent, so each is priced by its agent).
 *
 * @since 0.1.0
 * @category models
 */
export interface UsageRow {
  readonly key: string
  readonly agent: string
  readonly usage: Usage.Usage
}

/**
 * What a read finds: the entries after the asked id (at most the asked limit), the first id still
 * kept (`oldest`, 0 when none), the last id written.
 *
 * @since 0.1.0
 * @category models
 */
export interface Read {
  readonly entries: ReadonlyArray<Entry>
  readonly oldest: number
  readonly last: number
}

/**
 * What taking a lease found: taken (after `lapsed`'s ran out, when another held one), or held by another.
 *
 * @since 0.1.0
 * @category models
 */
export type Lease = { readonly taken: true; readonly lapsed?: string | undefined } | { readonly taken: false; readonly holder: string }

/**
 * The store could not read or write.
 *
 * @since 0.1.0
 * @category errors
 */
export class ServerStoreError extends Schema.TaggedError<ServerStoreError>()("ServerStoreError", {
  method: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `the server's store failed to ${this.method}: ${this.description}`
  }
}

/** @since 0.1.0 @category models */
export interface Service {
  /** Records `id` as `principal`'s session of `agent`; false when another record has the id. */
  readonly claim: (owned: { readonly id: string; readonly principal: string; readonly agent: string; readonly now: number }) => Effect.Effect<boolean, ServerStoreError>
  /** The session's record, if the server started it. */
  readonly owned: (id: string) => Effect.Effect<Option.Option<Owned>, ServerStoreError>
  /** `principal`'s sessions, newest first: the page `query` asks for. */
  readonly list: (principal: string, query: ListQuery) => Effect.Effect<ReadonlyArray<Listed>, ServerStoreError>
  /**
   * `principal`'s tokens: by agent or by session (the sessions' records; most tokens first, at most
   * `limit`; a session that spent none is left out), or by day and agent from `since` (`YYYY-MM-DD`)
   * on, oldest first, as the turns' ends were written.
   */
  readonly usage: (principal: string, by: UsageBy, options: { readonly limit: number; readonly since: string }) => Effect.Effect<ReadonlyArray<UsageRow>, ServerStoreError>
  /**
   * Writes `events` after the session's last, numbered in order, at `now`; the numbers given. The
   * turns' usage is added to the session's and to the day's of `now` (UTC).
   */
  readonly append: (id: string, events: ReadonlyArray<SessionEvent.SessionEvent>, now: number) => Effect.Effect<ReadonlyArray<number>, ServerStoreError>
  /** The entries after `after`, at most `limit`. */
  readonly read: (id: string, after: number, limit: number) => Effect.Effect<Read, ServerStoreError>
  /**
   * Takes the lease of reading session `id`'s run for `holder` until `until` (epoch ms; taking it
   * again renews it) unless another holder's lease is still good at `now`: taken (`lapsed`: the
   * holder whose lease ran out before), or held by another. Servers in front of one cluster use it
   * so that one of them reads a run.
   */
  readonly lease: (id: string, holder: string, now: number, until: number) => Effect.Effect<Lease, ServerStoreError>
  /** Gives the lease back, when `holder` has it. */
  readonly release: (id: string, holder: string) => Effect.Effect<void, ServerStoreError>
  /**
   * Completes once the session has an event after `after` written by this process; a store shared
   * with other processes also completes after `poll` (their writes are found by reading again).
   */
  readonly wait: (id: string, after: number) => Effect.Effect<void>
}

/**
 * The server's store.
 *
 * @since 0.1.0
 * @category services
 */
export class ServerStore extends Context.Service<ServerStore, Service>()("@condukt/server/ServerStore") {}

/** Most tokens first, then by key (as the SQL store orders them). */
const byTokens = (a: UsageRow, b: UsageRow) => tokensOf(b.usage) - tokensOf(a.usage) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)

/**
 * A store in memory: the layer's life, this process only.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options: { readonly window?: number | undefined; readonly windowBytes?: number | undefined } = {}): Service => {
  const window = options.window ?? WINDOW
  const windowBytes = options.windowBytes ?? WINDOW_BYTES
  interface Kept {
    owned: Owned
    running: boolean
    /** Its place in its principal's list, for a cursor found at once. */
    readonly index: number
    readonly days: Map<string, Usage.Usage>
    /**
     * The kept events from `head` on (and their sizes): the window's oldest are dropped by moving
     * `head`, and the arrays compacted once half of them is dropped, not shifted at every write
     * (a full window's shift is 10,000 moves for each event a long session writes).
     */
    entries: Array<Entry>
    sizes: Array<number>
    head: number
    bytes: number
  }
  const sessions = new Map<string, Kept>()
  const byPrincipal = new Map<string, Array<Kept>>()
  const waiters = makeWaiters()
  const leases = new Map<string, { readonly holder: string; readonly until: number }>()
  return ServerStore.of({
    lease: (id, holder, now, until) =>
      Effect.sync((): Lease => {
        const current = leases.get(id)
        if (current !== undefined && current.holder !== holder && current.until >= now) return { taken: false, holder: current.holder }
        leases.set(id, { holder, until })
        return current !== undefined && current.holder !== holder ? { taken: true, lapsed: current.holder } : { taken: true }
      }),
    release: (id, holder) =>
      Effect.sync(() => {
        if (leases.get(id)?.holder === holder) leases.delete(id)
      }),
    claim: ({ agent, id, now, principal }) =>
      Effect.sync(() => {
        if (sessions.has(id)) return false
        let kept = byPrincipal.get(principal)
        if (kept === undefined) byPrincipal.set(principal, kept = [])
        const session: Kept = {
          owned: { id, principal, agent, createdAt: now, lastEventId: 0, lastActivity: now, usage: NO_USAGE },
          running: false,
          index: kept.length,
          days: new Map(),
          entries: [],
          sizes: [],
          head: 0,
          bytes: 0
        }
        sessions.set(id, session)
        kept.push(session)
        return true
      }),
    owned: (id) => Effect.sync(() => Option.fromNullishOr(sessions.get(id)?.owned)),
    list: (principal, { agent, before, limit, q }) =>
      Effect.sync(() => {
        const kept = byPrincipal.get(principal) ?? []
        let end = kept.length
        if (before !== undefined) {
          const cursor = sessions.get(before)
          end = cursor === undefined || cursor.owned.principal !== principal ? 0 : cursor.index
        }
        // Walking back from the cursor: a page costs the sessions it passes, never a sort.
        const page: Array<Listed> = []
        for (let i = end - 1; i >= 0 && page.length < limit; i--) {
          const { owned, running } = kept[i]!
          if ((agent === undefined || owned.agent === agent) && (q === undefined || owned.id.includes(q))) page.push({ ...owned, running })
        }
        return page
      }),
    usage: (principal, by, { limit, since }) =>
      Effect.sync(() => {
        const kept = byPrincipal.get(principal) ?? []
        if (by === "session") {
          const rows = kept.filter((session) => tokensOf(session.owned.usage) > 0).map(({ owned }) => ({ key: owned.id, agent: owned.agent, usage: owned.usage }))
          return rows.sort(byTokens).slice(0, limit)
        }
        const sums = new Map<string, UsageRow>()
        const into = (key: string, agent: string, usage: Usage.Usage) => {
          const name = by === "day" ? `${key}\u0000${agent}` : key
          const row = sums.get(name)
          sums.set(name, { key, agent, usage: row === undefined ? usage : add(row.usage, usage) })
        }
        for (const { days, owned } of kept) {
          if (by === "agent") into(owned.agent, owned.agent, owned.usage)
          else for (const [day, usage] of days) if (day >= since) into(day, owned.agent, usage)
        }
        const rows = Array.from(sums.values())
        return by === "day"
          ? rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.agent < b.agent ? -1 : a.agent > b.agent ? 1 : 0))
          : rows.sort(byTokens).slice(0, limit)
      }),
    append: (id, events, now) =>
      Effect.suspend(() => {
        const session = sessions.get(id)
        if (session === undefined) return Effect.fail(new ServerStoreError({ method: "append", description: `no session ${id} was started here` }))
        const ids: Array<number> = []
        let next = session.owned.lastEventId
        for (const event of events) {
          const size = sizeOf(event)
          session.entries.push({ id: ++next, at: now, event })
          session.sizes.push(size)
          session.bytes += size
          ids.push(next)
        }
        const { entries, sizes } = session
        let head = session.head
        let bytes = session.bytes
        while (entries.length - head > window) bytes -= sizes[head++]!
        // The newest event stays, however large: a reader can always resume after the last.
        while (bytes > windowBytes && head < entries.length - 1) bytes -= sizes[head++]!
        session.bytes = bytes
        if (head > 1024 && head * 2 > entries.length) {
          entries.splice(0, head)
          sizes.splice(0, head)
          head = 0
        }
        session.head = head
        const added = usageOf(events, NO_USAGE)
        if (tokensOf(added) > 0) {
          const day = dayOf(now)
          session.days.set(day, add(session.days.get(day) ?? NO_USAGE, added))
        }
        session.owned = { ...session.owned, lastEventId: next, lastActivity: now, usage: add(session.owned.usage, added) }
        session.running = runningAfter(events, session.running)
        waiters.wake(id)
        return Effect.succeed(ids)
      }),
    read: (id, after, limit) =>
      Effect.sync(() => {
        const session = sessions.get(id)
        if (session === undefined) return { entries: [], oldest: 0, last: 0 }
        const { entries, head } = session
        const oldest = entries.length === head ? 0 : entries[head]!.id
        // Entries are consecutive: the one after `after` is at a known index.
        const start = head + Math.max(0, oldest === 0 ? 0 : after + 1 - oldest)
        return { entries: entries.slice(start, start + limit), oldest, last: session.owned.lastEventId }
      }),
    wait: (id, after) =>
      Effect.suspend(() => {
        const session = sessions.get(id)
        if (session !== undefined && session.owned.lastEventId > after) return Effect.void
        return Deferred.await(waiters.next(id))
      })
  })
}

/**
 * The store in memory.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options: { readonly window?: number | undefined; readonly windowBytes?: number | undefined } = {}): Layer.Layer<ServerStore> =>
  Layer.sync(ServerStore, () => makeMemory(options))

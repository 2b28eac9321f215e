/**
 * outbox — a session's events on their way out: numbered in the order they are published, into
 * the running run's own stream (waiting for a slow reader) and to the observers (`events`, which
 * never wait). An event nobody reads is numbered, not made. What the MCP servers report between
 * runs reaches the observers at once and is kept (the latest `MAX_PENDING`) for the next run's own
 * stream. The `Actor` is an outbox: it alone publishes, and it says when the session closes.
 */
import { Effect, type Scope, type Stream } from "effect"
import type * as SessionEvent from "../SessionEvent.ts"
import type * as ToolSource from "../ToolSource.ts"
import * as EventHub from "./eventHub.ts"
import type { Run } from "./Run.ts"

/** How many between-run MCP events a session keeps for its next run's stream. */
export const MAX_PENDING = 64

/** A session's outgoing events: its hub, its numbering, the events kept for the next run. */
export abstract class Outbox {
  protected readonly hub: EventHub.Hub = EventHub.make()
  #seq = 0
  /**
   * MCP events that happened between runs, published when the next run starts; only the latest
   * `MAX_PENDING` are kept (a server flapping for hours between runs must not grow the session).
   */
  #pending: Array<ToolSource.Event> | undefined = undefined
  /**
   * Open; closing once the session's scope closes (its MCP servers' events then go to observers
   * only); stopped once the shutdown ran (nothing is queued any more). It only moves forward.
   */
  protected phase: "open" | "closing" | "stopped" = "open"

  abstract get id(): string

  get events(): Stream.Stream<SessionEvent.SessionEvent> {
    return EventHub.observe(this.hub)
  }

  get subscribe(): Effect.Effect<Stream.Stream<SessionEvent.SessionEvent>, never, Scope.Scope> {
    return EventHub.subscribe(this.hub)
  }

  /** Whether an observer reads the events now. */
  protected get watched(): boolean {
    return (this.hub.observers?.size ?? 0) > 0
  }

  /** The session's scope is closing: its MCP servers' events go to observers only from now on. */
  markClosing(): void {
    if (this.phase === "open") this.phase = "closing"
  }

  /**
   * Numbers and delivers one event: of `run` (events from inside the run wait for a slow stream
   * reader; the actor's own, AgentStart, Error and AgentEnd, never wait), or between runs to the
   * observers, with an empty run id.
   */
  publish(run: Run | undefined, payload: SessionEvent.Payload, wait = false): Effect.Effect<void> {
    // Nobody reads it (a `run` with no stream, no observer): it is numbered, not made.
    if (run?.sink === undefined && this.hub.observers === undefined) {
      this.#seq++
      return Effect.void
    }
    // The payload is one member of the union; adding the base fields gives back that member.
    const event = { ...payload, sessionId: this.id, runId: run === undefined ? "" : run.id, seq: this.#seq++ } as SessionEvent.SessionEvent
    if (run === undefined) return EventHub.deliver(this.hub, undefined, event, false)
    const delivered = EventHub.deliver(this.hub, run.sink, event, wait)
    if (payload._tag === "AgentEnd" && run.sink !== undefined) EventHub.endSink(run.sink)
    return delivered
  }

  /**
   * Delivers a sub-agent's event into `run`, as its own session numbered it: it takes no number
   * here, and its AgentEnd does not end `run`'s stream.
   */
  forward(run: Run, event: SessionEvent.SessionEvent, wait: boolean): Effect.Effect<void> {
    return EventHub.deliver(this.hub, run.sink, event, wait)
  }

  /** Hands `run`'s own stream what the MCP servers reported since the previous run (observers had it). */
  protected flushPending(run: Run): Effect.Effect<void> {
    return Effect.suspend(() => {
      const pending = this.#pending
      this.#pending = undefined
      if (pending === undefined || run.sink === undefined) return Effect.void
      const sink = run.sink
      return Effect.forEach(pending, (event) => {
        const delivered = { ...event, sessionId: this.id, runId: run.id, seq: this.#seq++ } as SessionEvent.SessionEvent
        return EventHub.deliver(EventHub.unobserved, sink, delivered, false)
      }, { discard: true })
    })
  }

  /** Keeps a between-runs event for the next run's own stream, while the session is open. */
  protected keep(event: ToolSource.Event): void {
    if (this.phase === "open" && (this.#pending ??= []).push(event) > MAX_PENDING) this.#pending.shift()
  }
}

/**
 * subAgents — what a session gives the sub-agents its calls start (`Agent.asTool`, SubAgent.ts).
 *
 * A batch's calls get a `Host` (`Tool.Context.subAgents`): the session's scope, which a
 * sub-agent's session lives under; the MCP connections it holds, by server name; a way into the
 * running run's stream; and the run's tally of what its sub-agents spent, which its result adds
 * up (`total`). A sub-agent's session is started with a `Lineage` in its context: its agent path,
 * the connections it may reuse, and the count of sub-agents running under the top-level run, so
 * its own sub-agents know their depth and share the bound. A session started by a program has
 * none: nothing here is held by a session that starts no sub-agent. `observe` runs a sub-agent's
 * run with its events handed on as they happen, and leaves nothing behind when the caller is
 * interrupted: the run is aborted, its last events (AgentEnd) still handed on.
 */
import { Cause, Context, Deferred, Effect, Exit, Fiber, Option, Queue, type Scope, Semaphore } from "effect"
import * as Model from "../../Model.ts"
import * as Redactor from "../../Redactor.ts"
import type { RunError } from "../../SessionError.ts"
import type * as SessionEvent from "../../SessionEvent.ts"
import type * as SubAgent from "../../SubAgent.ts"
import type * as ToolSource from "../../ToolSource.ts"
import type { Actor } from "./Actor.ts"
import * as EventHub from "./eventHub.ts"
import type { Publisher, Run, RunOptions, RunResult } from "./Run.ts"

/**
 * What a sub-agent's session inherits from the session whose call started it.
 */
export class Lineage extends Context.Service<Lineage, {
  /** Its agent path, the top-level session's agent first. */
  readonly path: ReadonlyArray<string>
  /** The MCP connections its ancestors hold, by server name: a server of the same name is reused. */
  readonly sources: ReadonlyMap<string, ToolSource.Running>
  /** Sub-agents running under the top-level run now. */
  readonly tree: { running: number }
}>()("@condukt/core/SubAgent/Lineage") {}

/** The agent path of the session whose context is `context` (its agent's name alone at the top). */
export const pathOf = (context: Context.Context<never>, agent: string): ReadonlyArray<string> => {
  const lineage = Context.getOption(context, Lineage)
  return Option.isSome(lineage) ? lineage.value.path : [agent]
}

/** A run's tally of its sub-agents: how many run now, and what those that ended spent. */
export interface Spent {
  running: number
  usage: Model.Usage | undefined
  readonly byAgent: Record<string, Model.Usage>
  /** The sum of their costs; `undefined` once one had none (its model unpriced). */
  cost: number | undefined
}

const addUsage = (a: Model.Usage | undefined, b: Model.Usage): Model.Usage => (a === undefined ? b : Model.addUsage(a, b))

const tallyOf = (run: Run): Spent => run.subAgents ??= { running: 0, usage: undefined, byAgent: {}, cost: 0 }

/**
 * What one batch's calls get: made per batch, holding the run it belongs to (events and usage go
 * there), the session's scope and its MCP connections.
 */
export class Host implements SubAgent.Host {
  readonly scope: Scope.Scope
  readonly #servers: ReadonlyArray<{ readonly name: string }>
  readonly #running: ReadonlyArray<ToolSource.Running>
  readonly #redact: (text: string) => string
  readonly #events: Publisher
  readonly #run: Run

  constructor(
    scope: Scope.Scope,
    servers: ReadonlyArray<{ readonly name: string }>,
    running: ReadonlyArray<ToolSource.Running>,
    redact: (text: string) => string,
    events: Publisher,
    run: Run
  ) {
    this.scope = scope
    this.#servers = servers
    this.#running = running
    this.#redact = redact
    this.#events = events
    this.#run = run
  }

  /** The session's MCP connections by server name (its sources start in its agent's order). */
  get sources(): ReadonlyMap<string, ToolSource.Running> {
    const byName = new Map<string, ToolSource.Running>()
    this.#running.forEach((running, i) => {
      const server = this.#servers[i]
      if (server !== undefined) byName.set(server.name, running)
    })
    return byName
  }

  get tree(): { running: number } {
    return tallyOf(this.#run)
  }

  /** A sub-agent's event, redacted with this session's secrets too, into the running run. */
  forward(event: SessionEvent.SessionEvent, wait: boolean): Effect.Effect<void> {
    const redacted = this.#redact === Redactor.none.redact ? event : Redactor.redactValue(this.#redact, event)
    return this.#events.forward(this.#run, redacted, wait)
  }

  spend(share: SubAgent.Share): void {
    const tally = tallyOf(this.#run)
    tally.usage = addUsage(tally.usage, share.usage)
    for (const [path, usage] of Object.entries(share.byAgent)) tally.byAgent[path] = addUsage(tally.byAgent[path], usage)
    tally.cost = tally.cost === undefined || share.cost === undefined ? undefined : tally.cost + share.cost
  }
}

/**
 * A completed run's result with its sub-agents' spending added: `usage` summed, `byAgent` (this
 * session's agent first), `cost` only when every agent's model had a price.
 */
export const total = (result: RunResult, run: Run, context: Context.Context<never>, agent: string): RunResult => {
  const tally = run.subAgents
  if (tally?.usage === undefined) return result
  const { cost: _, ...rest } = result
  const own = pathOf(context, agent).join("/")
  const cost = result.cost === undefined || tally.cost === undefined ? undefined : result.cost + tally.cost
  return {
    ...rest,
    usage: addUsage(result.usage, tally.usage),
    ...(cost === undefined ? {} : { cost }),
    byAgent: { [own]: addUsage(tally.byAgent[own], result.usage), ...withoutKey(tally.byAgent, own) }
  }
}

const withoutKey = (record: Readonly<Record<string, Model.Usage>>, key: string) => {
  const { [key]: _, ...rest } = record
  return rest
}

/**
 * Hands on `sink`'s events one at a time until it ends: each taken (interruptibly), its credit
 * given back, then handed on waiting for the parent's reader; interrupted during that wait (the
 * parent's reader may have gone), the event is handed on without waiting, never lost.
 */
const pump = (
  sink: EventHub.Sink,
  forward: (event: SessionEvent.SessionEvent, wait: boolean) => Effect.Effect<void>
): Effect.Effect<void> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.exit(restore(Queue.take(sink.queue))), (taken) =>
      Exit.isFailure(taken)
        ? Effect.void
        : Semaphore.release(sink.credits, 1).pipe(
          Effect.andThen(Effect.onInterrupt(restore(forward(taken.value, true)), () => forward(taken.value, false))),
          Effect.andThen(Effect.suspend(() => pump(sink, forward)))
        ))
  )

/**
 * Runs `prompt` on `actor`'s session, each event handed to `forward` as it happens (waiting for
 * it: the parent's reader paces the sub-agent). Interrupted, it aborts the run, waits for it to
 * end (its tools and their processes gone), and hands on what is left without waiting (the
 * parent's reader may have gone), AgentEnd included.
 */
export const observe = <R>(
  actor: Actor<R>,
  prompt: string,
  options: RunOptions | undefined,
  forward: (event: SessionEvent.SessionEvent, wait: boolean) => Effect.Effect<void>
): Effect.Effect<RunResult, RunError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const sink = yield* EventHub.makeSink
      const run = yield* actor.enqueue(prompt, options, sink)
      const forwarding = yield* Effect.forkChild(pump(sink, forward), { startImmediately: true })
      const exit = yield* Effect.exit(restore(Deferred.await(run.done)))
      const aborted = Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
      if (aborted) {
        yield* actor.cancel(run)
        yield* Effect.exit(Deferred.await(run.done))
      }
      // A run dropped before it started publishes no AgentEnd: its stream ends here.
      EventHub.endSink(sink)
      // Waiting for the last events, the caller may give up too: what is left goes without waiting.
      const hurried = aborted || Exit.isFailure(yield* Effect.exit(restore(Fiber.await(forwarding))))
      if (hurried) {
        yield* Fiber.interrupt(forwarding)
        yield* Effect.forEach(yield* Queue.clear(sink.queue), (event) => forward(event, false), { discard: true })
      }
      return yield* (hurried && !aborted ? Effect.interrupt : exit)
    })
  )

/**
 * subAgents — how a session runs the sub-agents its calls start (`Agent.asTool`).
 *
 * Each run is given a `Host` (`Agent.SubAgentHost`): a call to a sub-agent tool checks the bounds,
 * opens a scope under the session's, starts the child there (through the session's actor, which
 * alone knows how to start a session), runs its prompt with its events handed on into the run's
 * stream as they happen, tagged with their agent path, and adds its tokens to the run's tally,
 * which its result sums up (`total`). A child is started with a `Lineage` in its context: its agent
 * path, the MCP connections it may reuse, the count of sub-agents running under the top-level
 * run, so its own sub-agents know their depth and share the bound, and the values its ancestors
 * redact, which it redacts too: a caller's model can write a caller's secret into the prompt (the
 * child never declared it), and no model of the chain may read it. A session a program starts
 * has none: nothing here is held by a session that starts no sub-agent. `observe` leaves nothing
 * behind when the caller is interrupted: the child's run is aborted, its last events (AgentEnd)
 * still handed on.
 */
import { Cause, Context, Deferred, Effect, Exit, Fiber, Option, Queue, type Redacted, Scope, Semaphore } from "effect"
import * as Agent from "../Agent.ts"
import type * as Approval from "../Approval.ts"
import type * as ApprovalLog from "../ApprovalLog.ts"
import type * as ApprovalRecord from "../ApprovalRecord.ts"
import * as Model from "../Model.ts"
import * as Redactor from "../Redactor.ts"
import * as Sandbox from "../Sandbox.ts"
import type { RunError, StartError } from "../SessionError.ts"
import type { SessionStoreError } from "../SessionStoreError.ts"
import type * as SessionEvent from "../SessionEvent.ts"
import * as Tool from "../Tool.ts"
import type * as ToolSource from "../ToolSource.ts"
import * as EventHub from "./eventHub.ts"
import type { Child, Publisher, Run, RunOptions, RunResult, Spent } from "./Run.ts"

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
  /**
   * Every value its ancestors redact (their secrets, models' keys, MCP servers' credentials, and
   * what they inherited): its session redacts them with its own, its tools never receive them.
   */
  readonly secrets: ReadonlyArray<Readonly<Record<string, Redacted.Redacted<string>>>>
  /**
   * The top-level session: its id and its store's approval log. A sub-agent's requests are its
   * records, answered through its session (`answerWaiting`, the `Approvals` service).
   */
  readonly root: Root
}>()("@condukt/core/runtime/subAgents/Lineage") {}

/** The top-level session of a tree of sub-agents, as its descendants' approval records name it. */
export interface Root {
  readonly sessionId: string
  readonly log: ApprovalLog.Service<SessionStoreError> | undefined
}

/** The agent path of the session whose context is `context` (its agent's name alone at the top). */
export const pathOf = (context: Context.Context<never>, agent: string): ReadonlyArray<string> => {
  const lineage = Context.getOption(context, Lineage)
  return Option.isSome(lineage) ? lineage.value.path : [agent]
}

const addUsage = (a: Model.Usage | undefined, b: Model.Usage): Model.Usage => (a === undefined ? b : Model.addUsage(a, b))

const tallyOf = (run: Run): Spent => run.subAgents ??= { running: 0, usage: undefined, byAgent: {}, cost: 0, children: new Set() }

/** One sub-agent run's tokens for its caller's result: its total, by agent path, and its cost. */
interface Share {
  readonly usage: Model.Usage
  readonly byAgent: Readonly<Record<string, Model.Usage>>
  /** `undefined` when a model had no price. */
  readonly cost: number | undefined
}

// The texts the calling model reads.
const tooDeep = (agent: string, maxDepth: number) =>
  `Sub-agent ${agent} was not started: sub-agents may nest ${maxDepth} deep at most; do this task yourself`
const tooMany = (agent: string, maxConcurrent: number) =>
  `Sub-agent ${agent} was not started: ${maxConcurrent} sub-agents are running, the most at once; call it again once one has answered`
const failed = (agent: string, message: string) => `Sub-agent ${agent} failed: ${message}`

/**
 * What one run's calls get for their sub-agents (`Agent.SubAgentHost`), made when the run starts:
 * the session's scope, which a child's lives under; its MCP connections by server name; the values
 * it redacts, which a child redacts too; the run, whose stream the child's events join and whose
 * result its tokens join.
 */
export class Host {
  readonly #scope: Scope.Scope
  readonly #servers: ReadonlyArray<{ readonly name: string }>
  readonly #running: ReadonlyArray<ToolSource.Running>
  readonly #known: Lineage["Service"]["secrets"]
  readonly #redact: (text: string) => string
  readonly #events: Publisher
  readonly #run: Run
  readonly #log: Root["log"]

  constructor(
    scope: Scope.Scope,
    servers: ReadonlyArray<{ readonly name: string }>,
    running: ReadonlyArray<ToolSource.Running>,
    known: Lineage["Service"]["secrets"],
    redact: (text: string) => string,
    events: Publisher,
    run: Run,
    log: Root["log"]
  ) {
    this.#scope = scope
    this.#servers = servers
    this.#running = running
    this.#known = known
    this.#redact = redact
    this.#events = events
    this.#run = run
    this.#log = log
  }

  /**
   * One call: the bounds checked (depth from the session's lineage, the count shared by the
   * top-level run's tree), then a child run in a scope under the session's, counted while it runs.
   */
  run<R>(agent: Agent.Agent<R>, settings: Agent.SubAgentSettings, input: unknown, context: Tool.Context): Effect.Effect<Tool.Output, string, R> {
    return Effect.flatMap(Effect.serviceOption(Lineage), (found) => {
      const lineage = Option.getOrUndefined(found)
      const path = [...(lineage?.path ?? [context.agent]), agent.name]
      if (path.length - 1 > settings.maxDepth) return Effect.fail(tooDeep(agent.name, settings.maxDepth))
      const tree = lineage?.tree ?? tallyOf(this.#run)
      if (tree.running >= settings.maxConcurrent) return Effect.fail(tooMany(agent.name, settings.maxConcurrent))
      // Its ancestors' connections and this session's: the nearest of one name wins.
      const sources = lineage === undefined ? this.sources() : new Map([...lineage.sources, ...this.sources()])
      // Counted again where the place is taken, in one step: siblings may have taken the last ones
      // while this call's prompt was made.
      const place = Effect.suspend(() =>
        tree.running >= settings.maxConcurrent
          ? Effect.fail(tooMany(agent.name, settings.maxConcurrent))
          : Effect.sync(() => void tree.running++)
      )
      return Effect.flatMap(settings.promptOf(input), (prompt) =>
        Effect.acquireUseRelease(
          place,
          () =>
            Effect.acquireUseRelease(
              Scope.fork(this.#scope),
              (scope) =>
                this.child(agent, settings, prompt, context, scope, {
                  path,
                  sources,
                  tree,
                  secrets: this.#known,
                  root: lineage?.root ?? { sessionId: context.sessionId, log: this.#log }
                }),
              (scope, exit) => Scope.close(scope, exit)
            ),
          () => Effect.sync(() => void tree.running--)
        ))
    })
  }

  /** Starts the child in `scope`, runs the prompt with its events handed on, and counts its tokens. */
  private child<R>(
    agent: Agent.Agent<R>,
    settings: Agent.SubAgentSettings,
    prompt: string,
    context: Tool.Context,
    scope: Scope.Scope,
    lineage: Lineage["Service"]
  ): Effect.Effect<Tool.Output, string, R> {
    const starting: Effect.Effect<Child, StartError, R> = Effect.provideService(this.#events.startSession(agent, scope), Lineage, lineage)
    const key = lineage.path.join("/")
    const self = this
    return Effect.gen(function*() {
      // The caller's sandbox, unless the agent names its own.
      const child = yield* Effect.mapError(
        agent.sandbox === undefined ? Effect.provideService(starting, Sandbox.Sandbox, context.sandbox) : starting,
        (error) => failed(agent.name, error.message)
      )
      // While it runs, its waiting calls can be answered through this session (`answerWaiting`).
      const children = tallyOf(self.#run).children
      children.add(child)
      const exit = yield* Effect.exit(Effect.ensuring(
        observe(child, prompt, settings.output === undefined ? undefined : { output: settings.output }, (event, wait) =>
          self.forward(event.agentPath === undefined ? { ...event, agentPath: lineage.path, parentCallId: context.callId } : event, wait)),
        Effect.sync(() => children.delete(child))
      ))
      if (Exit.isSuccess(exit)) {
        const result = exit.value
        self.spend({ usage: result.usage, byAgent: result.byAgent ?? { [key]: result.usage }, cost: result.cost })
        return settings.output === undefined ? result.text : Tool.structured(result.text, result.value)
      }
      // A run that failed or was aborted still spent its replies' tokens: its session counted them.
      self.spend({ usage: child.usage, byAgent: { [key]: child.usage }, cost: child.cost })
      return yield* Effect.failCause(Cause.map(exit.cause, (error) => failed(agent.name, error.message)))
    })
  }

  /** The session's MCP connections by server name (its sources start in its agent's order). */
  private sources(): ReadonlyMap<string, ToolSource.Running> {
    const byName = new Map<string, ToolSource.Running>()
    this.#running.forEach((running, i) => {
      const server = this.#servers[i]
      if (server !== undefined) byName.set(server.name, running)
    })
    return byName
  }

  /** A child's event, redacted with this session's secrets too, into the run. */
  private forward(event: SessionEvent.SessionEvent, wait: boolean): Effect.Effect<void> {
    const redacted = this.#redact === Redactor.none.redact ? event : Redactor.redactValue(this.#redact, event)
    return this.#events.forward(this.#run, redacted, wait)
  }

  private spend(share: Share): void {
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
export const observe = (
  actor: Child,
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

/**
 * Answers `callId` where it waits in a sub-agent running under `run` (or under one of theirs, the
 * nearest first): the sub-agent's `ApprovalRequested` reached the caller's stream, so the caller's
 * session answers it. `undefined` when no sub-agent waits on that call.
 */
export const answerWaiting = (
  run: Run | undefined,
  callId: string,
  answer: Approval.Answer,
  by?: ApprovalRecord.By
): Effect.Effect<void, Approval.NotPending> | undefined => {
  const children = run?.subAgents?.children
  if (children === undefined) return undefined
  for (const child of children) {
    if (child.approvals?.pending.some((pending) => pending.callId === callId) === true) return child.approvals.answer(callId, answer, by)
  }
  for (const child of children) {
    const deeper = answerWaiting(child.current, callId, answer, by)
    if (deeper !== undefined) return deeper
  }
  return undefined
}

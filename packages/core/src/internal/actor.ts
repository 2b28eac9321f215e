/**
 * actor — the state of a running session and the steps of one run.
 *
 * `Session` forks the actor and settles runs; this module holds what that actor works with and
 * drives one run: the pure `Loop` stepped with the `Model` and the `Executor`, every step's events
 * published as it happens. Nothing here decides how a run ends: it returns or fails, and the actor
 * settles it.
 */
import { type Context, type Deferred, Effect, type Fiber, type Redacted, type Scope, Stream } from "effect"
import type { Agent } from "../Agent.ts"
import type * as Compactor from "../Compactor.ts"
import type * as Executor from "../Executor.ts"
import * as Loop from "../Loop.ts"
import type { Message } from "../Message.ts"
import * as Model from "../Model.ts"
import * as ProjectInstructions from "../ProjectInstructions.ts"
import * as Redactor from "../Redactor.ts"
import type { RunOptions, RunResult } from "./run.ts"
import { MaxTurnsExceeded, type RunError, type SandboxInitFailed, type SessionCrashed } from "../SessionError.ts"
import type * as SessionEvent from "../SessionEvent.ts"
import type * as Tool from "../Tool.ts"
import type * as ToolSource from "../ToolSource.ts"
import * as Compaction from "./compaction.ts"
import * as EventHub from "./eventHub.ts"
import * as SandboxSlot from "./sandboxSlot.ts"
import * as Persistence from "./persistence.ts"
import * as ToolSet from "./toolSet.ts"

/** One queued or running run. */
export interface Run {
  readonly id: string
  readonly prompt: string
  readonly options: RunOptions | undefined
  readonly done: Deferred.Deferred<RunResult, RunError>
  /** The run's own stream, when it was started by `stream`. */
  readonly sink: EventHub.Sink | undefined
}

/** What every tool call of a session shares. */
export type ToolContext = Omit<Tool.Context, "callId" | "assigns">

/**
 * Everything the actor works with; the functions below each take one step of its life. An idle
 * session is this record and its scope: the sandbox, the event observers, the fiber serving the
 * mailbox and the MCP events kept between runs are all made when first needed.
 */
export interface Actor<R> {
  readonly id: string
  readonly agent: Agent<R>
  readonly scope: Scope.Closeable
  /** The scope `start` was called in: it outlives the session's own. */
  readonly parent: Scope.Scope
  /** The start's context: runs are served with it, whoever queued them. */
  readonly context: Context.Context<R>
  readonly model: Model.Service
  /** The agent's tools and the session's MCP servers' tools, refreshed before each request. */
  tools: ToolSet.ToolSet<R>
  sources: ReadonlyArray<ToolSource.Running>
  /**
   * MCP events that happened between runs, published when the next run starts; only the latest
   * `MAX_PENDING` are kept (a server flapping for hours between runs must not grow the session).
   */
  pending: Array<ToolSource.Event> | undefined
  readonly secrets: Readonly<Record<string, Redacted.Redacted<string>>>
  /**
   * The session's redaction: its secrets, its model's and its MCP servers' credentials, then the
   * program's `Redactor`. Set once more after the MCP servers start (their credentials join).
   */
  redact: (text: string) => string
  /**
   * The exact values among those (no patterns), for what streams in: the model's reply text is
   * redacted chunk by chunk with it, a value split across deltas replaced whole.
   */
  streamed: Redactor.Service
  readonly sandbox: SandboxSlot.Slot
  /** Made by the first tool call, with the sandbox. */
  toolContext: ToolContext | undefined
  /** The names of the session's secrets, when some of its tools hand them to processes. */
  readonly audited: { readonly tools: ReadonlySet<string>; readonly secrets: ReadonlyArray<string> } | undefined
  readonly maxTurns: number
  /** Runs waiting their turn, oldest first. */
  readonly mailbox: Array<Run>
  /** Whether a fiber is serving the mailbox; it ends when the mailbox is empty. */
  serving: boolean
  readonly hub: EventHub.Hub
  loop: Loop.State
  assigns: Readonly<Record<string, unknown>>
  /** Where the session saves its completed turns, when it has a store. */
  readonly persistence: Persistence.Persistence | undefined
  readonly compactor: Compactor.Service | undefined
  /** Whether the project's instructions are still to be read (by the first run, through the sandbox). */
  instructions: boolean
  readonly ended: Deferred.Deferred<void, SessionCrashed>
  seq: number
  /** Set before the run's fiber takes its first step, cleared once the actor has settled it. */
  running: { readonly run: Run; readonly fiber: Fiber.Fiber<RunResult, RunError> } | undefined
  /** Set once the session's scope is closing: its MCP servers' events then go to observers only. */
  closing: boolean
  stopped: boolean
  /** Set by a registry: forgets this session, once it has ended. */
  forget: (() => void) | undefined
}

// ---------------------------------------------------------------------------------------------
// Publishing
// ---------------------------------------------------------------------------------------------

/**
 * Numbers and delivers one event of `run`. Events from inside the run wait for a slow stream
 * reader; the actor's own (AgentStart, Error, AgentEnd) never wait.
 */
export const publish = <R>(actor: Actor<R>, run: Run, payload: SessionEvent.Payload, wait = false): Effect.Effect<void> => {
  // The payload is one member of the union; adding the base fields gives back that member.
  const event = { ...payload, sessionId: actor.id, runId: run.id, seq: actor.seq++ } as SessionEvent.SessionEvent
  const delivered = EventHub.deliver(actor.hub, run.sink, event, wait)
  if (payload._tag === "AgentEnd" && run.sink !== undefined) EventHub.endSink(run.sink)
  return delivered
}

/**
 * Publishes an MCP server's event where `ToolSource.StartContext.emit` promises: into the running
 * run; between runs to the observers at once (with an empty run id) and kept for the next run's
 * own stream, so a reader of `stream` also learns what changed before its run.
 */
export const emit = <R>(actor: Actor<R>, raw: ToolSource.Event): Effect.Effect<void> =>
  Effect.suspend(() => {
    // A server's words (why it went down) leave the runtime here: redacted like everything else.
    const event = Redactor.redactValue(actor.redact, raw)
    if (actor.running !== undefined) return publish(actor, actor.running.run, event)
    if (!actor.closing && (actor.pending ??= []).push(event) > MAX_PENDING) actor.pending.shift()
    const between = { ...event, sessionId: actor.id, runId: "", seq: actor.seq++ } as SessionEvent.SessionEvent
    return EventHub.deliver(actor.hub, undefined, between, false)
  })

/** How many between-run MCP events a session keeps for its next run's stream. */
export const MAX_PENDING = 64

/** Hands `run`'s own stream what the MCP servers reported since the previous run (observers had it). */
export const flushPending = <R>(actor: Actor<R>, run: Run): Effect.Effect<void> =>
  Effect.suspend(() => {
    const pending = actor.pending
    actor.pending = undefined
    if (pending === undefined || run.sink === undefined) return Effect.void
    const sink = run.sink
    return Effect.forEach(pending, (event) => {
      const delivered = { ...event, sessionId: actor.id, runId: run.id, seq: actor.seq++ } as SessionEvent.SessionEvent
      return EventHub.deliver(EventHub.unobserved, sink, delivered, false)
    }, { discard: true })
  })

// ---------------------------------------------------------------------------------------------
// Driving one run
// ---------------------------------------------------------------------------------------------

/** One model request: its deltas published as they stream, the reply folded into a message. */
const requestTurn = Effect.fnUntraced(function*<R>(actor: Actor<R>, run: Run, request: Loop.Request, turn: number) {
  yield* publish(actor, run, { _tag: "TurnStart", turn }, true)
  const parts: Array<Model.Part> = []
  const options = run.options?.modelOptions === undefined
    ? actor.agent.modelOptions
    : { ...actor.agent.modelOptions, ...run.options.modelOptions }
  const streamed = actor.model.stream({ system: request.system, messages: request.messages, tools: actor.tools.specs, options })
  yield* Stream.runForEach(actor.streamed === Redactor.none ? streamed : redactText(streamed, actor.streamed), (part) => {
    parts.push(part)
    if (part._tag === "TextDelta") return publish(actor, run, { _tag: "TextDelta", text: part.text }, true)
    if (part._tag === "ThinkingDelta") return publish(actor, run, { _tag: "ThinkingDelta", text: part.text }, true)
    return Effect.void
  })
  const usage = Model.usageOf(parts)
  yield* publish(actor, run, { _tag: "TurnEnd", turn, ...usage }, true)
  let finishReason: Model.FinishReason = "other"
  for (const part of parts) if (part._tag === "Finish") finishReason = part.reason
  return { message: Model.toMessage(parts), usage, finishReason }
})

/**
 * A reply whose text deltas are redacted as they stream (a gateway can write a key into the text
 * itself): an end that could begin a secret waits for the next delta, and is let out before any
 * other part and at the end. Thinking is left as it came: a signed block must go back unchanged.
 */
const redactText = (parts: Stream.Stream<Model.Part, Model.ModelError>, redactor: Redactor.Service) =>
  Stream.suspend(() => {
    const text = Redactor.chunks(redactor)
    const held = (): Array<Model.Part> => {
      const rest = text.end()
      return rest === "" ? [] : [{ _tag: "TextDelta", text: rest }]
    }
    return Stream.concat(
      Stream.flatMap(parts, (part) => {
        if (part._tag !== "TextDelta") return Stream.fromIterable([...held(), part])
        const shown = text.next(part.text)
        return shown === "" ? Stream.empty : Stream.succeed<Model.Part>({ _tag: "TextDelta", text: shown })
      }),
      Stream.suspend(() => Stream.fromIterable(held()))
    )
  })

/** What the session's tool calls share, made once with its sandbox (built now if it is not yet). */
const toolContextOf = <R>(actor: Actor<R>) =>
  Effect.map(SandboxSlot.get(actor.sandbox, actor.agent.name, actor.scope), (sandbox) =>
    actor.toolContext = {
      sessionId: actor.id,
      agent: actor.agent.name,
      sandbox,
      cwd: sandbox.cwd,
      secrets: actor.secrets,
      redact: actor.redact
    })

/**
 * The project's instructions (AGENTS.md, CLAUDE.md, skills) join the system prompt before the
 * session's first model request. They are read through the sandbox, so the first run builds it:
 * an idle session still holds none.
 */
const readInstructions = Effect.fnUntraced(function*<R>(actor: Actor<R>) {
  const { sandbox } = actor.toolContext ?? (yield* toolContextOf(actor))
  const project = yield* ProjectInstructions.load(sandbox)
  actor.instructions = false
  if (project !== undefined) actor.loop = { ...actor.loop, system: ProjectInstructions.withProject(actor.agent.system, project) }
})

/**
 * One message's tool calls: all announced, run by the executor, their results published in order.
 * Combinators, not a generator: this frame is held for as long as the calls run.
 */
const runTools = <R>(
  actor: Actor<R>,
  run: Run,
  calls: ReadonlyArray<Executor.Call>
): Effect.Effect<ReadonlyArray<Executor.Result>, SandboxInitFailed, R> =>
  Effect.forEach(calls, (call) =>
    publish(actor, run, { _tag: "ToolCall", callId: call.id, name: call.name, input: call.input }, true), { discard: true }).pipe(
      Effect.andThen(Effect.suspend(() => audit(actor, run, calls))),
      Effect.andThen(Effect.suspend(() => actor.toolContext === undefined ? toolContextOf(actor) : Effect.succeed(actor.toolContext))),
      Effect.flatMap((context) => actor.tools.executor.run(calls, context, actor.assigns)),
      Effect.flatMap((outcome) => {
        actor.assigns = outcome.assigns
        return Effect.as(
          Effect.forEach(outcome.results, (r) =>
            publish(actor, run, {
              _tag: "ToolResult",
              callId: r.callId,
              name: r.name,
              content: r.content,
              isError: r.isError,
              ...(r.data === undefined ? {} : { data: r.data })
            }, true), { discard: true }),
          outcome.results
        )
      })
    )

/** The secrets each call of a tool that hands them to processes receives (names only), after the announcements. */
const audit = <R>(actor: Actor<R>, run: Run, calls: ReadonlyArray<Executor.Call>): Effect.Effect<void> => {
  const audited = actor.audited
  if (audited === undefined) return Effect.void
  return Effect.forEach(calls, (call) =>
    audited.tools.has(call.name)
      ? publish(actor, run, { _tag: "SecretsUsed", callId: call.id, name: call.name, secrets: audited.secrets }, true)
      : Effect.void, { discard: true })
}

/** What a run has gathered so far: where its messages start in the history, its tokens, its last finish. */
interface Progress {
  readonly from: number
  readonly usage: Model.Usage
  readonly finishReason: Model.FinishReason
}

/**
 * A run: the loop driven to completion. The state is saved after every step, so an abort or a
 * failure at any point leaves a history the next run can continue from. Combinators, not a
 * generator: a run waiting on its model or its tools holds this frame all along.
 */
export const drive = <R>(actor: Actor<R>, run: Run): Effect.Effect<RunResult, RunError, R> =>
  Effect.suspend(() => actor.instructions ? Effect.andThen(readInstructions(actor), Effect.suspend(() => submit(actor, run))) : submit(actor, run))

const submit = <R>(actor: Actor<R>, run: Run): Effect.Effect<RunResult, RunError, R> => {
  const step = Loop.submit(actor.loop, run.prompt)
  return advance(actor, run, step, { from: step.state.history.length, usage: Model.emptyUsage, finishReason: "other" })
}

/** One step of the loop: its state becomes the session's, then its action is taken. */
const advance = <R>(actor: Actor<R>, run: Run, step: Loop.Step, progress: Progress): Effect.Effect<RunResult, RunError, R> => {
  actor.loop = step.state
  if (step._tag === "Rejected") {
    if (step.reason === "MaxTurnsExceeded") return Effect.fail(new MaxTurnsExceeded({ sessionId: actor.id, maxTurns: actor.maxTurns }))
    return Effect.die(new Error(`Session ${actor.id}: the loop rejected its own input (${step.reason})`))
  }
  const action = step.action
  if (action._tag === "Complete") {
    const history = step.state.history
    const messages: Array<Message> = []
    for (let i = progress.from; i < history.length; i++) messages.push(history.at(i)!)
    const result: RunResult = { text: action.text, finishReason: progress.finishReason, usage: progress.usage, turns: step.state.turn, messages }
    return Effect.as(Compaction.afterRun(actor, (payload) => publish(actor, run, payload, true)), result)
  }
  if (action._tag === "Request") {
    return ToolSet.refresh(actor.agent, actor.tools, actor.sources, actor.redact).pipe(
      Effect.flatMap((tools) => {
        actor.tools = tools
        return requestTurn(actor, run, action.request, action.turn)
      }),
      Effect.flatMap((reply) =>
        saved(actor, run, Loop.receiveCompletion(step.state, reply.message), {
          from: progress.from,
          usage: Model.addUsage(progress.usage, reply.usage),
          finishReason: reply.finishReason
        })
      )
    )
  }
  return Effect.flatMap(runTools(actor, run, action.calls), (results) => saved(actor, run, Loop.receiveToolOutputs(step.state, results), progress))
}

/** A turn is complete (a reply without calls, or every result of its calls): it is saved before the next step. */
const saved = <R>(actor: Actor<R>, run: Run, step: Loop.Step, progress: Progress): Effect.Effect<RunResult, RunError, R> =>
  step.state.status === "AwaitingTools"
    ? advance(actor, run, step, progress)
    : Effect.andThen(
      Persistence.commit(actor.persistence, step.state.history, actor.assigns, actor.redact),
      Effect.suspend(() => advance(actor, run, step, progress))
    )

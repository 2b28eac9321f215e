/**
 * Session — an agent running as a supervised actor.
 *
 * `start` builds what the session owns inside its own scope (its sandbox, its model, later its MCP
 * clients), then forks the actor: one fiber taking runs from a mailbox, in order, each driving the
 * pure `Loop` with the `Model` and the `Executor` and publishing `SessionEvent`s. Closing the
 * scope (`stop`, interruption, the program's end) releases everything in reverse order: the
 * running turn with its tools and their processes, then the sandbox. `abort` interrupts only the
 * running turn; the session stays usable.
 */
import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer, Option, PubSub, Queue, type Redacted, Ref, Schema, Scope, Stream } from "effect"
import type { Agent } from "./Agent.ts"
import * as Executor from "./Executor.ts"
import * as uuid7 from "./internal/uuid7.ts"
import * as Loop from "./Loop.ts"
import type { Message } from "./Message.ts"
import * as Model from "./Model.ts"
import * as Sandbox from "./Sandbox.ts"
import * as SessionEvent from "./SessionEvent.ts"

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category errors */
export class MaxTurnsExceeded extends Schema.TaggedError<MaxTurnsExceeded>()("MaxTurnsExceeded", {
  sessionId: Schema.String,
  maxTurns: Schema.Int
}) {
  override get message() {
    return `Session ${this.sessionId}: the run needed more than ${this.maxTurns} model requests (raise maxTurns or simplify the task)`
  }
}

/** @since 0.1.0 @category errors */
export class RunAborted extends Schema.TaggedError<RunAborted>()("RunAborted", { sessionId: Schema.String }) {
  override get message() {
    return `Session ${this.sessionId}: the run was aborted`
  }
}

/** @since 0.1.0 @category errors */
export class SessionStopped extends Schema.TaggedError<SessionStopped>()("SessionStopped", { sessionId: Schema.String }) {
  override get message() {
    return `Session ${this.sessionId} is stopped`
  }
}

/** @since 0.1.0 @category errors */
export class SandboxInitFailed extends Schema.TaggedError<SandboxInitFailed>()("SandboxInitFailed", {
  agent: Schema.String,
  description: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `Agent ${this.agent}: the sandbox could not be built: ${this.description}`
  }
}

/** A defect escaped a run (a bug, not a tool failure): the session is dead, as an OTP process would be. */
export class SessionCrashed extends Schema.TaggedError<SessionCrashed>()("SessionCrashed", {
  sessionId: Schema.String,
  cause: Schema.Defect()
}) {
  override get message() {
    const cause = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `Session ${this.sessionId} crashed: ${cause}`
  }
}

/** Why a run did not produce a final text. */
export type RunError = MaxTurnsExceeded | RunAborted | SessionStopped | SessionCrashed | Model.ModelError

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * How to start a session; `RIn` is what the `sandbox` layer needs, which `start` then requires
 * (`Condukt.layer` provides what `LocalSandbox.layer` needs).
 *
 * @since 0.1.0
 * @category models
 */
export interface StartOptions<RIn = never> {
  /** Defaults to a new UUIDv7. */
  readonly id?: string | undefined
  /** Wins over the agent's sandbox and any provided `Sandbox`. */
  readonly sandbox?: Layer.Layer<Sandbox.Sandbox, unknown, RIn> | undefined
  /** Seed assigns; they live as long as the session. */
  readonly assigns?: Readonly<Record<string, unknown>> | undefined
  /** Resolved secrets, for trusted tools. */
  readonly secrets?: Readonly<Record<string, Redacted.Redacted<string>>> | undefined
  readonly maxTurns?: number | undefined
}

/** A running session. */
export interface Session {
  readonly id: string
  readonly agent: string
  /** Queues a run and waits for its final text; interrupting the wait aborts or drops the run. */
  readonly run: (prompt: string) => Effect.Effect<string, RunError>
  /** Queues a run and streams its events, AgentStart to AgentEnd. */
  readonly stream: (prompt: string) => Stream.Stream<SessionEvent.SessionEvent, SessionStopped>
  /** Every event of every run from now on; it ends when the session ends. */
  readonly events: Stream.Stream<SessionEvent.SessionEvent>
  readonly history: Effect.Effect<ReadonlyArray<Message>>
  readonly assigns: Effect.Effect<Readonly<Record<string, unknown>>>
  /** Interrupts the running turn, its tools and their processes; queued runs still run. */
  readonly abort: Effect.Effect<void>
  /** Closes the session's scope; queued and later runs fail with `SessionStopped`. */
  readonly stop: Effect.Effect<void>
  /** Waits for the session to end: succeeds when it is stopped, fails when it crashes. */
  readonly join: Effect.Effect<void, SessionCrashed>
}

/**
 * The sandbox of a session that names none and finds no `Sandbox` provided around it.
 * `Condukt.layer` sets it to a LocalSandbox at the process's working directory.
 *
 * @since 0.1.0
 * @category services
 */
export const DefaultSandbox = Context.Reference<Layer.Layer<Sandbox.Sandbox, unknown> | undefined>(
  "@condukt/core/Session/DefaultSandbox",
  { defaultValue: () => undefined }
)

/** What a model reads for calls that were running when their turn was aborted. */
export const ABORTED_RESULT = "Interrupted: the user aborted the run before this call finished"

interface Command {
  readonly runId: string
  readonly prompt: string
  readonly done: Deferred.Deferred<string, RunError>
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

// An agent is an immutable value: its executor and tool specs are made once, whatever the number
// of sessions running it.
interface Compiled<R> {
  readonly executor: Executor.Executor<R>
  readonly specs: ReadonlyArray<Model.ToolSpec>
}
const compiledAgents = new WeakMap<Agent<unknown>, Compiled<unknown>>()
const compiled = <R>(agent: Agent<R>): Compiled<R> => {
  // The entry was made from this very agent, so its executor needs exactly the agent's R.
  const cached = compiledAgents.get(agent) as Compiled<R> | undefined
  if (cached !== undefined) return cached
  const entry: Compiled<R> = {
    executor: Executor.make(agent.tools, { concurrency: agent.toolConcurrency, timeout: agent.toolTimeout }),
    specs: agent.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }))
  }
  compiledAgents.set(agent, entry)
  return entry
}

const buildSandbox = <R, RIn>(agent: Agent<R>, options: StartOptions<RIn>, scope: Scope.Scope) =>
  Effect.gen(function*() {
    const fromLayer = <LR>(layer: Layer.Layer<Sandbox.Sandbox, unknown, LR>) =>
      Layer.buildWithScope(layer, scope).pipe(
        Effect.map(Context.get(Sandbox.Sandbox)),
        Effect.mapError((cause) =>
          new SandboxInitFailed({ agent: agent.name, description: cause instanceof Error ? cause.message : String(cause), cause })
        )
      )
    if (options.sandbox !== undefined) return yield* fromLayer(options.sandbox)
    if (agent.sandbox !== undefined) return yield* fromLayer(agent.sandbox)
    const provided = yield* Effect.serviceOption(Sandbox.Sandbox)
    if (Option.isSome(provided)) return provided.value
    const fallback = yield* DefaultSandbox
    if (fallback !== undefined) return yield* fromLayer(fallback)
    return yield* new SandboxInitFailed({
      agent: agent.name,
      description: "no sandbox: pass the sandbox option, give the agent one, provide a Sandbox layer, or use Condukt.layer"
    })
  })

/**
 * Starts a session for `agent` in the current scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = <R, RIn = never>(
  agent: Agent<R>,
  options: StartOptions<RIn> = {}
): Effect.Effect<Session, SandboxInitFailed | Model.ModelError, R | RIn | Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Scope.fork(yield* Scope.Scope)
    return yield* make(agent, options, scope).pipe(Effect.onError((cause) => Scope.close(scope, Exit.failCause(cause))))
  }).pipe(Effect.withSpan("Session.start", { attributes: { agent: agent.name } }))

const make = Effect.fnUntraced(function*<R, RIn>(agent: Agent<R>, options: StartOptions<RIn>, scope: Scope.Closeable) {
  const id = options.id ?? (yield* uuid7.make)
  const sandbox = yield* buildSandbox(agent, options, scope)
  const providedModel = yield* Effect.serviceOption(Model.Model)
  const model = Option.isSome(providedModel) ? providedModel.value : yield* Model.resolve(agent.model)
  const { executor, specs } = compiled(agent)
  const toolContext = { sessionId: id, agent: agent.name, sandbox, cwd: sandbox.cwd, secrets: options.secrets ?? {} }
  const maxTurns = options.maxTurns ?? agent.maxTurns ?? Loop.DEFAULT_MAX_TURNS

  const mailbox = yield* Queue.unbounded<Command>()
  const events = yield* PubSub.unbounded<SessionEvent.SessionEvent>()
  const loop = yield* Ref.make(Loop.make({ system: agent.system, maxTurns }))
  const assigns = yield* Ref.make<Readonly<Record<string, unknown>>>(options.assigns ?? {})
  const seq = yield* Ref.make(0)
  const running = yield* Ref.make<{ readonly command: Command; readonly fiber: Fiber.Fiber<string, RunError> } | undefined>(undefined)
  const stopped = yield* Ref.make(false)

  const emitter = (runId: string) => (payload: SessionEvent.Payload) =>
    Effect.flatMap(
      Ref.getAndUpdate(seq, (n) => n + 1),
      // The payload is one member of the union; adding the base fields gives back that member.
      (n) => PubSub.publish(events, { ...payload, sessionId: id, runId, seq: n } as SessionEvent.SessionEvent)
    )

  // One run: the loop driven to completion. The state is saved after every step, so an abort or a
  // failure at any point leaves a history the next run can continue from.
  const drive = Effect.fnUntraced(function*(runId: string, prompt: string) {
    const emit = emitter(runId)
    yield* emit({ _tag: "AgentStart", prompt })
    let step = Loop.submit(yield* Ref.get(loop), prompt)
    while (true) {
      yield* Ref.set(loop, step.state)
      if (step._tag === "Rejected") {
        if (step.reason === "MaxTurnsExceeded") return yield* new MaxTurnsExceeded({ sessionId: id, maxTurns })
        return yield* Effect.die(new Error(`Session ${id}: the loop rejected its own input (${step.reason})`))
      }
      const action = step.action
      if (action._tag === "Complete") return action.text
      if (action._tag === "Request") {
        yield* emit({ _tag: "TurnStart", turn: action.turn })
        const parts: Array<Model.Part> = []
        yield* Stream.runForEach(model.stream({ ...action.request, tools: specs }), (part) => {
          parts.push(part)
          if (part._tag === "TextDelta") return emit({ _tag: "TextDelta", text: part.text })
          if (part._tag === "ThinkingDelta") return emit({ _tag: "ThinkingDelta", text: part.text })
          return Effect.void
        })
        const usage = parts.find((p) => p._tag === "Usage")
        yield* emit({
          _tag: "TurnEnd",
          turn: action.turn,
          inputTokens: usage?.inputTokens ?? 0,
          outputTokens: usage?.outputTokens ?? 0
        })
        step = Loop.receiveCompletion(step.state, Model.toMessage(parts))
      } else {
        for (const call of action.calls) {
          yield* emit({ _tag: "ToolCall", callId: call.id, name: call.name, input: call.input })
        }
        const outcome = yield* executor.run(action.calls, toolContext, yield* Ref.get(assigns))
        yield* Ref.set(assigns, outcome.assigns)
        for (const r of outcome.results) {
          yield* emit({
            _tag: "ToolResult",
            callId: r.callId,
            name: r.name,
            content: r.content,
            isError: r.isError,
            ...(r.data === undefined ? {} : { data: r.data })
          })
        }
        step = Loop.receiveToolOutputs(step.state, outcome.results)
      }
    }
  })

  const settle = Ref.update(loop, (state) => Loop.abort(state, ABORTED_RESULT))

  const execute = (command: Command) => {
    const emit = emitter(command.runId)
    return drive(command.runId, command.prompt).pipe(
      Effect.tap(() => emit({ _tag: "AgentEnd", outcome: "completed" })),
      Effect.tapError((error) =>
        settle.pipe(
          Effect.andThen(emit({ _tag: "Error", message: error.message })),
          Effect.andThen(emit({ _tag: "AgentEnd", outcome: "failed" }))
        )
      ),
      Effect.onInterrupt(() =>
        settle.pipe(Effect.andThen(emit({ _tag: "AgentEnd", outcome: "aborted" })))
      ),
      Effect.withSpan("Session.run", { attributes: { sessionId: id, runId: command.runId } })
    )
  }

  // Nobody waits forever: the running and queued runs of a session that ends fail with `reason`,
  // their streams get their AgentEnd, and every event stream then ends.
  const shutdown = (reason: SessionStopped | SessionCrashed) =>
    Effect.gen(function*() {
      yield* Ref.set(stopped, true)
      const interrupted = yield* Ref.getAndSet(running, undefined)
      const queued = yield* Queue.clear(mailbox)
      for (const command of interrupted === undefined ? queued : [interrupted.command, ...queued]) {
        if (yield* Deferred.fail(command.done, reason)) {
          yield* emitter(command.runId)({ _tag: "AgentEnd", outcome: "aborted" })
        }
      }
      yield* PubSub.shutdown(events)
    })

  const ended = yield* Deferred.make<void, SessionCrashed>()
  const actor = Effect.forever(
    Effect.gen(function*() {
      const command = yield* Queue.take(mailbox)
      // Its caller gave up while it was queued: it never starts.
      if (yield* Deferred.isDone(command.done)) return
      const fiber = yield* Effect.forkChild(execute(command), { startImmediately: true })
      yield* Ref.set(running, { command, fiber })
      // If the actor itself is interrupted (the session closes), the run goes first, cleanup included.
      const exit = yield* Fiber.await(fiber).pipe(Effect.onInterrupt(() => Fiber.interrupt(fiber)))
      if (Exit.isFailure(exit) && Cause.hasDies(exit.cause)) {
        // Let it crash: the session's state may be inconsistent; its supervisor decides what next.
        const crashed = new SessionCrashed({ sessionId: id, cause: Cause.squash(exit.cause) })
        yield* shutdown(crashed)
        return yield* crashed
      }
      yield* Ref.set(running, undefined)
      yield* Deferred.done(
        command.done,
        Exit.isFailure(exit) && !Exit.hasFails(exit) && Exit.hasInterrupts(exit) ? Exit.fail(new RunAborted({ sessionId: id })) : exit
      )
    })
  )

  // Runs after the actor is interrupted (finalizers run in reverse order).
  yield* Scope.addFinalizer(
    scope,
    Effect.suspend(() => shutdown(new SessionStopped({ sessionId: id }))).pipe(
      Effect.andThen(Deferred.succeed(ended, undefined))
    )
  )
  yield* Effect.forkIn(
    Effect.catch(actor, (crashed) => Deferred.fail(ended, crashed)),
    scope,
    { startImmediately: true }
  )

  const enqueue = (prompt: string) =>
    Effect.gen(function*() {
      if (yield* Ref.get(stopped)) return yield* new SessionStopped({ sessionId: id })
      const command: Command = { runId: yield* uuid7.make, prompt, done: yield* Deferred.make<string, RunError>() }
      yield* Queue.offer(mailbox, command)
      // A shutdown between the check above and the offer has already drained the mailbox: this
      // command would wait forever. The shutdown set `stopped` first, so looking again tells.
      if (yield* Ref.get(stopped)) yield* Deferred.fail(command.done, new SessionStopped({ sessionId: id }))
      return command
    })

  const session: Session = {
    id,
    agent: agent.name,
    // The caller owns its run: interrupting the caller (a timeout, a closed scope) aborts the run
    // if it is running and drops it if it is still queued.
    run: (prompt) =>
      Effect.flatMap(enqueue(prompt), (command) =>
        Deferred.await(command.done).pipe(
          Effect.onInterrupt(() =>
            Effect.flatMap(Ref.get(running), (current) =>
              current?.command === command
                ? Fiber.interrupt(current.fiber)
                : Deferred.fail(command.done, new RunAborted({ sessionId: id })))
          )
        )),
    stream: (prompt) =>
      Stream.unwrap(Effect.gen(function*() {
        const subscription = yield* PubSub.subscribe(events)
        const command = yield* enqueue(prompt)
        return Stream.fromSubscription(subscription).pipe(
          Stream.filter((event) => event.runId === command.runId),
          Stream.takeUntil((event) => event._tag === "AgentEnd")
        )
      })),
    events: Stream.fromPubSub(events),
    history: Effect.map(Ref.get(loop), (state) => state.history),
    assigns: Ref.get(assigns),
    abort: Effect.flatMap(Ref.get(running), (current) => (current === undefined ? Effect.void : Fiber.interrupt(current.fiber))),
    stop: Scope.close(scope, Exit.void),
    join: Deferred.await(ended)
  }
  return session
})

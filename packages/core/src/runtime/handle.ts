/**
 * handle — what `Session.start` hands a program: the session's id and name, and the actor it
 * speaks to. Every operation is made on access (an accessor, so `const { run } = session` still
 * works), so 100,000 idle sessions hold no closures and no effects. A session with MCP servers has
 * the handle that also answers what they ask (`AskedHandle`).
 */
import { Deferred, Effect, Fiber, Stream } from "effect"
import * as Approval from "../Approval.ts"
import type * as ApprovalRecord from "../ApprovalRecord.ts"
import * as Elicitation from "../Elicitation.ts"
import type { SessionError } from "../SessionError.ts"
import type * as SessionEvent from "../SessionEvent.ts"
import type { Actor } from "./Actor.ts"
import * as EventHub from "./eventHub.ts"
import type { RunOptions, Runs } from "./Run.ts"
import type { ServerRequests } from "./serverRequests.ts"
import * as SubAgents from "./subAgents.ts"
import * as WaitNotice from "./waitNotice.ts"

/**
 * A session's handle: its id and name, and the actor it speaks to. Everything else is made on
 * access (an accessor, so `const { run } = session` still works), so 100,000 idle sessions hold
 * no closures and no effects.
 */
export class Handle<R> {
  readonly id: string
  readonly agent: string
  readonly #actor: Actor<R>
  constructor(actor: Actor<R>) {
    this.id = actor.id
    this.agent = actor.agent
    this.#actor = actor
  }
  /** The actor behind a handle this module made. */
  static actorOf(session: object): Actor<unknown> {
    return (session as Handle<unknown>).#actor
  }
  get run(): Runs {
    const actor = this.#actor
    const pending = unanswered(actor, this.requests)
    const run = (prompt: string, options?: RunOptions) =>
      Effect.flatMap(
        // Queued once the caller's fiber runs it: a caller waiting for its result holds only this.
        Effect.suspend(() => actor.enqueue(prompt, options, undefined)),
        // Beside the wait, one fiber says what it waits for when calls wait long for an answer; its
        // timer keeps the process up.
        (run) =>
          Effect.flatMap(Effect.forkChild(WaitNotice.watch(actor, run, pending)), (notice) =>
            Deferred.await(run.done).pipe(
              Effect.onExit(() => Fiber.interrupt(notice)),
              Effect.onInterrupt(() => actor.cancel(run))
            ))
      )
    // With an `output`, the interpreter decoded `value` with it before settling the run.
    return run as Runs
  }
  get stream(): (prompt: string, options?: RunOptions) => Stream.Stream<SessionEvent.SessionEvent, SessionError> {
    const actor = this.#actor
    const pending = unanswered(actor, this.requests)
    return (prompt, options) =>
      Stream.unwrap(Effect.gen(function*() {
        const sink = yield* EventHub.makeSink
        const run = yield* actor.enqueue(prompt, options, sink)
        yield* Effect.addFinalizer(() => actor.cancel(run))
        // As `run`'s caller: a StillWaiting event in the stream when calls wait long, and a timer.
        yield* Effect.forkScoped(WaitNotice.watch(actor, run, pending))
        return EventHub.read(sink)
      }))
  }
  get events() {
    return this.#actor.events
  }
  get subscribe() {
    return this.#actor.subscribe
  }
  get history() {
    const actor = this.#actor
    return Effect.sync(() => actor.history)
  }
  get assigns() {
    const actor = this.#actor
    return Effect.sync(() => actor.assigns)
  }
  get usage() {
    const actor = this.#actor
    return Effect.sync(() => actor.usage)
  }
  get cost() {
    const actor = this.#actor
    return Effect.sync(() => actor.cost)
  }
  get compact() {
    return this.#actor.compact
  }
  get abort() {
    return this.#actor.abort
  }
  get stop() {
    return this.#actor.stop
  }
  get join() {
    return this.#actor.join
  }
  get idle() {
    return this.#actor.idle
  }
  /** What its MCP servers ask, when it has any (`AskedHandle`). */
  protected get requests(): ServerRequests | undefined {
    return undefined
  }
  get pending() {
    const actor = this.#actor
    const requests = this.requests
    return Effect.sync(() => {
      const calls = actor.approvals?.pending ?? []
      return requests === undefined ? calls : [...calls, ...requests.pending]
    })
  }
  get approve(): (callId: string, by?: ApprovalRecord.By) => Effect.Effect<void, Approval.NotPending> {
    const actor = this.#actor
    const requests = this.requests
    return (callId, by) => answer(actor, requests, callId, Approval.approved, by)
  }
  get deny(): (callId: string, reason?: string, by?: ApprovalRecord.By) => Effect.Effect<void, Approval.NotPending> {
    const actor = this.#actor
    const requests = this.requests
    return (callId, reason, by) => answer(actor, requests, callId, Approval.denied(reason), reason === undefined ? by : { ...by, reason })
  }
  get approveAll() {
    const actor = this.#actor
    const requests = this.requests
    return Effect.andThen(
      Effect.suspend(() => actor.approvals?.answerAll(Approval.approved) ?? Effect.void),
      Effect.suspend(() => requests?.answerAll(Approval.approved) ?? Effect.void)
    )
  }
  get respond(): (id: string, answer: Elicitation.Answer) => Effect.Effect<void, Elicitation.NotPending | Elicitation.InvalidAnswer> {
    const actor = this.#actor
    const requests = this.requests
    return (id, given) => requests?.respond(id, given) ?? Effect.fail(new Elicitation.NotPending({ sessionId: actor.id, id }))
  }
}

/** The handle of a session with MCP servers: it also answers what they ask. */
export class AskedHandle<R> extends Handle<R> {
  readonly #requests: ServerRequests
  constructor(actor: Actor<R>, requests: ServerRequests) {
    super(actor)
    this.#requests = requests
  }
  protected override get requests(): ServerRequests {
    return this.#requests
  }
}

/** What the caller of `run` or `stream` waits on that only a person answers: `pending` without the calls an answerer decides. */
const unanswered = <R>(actor: Actor<R>, requests: ServerRequests | undefined) =>
  Effect.sync(() => {
    const calls = actor.approvals?.unanswered ?? []
    return requests === undefined ? calls : [...calls, ...requests.pending]
  })

/**
 * One call's answer: a tool call's, else an MCP server's request's, else a call waiting in a
 * sub-agent of the running run (its request reached this session's stream); a session that never
 * asks has none waiting.
 */
const answer = <R>(
  actor: Actor<R>,
  requests: ServerRequests | undefined,
  callId: string,
  given: Approval.Answer,
  by?: ApprovalRecord.By
): Effect.Effect<void, Approval.NotPending> =>
  Effect.suspend(() => {
    const call = actor.approvals?.answer(callId, given, by) ?? Effect.fail(new Approval.NotPending({ sessionId: actor.id, callId }))
    const own = requests === undefined ? call : Effect.catch(call, (refused) => refused.answered !== undefined ? Effect.fail(refused) : requests.answer(callId, given))
    return Effect.catch(own, (refused) =>
      refused.stopped === true || refused.answered !== undefined ? Effect.fail(refused) : SubAgents.answerWaiting(actor.current, callId, given, by) ?? Effect.fail(refused))
  })

/**
 * Executor — runs the tool calls of one assistant message.
 *
 * Model order is kept: consecutive concurrent calls run in parallel (bounded), a non-concurrent
 * call runs alone after everything before it and before everything after it, and results come
 * back in call order with their ids. Each call runs in its own fiber under its own timeout, so a
 * failure, defect, throw, timeout or interruption in one tool becomes that call's error result
 * and nothing else. The timeout counts the call's running time: a wait for a process permit
 * (`CallDeadline.hold`) is not part of it. This module owns the only rendering of tool failures
 * into model-facing text.
 *
 * What a session adds around its calls wraps the executor (`Wrapper`): a span around each call,
 * an admission after its arguments decoded and before its clock starts (a refusal is its result,
 * the other calls of the batch run meanwhile), a hook before it runs and one with its result.
 * The executor knows none of them: approvals, the journal of call starts and the GenAI spans are
 * the session runtime's (runtime/admission.ts, runtime/journal.ts, runtime/callSpans.ts).
 *
 * Assigns follow Ref-snapshot semantics: every call sees the same start-of-message snapshot and
 * the patches are merged after the whole message, last write wins in call order.
 */
import { Duration, Effect, Exit, Fiber, Option, Result, Schema } from "effect"
import * as CallDeadline from "./CallDeadline.ts"
import * as Redactor from "./Redactor.ts"
import * as Tool from "./Tool.ts"
import { type Call, type Done, errorResult, refusal, render, type Result as CallResult } from "./ToolCall.ts"

export {
  /** @since 0.1.0 @category models */
  type Call,
  /** @since 0.1.0 @category models */
  type Done,
  /** @since 0.1.0 @category rendering */
  refusal,
  /** @since 0.1.0 @category models */
  type CallResult as Result
}
export { truncate } from "./ToolCall.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** The results of a message's calls, in call order, and the assigns after merging their patches. */
export interface Outcome {
  readonly results: ReadonlyArray<CallResult>
  readonly assigns: Readonly<Record<string, unknown>>
}

/** @since 0.1.0 @category models */
export interface Options {
  /** Most calls of one concurrent run at a time (default 8). */
  readonly concurrency?: number | undefined
  /** Per-call timeout unless the tool sets its own or reads one from its arguments (default 10 minutes). */
  readonly timeout?: Duration.Input | undefined
}

/** @since 0.1.0 @category models */
export interface Executor<R> {
  /** Runs `calls`; `wrapper` (its requirements `W`) wraps each of them. */
  readonly run: <W = never>(
    calls: ReadonlyArray<Call>,
    context: RunContext,
    assigns: Readonly<Record<string, unknown>>,
    wrapper?: Wrapper<W> | undefined
  ) => Effect.Effect<Outcome, never, R | W>
  /** Whether one of its tools declares `needsApproval` or is a guarded server's (a call of it may ask without any rule). */
  readonly flagged: boolean
}

/**
 * What every call of a batch gets besides its id and the assigns as the batch started. Without
 * `redact`, results are not redacted (a session always passes its own).
 */
export type RunContext = Omit<Tool.Context, "callId" | "assigns" | "redact" | "approve"> & {
  readonly redact?: ((text: string) => string) | undefined
  /** How a call asks a person mid-call (`Tool.Context.approve`, for a tool declared `asks`); none: it cannot. */
  readonly asker?: Asker | undefined
}

/** What a call's `approve` asks through: the session's waiting room. */
export type Asker = (call: Call, asked: Tool.Asked) => Effect.Effect<void, Tool.AskRefused>

/** What every call of a batch shares: the run's context, its redaction and the assigns as the batch started. */
export type Shared = Omit<Tool.Context, "callId" | "approve"> & { readonly asker?: Asker | undefined }

/** A call whose tool exists and allows its caller: what a wrapper sees of it. */
export interface Found<R> {
  readonly call: Call
  readonly tool: Tool.Tool<R>
}

/**
 * What wraps the calls of a batch, each hook optional (`compose` joins several, the first the
 * outermost): `batch`, before any call runs, with those found; `around`, each found call from its
 * decoding to its rendered result; `admit`, after its arguments decoded and before it runs, the
 * text the model reads instead of its result, or `undefined` to run it; `started`, once admitted,
 * waited for before it runs; `settled`, every call's result (an unknown tool's too).
 *
 * @since 0.1.0
 * @category models
 */
export interface Wrapper<R> {
  readonly batch?: ((found: ReadonlyArray<Found<R>>, context: Shared) => Effect.Effect<void, never, R>) | undefined
  readonly around?: ((found: Found<R>, self: Effect.Effect<Done, never, R>, context: Tool.Context) => Effect.Effect<Done, never, R>) | undefined
  readonly admit?: ((found: Found<R>, args: unknown, context: Tool.Context) => Effect.Effect<string | undefined, never, R>) | undefined
  readonly started?: ((call: Call) => Effect.Effect<void>) | undefined
  readonly settled?: ((done: Done) => Effect.Effect<void>) | undefined
}

/**
 * Wrappers joined into one: `batch`, `admit` (the first refusal wins), `started` and `settled`
 * in order; `around` nested, the first the outermost.
 *
 * @since 0.1.0
 * @category combinators
 */
export const compose = <R>(...wrappers: ReadonlyArray<Wrapper<R> | undefined>): Wrapper<R> | undefined => {
  const all = wrappers.filter((wrapper): wrapper is Wrapper<R> => wrapper !== undefined)
  if (all.length <= 1) return all[0]
  const having = <K extends keyof Wrapper<R>>(key: K) => all.flatMap((wrapper) => (wrapper[key] === undefined ? [] : [wrapper[key]!]))
  const batches = having("batch")
  const arounds = having("around")
  const admits = having("admit")
  const starts = having("started")
  const settles = having("settled")
  return {
    batch: batches.length === 0 ? undefined : (found, context) => Effect.forEach(batches, (batch) => batch(found, context), { discard: true }),
    around: arounds.length === 0 ? undefined : (found, self, context) => arounds.reduceRight((inner, around) => around(found, inner, context), self),
    admit: admits.length === 0 ? undefined : (found, args, context) =>
      admits.reduce<Effect.Effect<string | undefined, never, R>>(
        (before, admit) => Effect.flatMap(before, (refused) => (refused === undefined ? admit(found, args, context) : Effect.succeed(refused))),
        Effect.undefined
      ),
    started: starts.length === 0 ? undefined : (call) => Effect.forEach(starts, (started) => started(call), { discard: true }),
    settled: settles.length === 0 ? undefined : (done) => Effect.forEach(settles, (settled) => settled(done), { discard: true })
  }
}

/** The default per-call timeout: long enough for a build, short enough to notice a hang. */
export const DEFAULT_TIMEOUT = Duration.minutes(10)

/**
 * What the executor adds to a tool's own timeout (`Tool.timeoutOf`) before cutting the call: a
 * process group gets SIGTERM, 500 ms of grace and a last read of its pipe after its deadline, and
 * the tool's sentence with the output so far is worth more to the model than the executor's.
 */
export const OWN_TIMEOUT_MARGIN = Duration.seconds(5)
export const DEFAULT_CONCURRENCY = 8

/**
 * Two tools of one executor share a name: the model could not tell which one it calls.
 *
 * @since 0.1.0
 * @category errors
 */
export class DuplicateToolName extends Schema.TaggedError<DuplicateToolName>()("DuplicateToolName", {
  name: Schema.String,
  /** Where the tools of that name come from (`the agent`, `MCP server github`), when known. */
  owners: Schema.optional(Schema.Array(Schema.String))
}) {
  override get message() {
    const from = this.owners === undefined ? "" : ` (by ${this.owners.join(" and ")})`
    return `Two tools are named ${this.name}${from}: tool names must be unique (rename one, or give a prefix)`
  }
}

/**
 * `call` in a fiber of its own under a `CallDeadline` timer of `ms`: its output, or none once its
 * time ran out. Waiting for that fiber is one callback (not a race of the call and a sleep, two
 * fibers more): a session whose call waits for a process permit holds the call's fiber only. A
 * call that answers within its first synchronous steps starts no timer.
 */
const deadlined = <A, E, R>(call: Effect.Effect<A, E, R>, ms: number): Effect.Effect<Option.Option<A>, E, R> => {
  const timer = CallDeadline.make(ms)
  return Effect.flatMap(
    // Provided around the fork, not inside it: the call's fiber starts with the deadline in its
    // context, and keeps no frame to take it out again.
    Effect.provideService(Effect.forkChild(call, { startImmediately: true }), CallDeadline.CallDeadline, timer.deadline),
    (fiber) => {
      const settled = Effect.callback<Option.Option<A>, E>((resume) => {
        const stop = fiber.addObserver((exit) =>
          resume(Exit.isSuccess(exit) ? Effect.succeed(Option.some(exit.value)) : timer.expired ? Effect.succeedNone : Effect.failCause(exit.cause))
        )
        // The run was interrupted (aborted): the call goes first.
        return Effect.suspend(() => {
          stop()
          return Fiber.interrupt(fiber)
        })
      })
      return fiber.pollUnsafe() === undefined ? Effect.andThen(timer.arm(fiber), settled) : settled
    }
  )
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * An executor over a fixed set of tools, made once per agent; two tools with one name are refused.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <R>(tools: ReadonlyArray<Tool.Tool<R>>, options: Options = {}): Result.Result<Executor<R>, DuplicateToolName> => {
  const byName = new Map<string, Tool.Tool<R>>()
  for (const tool of tools) {
    if (byName.has(tool.name)) return Result.fail(new DuplicateToolName({ name: tool.name }))
    byName.set(tool.name, tool)
  }
  const concurrency = Math.max(1, options.concurrency ?? DEFAULT_CONCURRENCY)
  // One refusing `approve` per tool, made once: a call that cannot ask allocates nothing for it.
  const refusals = new Map<string, Tool.Context["approve"]>()
  const cannotAsk = (name: string) => {
    let refuse = refusals.get(name)
    if (refuse === undefined) refusals.set(name, refuse = Tool.cannotAsk(name))
    return refuse
  }
  const defaultTimeout = Duration.fromInputUnsafe(options.timeout ?? DEFAULT_TIMEOUT)

  /** A decoded, admitted call: run under its deadline, its exit rendered. */
  const execute = (tool: Tool.Tool<R>, call: Call, args: unknown, context: Tool.Context): Effect.Effect<Done, never, R> => {
    // A tool's own timeout is the model's request for this call: it wins over every default.
    const own = tool.timeoutOf?.(args)
    const timeoutMs = own === undefined
      ? Duration.toMillis(tool.timeout ?? defaultTimeout)
      : Duration.toMillis(Duration.sum(own, OWN_TIMEOUT_MARGIN))
    // Built once the call starts (a suspension): a call waiting for a permit holds its steps, not these.
    return Effect.flatMap(Effect.exit(Effect.suspend(() => called(tool, args, context, timeoutMs))), (exit) => render(tool, call, timeoutMs, exit, context.redact))
  }

  /**
   * The call in a fiber of its own, which its deadline interrupts: an interruption or defect inside
   * the tool ends up in its exit, not in the executor. A wait for a process permit stops its clock.
   * A call without a deadline (`timeout: Duration.infinity`) has no timer. The audit names the
   * secrets a call's process received, never their values.
   */
  const called = (tool: Tool.Tool<R>, args: unknown, context: Tool.Context, timeoutMs: number): Effect.Effect<Option.Option<Tool.Output>, Tool.Failure, R> => {
    const running = Effect.suspend(() => tool.call(args, context))
    const timed = timeoutMs === Infinity ? Effect.asSome(running) : deadlined(running, timeoutMs)
    const secretNames = tool.usesSecrets ? Object.keys(context.secrets) : []
    return secretNames.length === 0 ? timed : Effect.annotateSpans(timed, "condukt.secrets", secretNames.join(","))
  }

  // Combinators, not a generator: a call waiting for a process permit holds this frame all along.
  const invoke = <W>(found: Found<R>, context: Tool.Context, wrapper: Wrapper<R | W> | undefined): Effect.Effect<Done, never, R | W> => {
    const { call, tool } = found
    return Effect.flatMap(Effect.result(tool.decode(call.input)), (decoded) => {
      if (decoded._tag === "Failure") return Effect.succeed(errorResult(call, decoded.failure.message, context.redact))
      const args = decoded.success
      const admit = wrapper?.admit
      return Effect.flatMap(admit === undefined ? Effect.undefined : admit(found, args, context), (refused) => {
        if (refused !== undefined) return Effect.succeed(errorResult(call, refused, context.redact))
        const started = wrapper?.started
        return started === undefined ? execute(tool, call, args, context) : Effect.andThen(started(call), Effect.suspend(() => execute(tool, call, args, context)))
      })
    })
  }

  const runOne = <W>(call: Call, context: Shared, wrapper: Wrapper<R | W> | undefined): Effect.Effect<Done, never, R | W> => {
    const ran = runCall(call, context, wrapper)
    const settled = wrapper?.settled
    return settled === undefined ? ran : Effect.tap(ran, settled)
  }

  const runCall = <W>(call: Call, context: Shared, wrapper: Wrapper<R | W> | undefined): Effect.Effect<Done, never, R | W> => {
    const tool = byName.get(call.name)
    if (tool === undefined) return Effect.succeed(errorResult(call, `Unknown tool: ${context.redact(call.name)}`))
    const caller = call.caller ?? "human"
    if (!tool.allowedCallers.includes(caller)) return Effect.succeed(errorResult(call, refusal(tool.name, caller)))
    const found = { call, tool }
    const asker = context.asker
    // A call asks mid-call only when its tool says it may and the run can ask someone. (The shared
    // context is spread whole, `asker` with it: one object per call.)
    const callContext: Tool.Context = {
      ...context,
      callId: call.id,
      approve: tool.asks && asker !== undefined ? (asked) => asker(call, asked) : cannotAsk(tool.name)
    }
    // Its error results are redacted where they are made: a failure's text can quote what the tool saw.
    const done = invoke(found, callContext, wrapper)
    const around = wrapper?.around
    return around === undefined ? done : around(found, done, callContext)
  }

  /** A batch of several calls, in groups. */
  const runAll = <W>(
    calls: ReadonlyArray<Call>,
    callContext: Shared,
    assigns: Readonly<Record<string, unknown>>,
    wrapper: Wrapper<R | W> | undefined
  ): Effect.Effect<Outcome, never, R | W> => {
    // Consecutive concurrent calls form one group; a non-concurrent call is a group of its own.
    // Unknown tools count as concurrent: they run nothing.
    const groups: Array<Array<Call>> = []
    let open = false
    for (const call of calls) {
      const concurrent = byName.get(call.name)?.concurrent ?? true
      if (concurrent && open) groups[groups.length - 1]!.push(call)
      else groups.push([call])
      open = concurrent
    }
    const one = (call: Call) => runOne(call, callContext, wrapper)
    return Effect.map(
      Effect.forEach(groups, (group) =>
        group.length === 1
          ? Effect.map(one(group[0]!), (result) => [result])
          : Effect.forEach(group, one, { concurrency: Math.min(group.length, concurrency) })),
      (grouped) => {
        const done = grouped.flat()
        let merged: Record<string, unknown> | undefined
        for (const { patch } of done) {
          if (patch !== undefined) merged = Object.assign(merged ?? { ...assigns }, patch)
        }
        return { results: done.map((d) => d.result), assigns: merged ?? assigns }
      }
    )
  }

  /** The calls of a batch whose tool exists and allows its caller, for the wrapper's `batch`. */
  const foundOf = <W>(calls: ReadonlyArray<Call>): ReadonlyArray<Found<R | W>> =>
    calls.flatMap((call) => {
      const tool = byName.get(call.name)
      return tool === undefined || !tool.allowedCallers.includes(call.caller ?? "human") ? [] : [{ call, tool }]
    })

  return Result.succeed({
    flagged: tools.some((tool) => tool.needsApproval !== false || tool.discovered !== undefined),
    run: <W>(calls: ReadonlyArray<Call>, context: RunContext, given: Readonly<Record<string, unknown>>, wrapped?: Wrapper<W>) => {
      // The wrapper's requirements join the tools': one effect needs both.
      const wrapper = wrapped as Wrapper<R | W> | undefined
      const assigns = Object.freeze({ ...given })
      // The tools see what every call shares, and the assigns as the batch started.
      const callContext = { ...context, redact: context.redact ?? Redactor.none.redact, assigns }
      // One call (a turn's usual): no groups to walk, nothing to prepare for the batch.
      if (calls.length === 1) {
        return Effect.map(Effect.suspend(() => runOne(calls[0]!, callContext, wrapper)), ({ patch, result }) => ({
          results: [result],
          assigns: patch === undefined ? assigns : { ...assigns, ...patch }
        }))
      }
      const batch = wrapper?.batch
      return batch === undefined
        ? runAll(calls, callContext, assigns, wrapper)
        : Effect.andThen(batch(foundOf(calls), callContext), runAll(calls, callContext, assigns, wrapper))
    }
  })
}

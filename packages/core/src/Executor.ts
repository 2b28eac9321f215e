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
 * A call that needs approval (the session's `Approval` rules, or the tool's own flag) passes one
 * gate after its arguments are decoded and before its clock starts: a denial is its result, and
 * the other calls of the batch run meanwhile. A batch's requests are all made when it starts. A
 * batch without rules or flagged tools pays one check.
 *
 * Assigns follow Ref-snapshot semantics: every call sees the same start-of-message snapshot and
 * the patches are merged after the whole message, last write wins in call order.
 */
import { Cause, Duration, Effect, Exit, Fiber, Formatter, Option, Result, Schema } from "effect"
import * as Approval from "./Approval.ts"
import * as CallDeadline from "./CallDeadline.ts"
import * as GenAi from "./internal/genAi.ts"
import * as TraceContent from "./TraceContent.ts"
import * as Tracing from "./Tracing.ts"
import type { ImagePart } from "./Message.ts"
import * as Redactor from "./Redactor.ts"
import * as Tool from "./Tool.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** One tool call as the model sent it. */
export interface Call {
  readonly id: string
  readonly name: string
  readonly input: unknown
  /** Who made the call: the model directly (`human`, the default) or code it runs. */
  readonly caller?: Tool.Caller | undefined
}

/** One call's result, ready for the model (`content`) and for events (`data`). */
export interface Result {
  readonly callId: string
  readonly name: string
  readonly content: string
  readonly isError: boolean
  /** The `data` of a `Tool.structured` result; absent otherwise. */
  readonly data?: unknown
  /** The images of a `Tool.images` result, for the model; absent otherwise. */
  readonly images?: ReadonlyArray<ImagePart>
}

/** The results of a message's calls, in call order, and the assigns after merging their patches. */
export interface Outcome {
  readonly results: ReadonlyArray<Result>
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
  readonly run: (
    calls: ReadonlyArray<Call>,
    context: RunContext,
    assigns: Readonly<Record<string, unknown>>
  ) => Effect.Effect<Outcome, never, R>
}

/**
 * What every call of a batch gets besides its id and the assigns snapshot. Without `redact`,
 * results are not redacted (a session always passes its own).
 */
export type RunContext = Omit<Tool.Context, "callId" | "assigns" | "redact"> & {
  readonly redact?: ((text: string) => string) | undefined
  /** How calls that need approval get it; without it, every call runs. */
  readonly approvals?: Approvals | undefined
  /** Hears each call start before it runs, and each result (a session with a store commits them). */
  readonly journal?: Journal | undefined
}

/**
 * A session's record of a batch's calls: each call's start is heard before the call runs (after
 * its arguments decoded and its approval), and waited for (a store commits it first); each
 * result is heard as the call finishes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Journal {
  readonly started: (call: Call) => Effect.Effect<void>
  readonly settled: (result: Result) => Effect.Effect<void>
}

/**
 * A session's side of approvals: its rules, and how it asks a person about one call and waits.
 *
 * @since 0.1.0
 * @category models
 */
export interface Approvals {
  readonly policy: Approval.Policy | undefined
  readonly request: (call: Call) => Effect.Effect<Approval.Answer>
  /**
   * Hears each call's result as it finishes, with what it sets in the assigns, while the batch's
   * requests are asked (a store keeps them; a batch that parks keeps them for its continuation).
   */
  readonly settled: (result: Result, patch?: Readonly<Record<string, unknown>>) => Effect.Effect<void>
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

/** A call's gate, given its tool, decoded arguments and context: the text of its denial, or `undefined`. */
type Admission<R> = (tool: Tool.Tool<R>, args: unknown, context: Tool.Context) => Effect.Effect<string | undefined, never, R>

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

// ---------------------------------------------------------------------------------------------
// Rendering: the exact texts a model reads
// ---------------------------------------------------------------------------------------------

/**
 * Cuts `text` to `max` code points: 80 % head, the marker, 20 % tail. The marker is not counted.
 *
 * @since 0.1.0
 * @category combinators
 */
export const truncate = (text: string, max: number | undefined): string => {
  // A string of at most `max` UTF-16 units has at most `max` code points: skip the split.
  if (max === undefined || !Number.isInteger(max) || max <= 0 || text.length <= max) return text
  const points = Array.from(text)
  if (points.length <= max) return text
  const head = Math.floor((max * 4) / 5)
  const tail = max - head
  return `${points.slice(0, head).join("")}\n\n[truncated ${points.length} -> ${max} chars]\n\n${
    points.slice(points.length - tail).join("")
  }`
}

/** One line for whatever a tool failed or died with: its message when it has one. */
const describe = (u: unknown): string => {
  if (typeof u === "string") return u
  if (typeof u === "object" && u !== null && typeof (u as { message?: unknown }).message === "string") {
    return (u as { message: string }).message
  }
  return Formatter.format(u)
}

/** A result plus the assigns patch it carries (internal: patches never reach the model). */
interface Done {
  readonly result: Result
  readonly patch?: Readonly<Record<string, unknown>> | undefined
}

const errorResult = (call: Call, content: string): Done => ({
  result: { callId: call.id, name: call.name, content: content.toWellFormed(), isError: true }
})

interface Encoded {
  readonly text: string
  readonly data?: unknown
  readonly images?: ReadonlyArray<ImagePart>
}

/** Encodes a successful output; a value JSON cannot encode is the tool's bug: a defect. */
const encode = (output: Tool.Output): Effect.Effect<Encoded> => {
  if (output === undefined) return Effect.succeed({ text: "" })
  if (typeof output === "string") return Effect.succeed({ text: output })
  if (output instanceof Tool.Structured) return Effect.succeed({ text: output.text, data: output.data })
  if (output instanceof Tool.Images) return Effect.succeed({ text: output.text, images: output.images })
  if (output instanceof Tool.Assign) return encode(output.value)
  return Effect.map(json(output), (text) => ({ text }))
}

const json = (value: unknown): Effect.Effect<string> =>
  Effect.try({ try: () => JSON.stringify(value), catch: (cause) => cause }).pipe(
    Effect.orDie,
    Effect.flatMap((text) =>
      text === undefined ? Effect.die(new TypeError(`the result is not JSON (${typeof value})`)) : Effect.succeed(text)
    )
  )

/**
 * What the model reads when a tool is called by a caller it does not allow: the model directly
 * (`human`) or code it runs (`code_execution`).
 */
export const refusal = (tool: string, caller: Tool.Caller): string =>
  caller === "human"
    ? `Tool ${tool} cannot be called directly: call it from code execution`
    : `Tool ${tool} cannot be called from code execution: call it directly`

/**
 * A structured tool answers code (a programmatic caller) with its data as JSON, which the code
 * can parse; the model reading it directly gets the text.
 */
const encodeFor = (tool: Tool.Tool<unknown>, call: Call, output: Tool.Output): Effect.Effect<Encoded> =>
  call.caller === "code_execution" && tool.resultType === "structured" && output instanceof Tool.Structured
    ? Effect.map(json(output.data ?? null), (text) => ({ text, data: output.data }))
    : encode(output)

const render = (
  tool: Tool.Tool<unknown>,
  call: Call,
  timeoutMs: number,
  exit: Exit.Exit<Option.Option<Tool.Output>, Tool.Failure>,
  redact: (text: string) => string
): Effect.Effect<Done> => {
  if (Exit.isSuccess(exit)) {
    if (Option.isNone(exit.value)) return Effect.succeed(errorResult(call, `Tool ${tool.name} timed out after ${timeoutMs}ms`))
    const output = exit.value.value
    return encodeFor(tool, call, output).pipe(
      Effect.map(({ data, images, text }): Done => ({
        result: {
          callId: call.id,
          name: call.name,
          // Redacted before the cut: a cut must not leave half a secret behind.
          content: truncate(redact(text), tool.maxResultChars).toWellFormed(),
          isError: false,
          ...(data === undefined ? {} : { data: Redactor.redactValue(redact, data) }),
          ...(images === undefined || images.length === 0 ? {} : { images })
        },
        patch: output instanceof Tool.Assign ? output.patch : undefined
      })),
      Effect.catchCause((cause) => crashed(tool, call, cause, redact))
    )
  }
  const error = Cause.findErrorOption(exit.cause)
  if (Option.isSome(error)) return Effect.succeed(errorResult(call, `Error: ${describe(error.value)}`))
  if (Cause.hasDies(exit.cause)) return crashed(tool, call, exit.cause, redact)
  return Effect.succeed(errorResult(call, `Tool ${tool.name} was interrupted`))
}

/**
 * A defect is a bug: the model gets one line, the log gets the whole defect — redacted, as
 * everything leaving the runtime (the defect's message can quote what the tool saw).
 */
const crashed = (
  tool: Tool.Tool<unknown>,
  call: Call,
  cause: Cause.Cause<unknown>,
  redact: (text: string) => string
): Effect.Effect<Done> => {
  const defect = Cause.findDefect(cause)
  const message = defect._tag === "Success" ? describe(defect.success) : "unknown defect"
  return Effect.as(
    Effect.logError(`Tool ${tool.name} crashed`, Redactor.redactCause(redact, cause)).pipe(Effect.annotateLogs({ tool: tool.name, callId: call.id })),
    errorResult(call, `Tool ${tool.name} crashed: ${message}`)
  )
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
      const settled = Effect.flatMap(
        Effect.callback<Exit.Exit<A, E>>((resume) => {
          const stop = fiber.addObserver((exit) => resume(Effect.succeed(exit)))
          // The run was interrupted (aborted): the call goes first.
          return Effect.suspend(() => {
            stop()
            return Fiber.interrupt(fiber)
          })
        }),
        (exit): Effect.Effect<Option.Option<A>, E> =>
          Exit.isSuccess(exit) ? Effect.succeed(Option.some(exit.value)) : timer.expired ? Effect.succeedNone : Effect.failCause(exit.cause)
      )
      return fiber.pollUnsafe() === undefined ? Effect.andThen(timer.arm(fiber), settled) : settled
    }
  )
}

/** What a call's span learns from its result, made once. */
const toolSpan: Tracing.Hooks<Done, never> = { ended: (done) => GenAi.executed(done.result) }

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
  const defaultTimeout = Duration.fromInputUnsafe(options.timeout ?? DEFAULT_TIMEOUT)

  const flagged = tools.some((tool) => tool.needsApproval !== false)

  /** What the model reads instead of the call's result when it may not run; `undefined`: it runs. */
  const gate = (approvals: Approvals, tool: Tool.Tool<R>, call: Call, args: unknown, context: Tool.Context) =>
    Approval.check(approvals.policy, tool, args, context, approvals.request(call))

  /**
   * The gate of every call of a batch, each in a fiber of its own started before any call runs:
   * every request of the batch is made at once, and each call, when its turn comes, waits for its
   * own answer only (a call that runs alone still waits for those before it, as it always did).
   * The fibers are the run's children: an abort ends them with it.
   */
  const admitAll = (approvals: Approvals, calls: ReadonlyArray<Call>, context: Omit<Tool.Context, "callId">) =>
    Effect.map(
      Effect.forEach(calls, (call) => {
        const tool = byName.get(call.name)
        // What is refused before the gate (an unknown tool, a caller it does not allow, bad arguments) asks nothing.
        if (tool === undefined || !tool.allowedCallers.includes(call.caller ?? "human")) return Effect.undefined
        // What the rules settle without asking (allowed, unflagged, denied) needs no fiber.
        const verdict = Approval.verdict(approvals.policy, tool.name)
        if (verdict._tag === "Allow" || (verdict._tag === "Tool" && tool.needsApproval === false)) return Effect.undefined
        if (verdict._tag === "Deny") return Effect.succeed(Effect.succeed(Approval.deniedByRule(tool.name, verdict.pattern)))
        return Effect.map(
          Effect.forkChild(Effect.flatMap(Effect.result(tool.decode(call.input)), (decoded) =>
            decoded._tag === "Failure" ? Effect.undefined : gate(approvals, tool, call, decoded.success, { ...context, callId: call.id }))),
          Fiber.join
        )
      }),
      (answers) => {
        const admissions = new Map<Call, Admission<R>>()
        calls.forEach((call, i) => {
          const answer = answers[i]
          if (answer !== undefined) admissions.set(call, () => answer)
        })
        return admissions
      }
    )

  // Combinators, not a generator: a call waiting for a process permit holds this frame all along.
  const invoke = (
    tool: Tool.Tool<R>,
    call: Call,
    context: Tool.Context,
    admission: Admission<R> | undefined,
    journal: Journal | undefined
  ): Effect.Effect<Done, never, R> =>
    Effect.flatMap(Effect.result(tool.decode(call.input)), (decoded) => {
      if (decoded._tag === "Failure") return Effect.succeed(errorResult(call, decoded.failure.message))
      const args = decoded.success
      return Effect.flatMap(admission === undefined ? Effect.undefined : admission(tool, args, context), (refused) => {
        if (refused !== undefined) return Effect.succeed(errorResult(call, refused))
        const started = journal === undefined ? Effect.void : journal.started(call)
        return Effect.andThen(started, Effect.suspend(() => execute(tool, call, args, context)))
      })
    })

  /** A decoded, admitted call: run under its deadline, its exit rendered. */
  const execute = (tool: Tool.Tool<R>, call: Call, args: unknown, context: Tool.Context): Effect.Effect<Done, never, R> => {
    // A tool's own timeout is the model's request for this call: it wins over every default.
    const own = tool.timeoutOf?.(args)
    const timeoutMs = own === undefined
      ? Duration.toMillis(tool.timeout ?? defaultTimeout)
      : Duration.toMillis(Duration.sum(own, OWN_TIMEOUT_MARGIN))
    // The call runs in a fiber of its own, which its deadline interrupts: an interruption or
    // defect inside the tool ends up in this exit, not in the executor. A wait for a process
    // permit stops its clock. A call without a deadline (`timeout: Duration.infinity`) has no timer.
    const running = Effect.suspend(() => tool.call(args, context))
    const called = timeoutMs === Infinity ? Effect.asSome(running) : Effect.suspend(() => deadlined(running, timeoutMs))
    const secretNames = tool.usesSecrets ? Object.keys(context.secrets) : []
    // The audit names the secrets a call's process received, never their values.
    return Effect.flatMap(
      Effect.exit(secretNames.length === 0 ? called : Effect.annotateSpans(called, "condukt.secrets", secretNames.join(","))),
      (exit) => render(tool, call, timeoutMs, exit, context.redact)
    )
  }

  const runOne = (
    call: Call,
    context: Omit<Tool.Context, "callId">,
    admission: Admission<R> | undefined,
    settled: Approvals["settled"] | undefined,
    journal: Journal | undefined
  ): Effect.Effect<Done, never, R> => {
    const ran = runCall(call, context, admission, journal)
    if (journal === undefined) return settled === undefined ? ran : Effect.tap(ran, (done) => settled(done.result, done.patch))
    return Effect.tap(ran, (done) => settled === undefined ? journal.settled(done.result) : Effect.andThen(journal.settled(done.result), settled(done.result, done.patch)))
  }

  const runCall = (
    call: Call,
    context: Omit<Tool.Context, "callId">,
    admission: Admission<R> | undefined,
    journal: Journal | undefined
  ): Effect.Effect<Done, never, R> => {
    const tool = byName.get(call.name)
    if (tool === undefined) return Effect.succeed(errorResult(call, `Unknown tool: ${context.redact(call.name)}`))
    const caller = call.caller ?? "human"
    if (!tool.allowedCallers.includes(caller)) return Effect.succeed(errorResult(call, refusal(tool.name, caller)))
    const done = Effect.map(
      invoke(tool, call, { ...context, callId: call.id }, admission, journal),
      // A failure's text can quote what the tool saw (a command's output, a file's line).
      (done) => (done.result.isError ? { result: { ...done.result, content: context.redact(done.result.content) } } : done)
    )
    // `execute_tool <name>` under a real tracer: names and ids, and the arguments and result,
    // redacted, only when the program opted in (TraceContent).
    return Effect.withFiber((fiber) => {
      if (!Tracing.isTraced(fiber)) return done
      const [name, options] = GenAi.executeTool(tool.name, call.id)
      if (!fiber.getRef(TraceContent.TraceContent)) return Tracing.within(done, name, options, toolSpan)
      const redact = context.redact
      return Tracing.within(done, name, { ...options, attributes: { ...options.attributes, ...GenAi.callContent(call.input, redact) } }, {
        ended: (done) => ({ ...GenAi.executed(done.result), ...GenAi.resultContent(done.result, redact) })
      })
    })
  }

  /** A batch of several calls, in groups. */
  const runAll = (
    calls: ReadonlyArray<Call>,
    callContext: Omit<Tool.Context, "callId">,
    snapshot: Readonly<Record<string, unknown>>,
    admissions: ReadonlyMap<Call, Admission<R>> | undefined,
    settled: Approvals["settled"] | undefined,
    journal: Journal | undefined
  ): Effect.Effect<Outcome, never, R> => {
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
    const one = (call: Call) => runOne(call, callContext, admissions?.get(call), settled, journal)
    return Effect.map(
      Effect.forEach(groups, (group) =>
        group.length === 1
          ? Effect.map(one(group[0]!), (result) => [result])
          : Effect.forEach(group, one, { concurrency: Math.min(group.length, concurrency) })),
      (grouped) => {
        const done = grouped.flat()
        let merged: Record<string, unknown> | undefined
        for (const { patch } of done) {
          if (patch !== undefined) merged = Object.assign(merged ?? { ...snapshot }, patch)
        }
        return { results: done.map((d) => d.result), assigns: merged ?? snapshot }
      }
    )
  }

  return Result.succeed({
    run: (calls, context, assigns) => {
      const snapshot = Object.freeze({ ...assigns })
      const { approvals, journal, ...shared } = context
      // The tools never see the session's side of approvals, nor its journal.
      const callContext = { ...shared, redact: context.redact ?? Redactor.none.redact, assigns: snapshot }
      // No rules and no flagged tool: no call asks, and none is checked.
      const asking = approvals !== undefined && (flagged || approvals.policy !== undefined)
      // One call (a turn's usual): no groups to walk.
      if (calls.length === 1) {
        const call = calls[0]!
        const admission: Admission<R> | undefined = asking ? (tool, args, context) => gate(approvals, tool, call, args, context) : undefined
        return Effect.map(runOne(call, callContext, admission, asking ? approvals.settled : undefined, journal), ({ patch, result }) => ({
          results: [result],
          assigns: patch === undefined ? snapshot : { ...snapshot, ...patch }
        }))
      }
      return asking
        ? Effect.flatMap(admitAll(approvals, calls, callContext), (admissions) => runAll(calls, callContext, snapshot, admissions, approvals.settled, journal))
        : runAll(calls, callContext, snapshot, undefined, undefined, journal)
    }
  })
}
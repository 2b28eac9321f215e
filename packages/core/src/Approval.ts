/**
 * Approval — who decides whether a tool call may run: rules by tool name, the tool's own flag, and
 * a person's answer.
 *
 * An agent and a session start may give `Rules`: globs over tool names (`GlobPattern`'s dialect,
 * one segment, so `github.*` covers an MCP server's tools without touching them) in three lists.
 * For each call the verdict is, in this order (docs/decisions/0056): a `deny` pattern matches —
 * the call is refused at once, nobody is asked; an `ask` pattern matches — a person is asked; an
 * `allow` pattern matches — it runs; otherwise the tool's own `needsApproval` (`true`, or a
 * function of its decoded input and context) decides whether to ask. A request is an
 * `ApprovalRequested` event and a wait on the session's `approve` / `deny`, or on its `Answerer`
 * when the session was given one (it answers in-process, through the same path); the answer, or
 * no answer within the rules' `timeout`, becomes what the model reads. An answerer that cannot
 * answer (`Unanswered`) fails the run. This module decides and words; the session waits
 * (runtime/waitingRoom.ts, runtime/admission.ts). It refuses a pattern GlobPattern refuses, where
 * the rules are made.
 */
import { Duration, Effect, Result, Schema } from "effect"
import * as ApprovalPolicy from "./ApprovalPolicy.ts"
import * as ApprovalRecord from "./ApprovalRecord.ts"
import * as GlobPattern from "./GlobPattern.ts"
import type * as Tool from "./Tool.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** Rules by tool name, as an agent or a session start gives them. @since 0.1.0 @category models */
export interface Rules {
  /** Calls of these tools run without asking (unless `deny` or `ask` names them too). */
  readonly allow?: ReadonlyArray<string> | undefined
  /** Calls of these tools wait for a person's answer (unless `deny` names them too). */
  readonly ask?: ReadonlyArray<string> | undefined
  /** Calls of these tools are refused without asking anyone. */
  readonly deny?: ReadonlyArray<string> | undefined
  /** How long a request waits for an answer before it counts as a denial (default: forever, no timer). */
  readonly timeout?: Duration.Input | undefined
  /**
   * How long a request stays open: unanswered by then it is `expired`, a denial the model reads.
   * Its deadline is saved with its record, so it holds across restarts (default: none; ADR 0088).
   */
  readonly expires?: Duration.Input | undefined
  /**
   * Rules as code, read after `deny` and `ask` and before `allow` and the tool's flag; a `shadow`
   * one only records what it would decide (ApprovalPolicy, docs/approvals.md).
   */
  readonly policies?: ReadonlyArray<ApprovalPolicy.ApprovalPolicy> | undefined
}

/**
 * What a tool may declare (`Tool.NeedsApproval`, defined with the tool so the two modules do not
 * import each other).
 *
 * @since 0.1.0
 * @category models
 */
export type NeedsApproval<A, R> = Tool.NeedsApproval<A, R>

/** The rules of an agent and a session start, compiled once. @since 0.1.0 @category models */
export interface Policy {
  /** The first `deny` pattern matching `tool`, if one does. */
  readonly denies: (tool: string) => string | undefined
  /** The first `ask` pattern matching `tool`, if one does. */
  readonly asks: (tool: string) => string | undefined
  /** The first `allow` pattern matching `tool`, if one does. */
  readonly allows: (tool: string) => string | undefined
  /** The `allow` patterns as written: a guarded server's tool runs unasked only when one is its name. */
  readonly named: ReadonlySet<string>
  /** In milliseconds; `undefined`: no timer. */
  readonly timeoutMs: number | undefined
  /** In milliseconds; `undefined`: a request stays open until answered. */
  readonly expiresMs: number | undefined
  /** The agent's policies, then the start's; live and shadow. */
  readonly policies: ReadonlyArray<ApprovalPolicy.ApprovalPolicy>
}

/**
 * What a policy says of one call before the tool's own flag is read: `deny` (with the pattern),
 * `ask`, `allow`, or `tool` (no rule names it: the tool's flag decides).
 *
 * @since 0.1.0
 * @category models
 */
export type Verdict =
  | { readonly _tag: "Deny"; readonly pattern: string }
  | { readonly _tag: "Ask"; readonly pattern: string }
  | { readonly _tag: "Allow"; readonly pattern: string }
  /** Live policies decide, then `allow` and the tool's flag. */
  | { readonly _tag: "Policy" }
  | { readonly _tag: "Tool" }

/** A person's answer to one request. @since 0.1.0 @category models */
export type Answer =
  | { readonly _tag: "Approved" }
  | { readonly _tag: "Denied"; readonly reason: string | undefined }
  /** Nobody answered within the rules' timeout, or before the request's deadline (`at`, epoch ms): a denial. */
  | { readonly _tag: "Expired"; readonly timeoutMs: number; readonly at?: number | undefined }

/** A call waiting for an answer, as `session.pending` lists it. @since 0.1.0 @category models */
export interface Pending {
  readonly callId: string
  readonly tool: string
  readonly input: unknown
}

/**
 * `approve` or `deny` named a call that is not waiting for an answer: no such call, or one
 * already answered (or ended by its timeout or an abort), or the session has stopped (`stopped`):
 * nothing waits in a stopped session, and a store keeps its waiting calls for its next start
 * (docs/decisions/0080).
 *
 * @since 0.1.0
 * @category errors
 */
export class NotPending extends Schema.TaggedError<NotPending>()("ApprovalNotPending", {
  sessionId: Schema.String,
  callId: Schema.String,
  stopped: Schema.optional(Schema.Boolean),
  /** The record of the answer another process (or the CLI) gave first, which the call took. */
  answered: Schema.optional(ApprovalRecord.ApprovalRecord)
}) {
  override get message() {
    if (this.stopped === true) {
      return `Session ${this.sessionId} is stopped: call ${this.callId} waits for no answer in it; with a store, start the session again with its id: pending lists the calls it left waiting, answered there`
    }
    const first = this.answered
    if (first !== undefined) {
      return `Session ${this.sessionId}: call ${this.callId} was answered already: ${first.outcome ?? "answered"}${first.by === undefined ? "" : ` by ${JSON.stringify(first.by)}`}`
    }
    return `Session ${this.sessionId}: no call ${this.callId} is waiting for approval (unknown, or already answered)`
  }
}

/**
 * A call that asks, as an `Answerer` hears it: the waiting call, and the asking session's agent
 * (a workflow's agent step names its session after the step).
 *
 * @since 0.1.0
 * @category models
 */
export interface Request extends Pending {
  readonly agent: string
  /** The request's approval record's id, what asked (`ask: <pattern>`, `needsApproval`…), and its deadline. */
  readonly id?: string | undefined
  readonly rule?: string | undefined
  readonly expiresAt?: number | undefined
}

/**
 * Nobody can answer `callId`: the session's run fails with it (a `SessionError` whose reason is
 * this), and `description` says why.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unanswered extends Schema.TaggedError<Unanswered>()("ApprovalUnanswered", {
  agent: Schema.String,
  callId: Schema.String,
  tool: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return this.description
  }
}

/**
 * Answers one request in-process (a session's `answerer` option): an approval, a denial (the
 * model reads its reason), or `Unanswered`, which fails the run.
 *
 * @since 0.1.0
 * @category models
 */
export type Answerer = (request: Request) => Effect.Effect<Answer, Unanswered>

/** A pattern GlobPattern cannot compile: the session does not start. @since 0.1.0 @category errors */
export class InvalidRule extends Schema.TaggedError<InvalidRule>()("InvalidApprovalRule", {
  pattern: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `Invalid approval rule ${JSON.stringify(this.pattern)}: ${this.description}`
  }
}

// ---------------------------------------------------------------------------------------------
// Rendering: the exact texts a model reads
// ---------------------------------------------------------------------------------------------

/** What the model reads for a call a person denied. @since 0.1.0 @category constructors */
export const deniedByUser = (reason: string | undefined): string =>
  reason === undefined || reason === "" ? "Denied by the user" : `Denied by the user: ${reason}`

/** What the model reads for a call a `deny` rule refused. @since 0.1.0 @category constructors */
export const deniedByRule = (tool: string, pattern: string): string =>
  `Denied by a rule: ${tool} matches ${JSON.stringify(pattern)}`

/** What the model reads for a call nobody answered in time. @since 0.1.0 @category constructors */
export const deniedByTimeout = (timeoutMs: number): string =>
  `Denied: nobody approved this call within ${timeoutMs}ms`

/** What the model reads for a call whose request expired unanswered (its deadline, epoch ms). @since 0.1.0 @category constructors */
export const deniedByExpiry = (at: number): string =>
  `Denied: the request for approval expired unanswered at ${new Date(at).toISOString()}; the call was not run`

/** What the model reads for an answer: `undefined` for an approval (the call runs). @since 0.1.0 @category constructors */
export const render = (answer: Answer): string | undefined => {
  switch (answer._tag) {
    case "Approved":
      return undefined
    case "Denied":
      return deniedByUser(answer.reason)
    case "Expired":
      return answer.at === undefined ? deniedByTimeout(answer.timeoutMs) : deniedByExpiry(answer.at)
  }
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

const none = () => undefined

/** One list's patterns as one test; the first matching pattern's text. */
const compileList = (patterns: ReadonlyArray<string>): Result.Result<(tool: string) => string | undefined, InvalidRule> => {
  const tests: Array<readonly [string, (tool: string) => boolean]> = []
  for (const pattern of patterns) {
    const compiled = GlobPattern.make(pattern, { dot: true })
    if (Result.isFailure(compiled)) return Result.fail(new InvalidRule({ pattern, description: compiled.failure }))
    const glob = compiled.success
    // A tool name is one segment: a pattern with a `/` matches no tool.
    tests.push([pattern, (tool) => glob.matches(glob.root, tool)])
  }
  return Result.succeed((tool) => {
    for (const [pattern, test] of tests) if (test(tool)) return pattern
    return undefined
  })
}

/**
 * Compiles the rules of an agent and of a session start: the lists joined, the start's timeout
 * winning. `undefined` when neither gives any, so a session without rules checks nothing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const policy = (agent: Rules | undefined, start?: Rules | undefined): Result.Result<Policy | undefined, InvalidRule> => {
  if (agent === undefined && start === undefined) return Result.succeed(undefined)
  const join = (key: "allow" | "ask" | "deny") => [...(agent?.[key] ?? []), ...(start?.[key] ?? [])]
  const deny = join("deny")
  const ask = join("ask")
  const allow = join("allow")
  const timeout = start?.timeout ?? agent?.timeout
  const expires = start?.expires ?? agent?.expires
  const policies = [...(agent?.policies ?? []), ...(start?.policies ?? [])]
  if (deny.length === 0 && ask.length === 0 && allow.length === 0 && timeout === undefined && expires === undefined && policies.length === 0) {
    return Result.succeed(undefined)
  }
  return Result.flatMap(compileList(deny), (denies) =>
    Result.flatMap(compileList(ask), (asks) =>
      Result.map(compileList(allow), (allows): Policy => ({
        denies,
        asks: ask.length === 0 ? none : asks,
        allows: allow.length === 0 ? none : allows,
        named: new Set(allow),
        timeoutMs: timeout === undefined ? undefined : Duration.toMillis(Duration.fromInputUnsafe(timeout)),
        expiresMs: expires === undefined ? undefined : Duration.toMillis(Duration.fromInputUnsafe(expires)),
        policies
      }))))
}

/** What the rules say of a call of `tool`, in the order deny > ask > allow > the tool's own flag. @since 0.1.0 @category combinators */
export const verdict = (policy: Policy | undefined, tool: string): Verdict => {
  if (policy === undefined) return toolDecides
  const pattern = policy.denies(tool)
  if (pattern !== undefined) return { _tag: "Deny", pattern }
  const asking = policy.asks(tool)
  if (asking !== undefined) return { _tag: "Ask", pattern: asking }
  if (policy.policies.some((p) => p.shadow !== true)) return byPolicy
  const allowing = policy.allows(tool)
  if (allowing !== undefined) return { _tag: "Allow", pattern: allowing }
  return toolDecides
}

/**
 * Whether a call of `tool` with the decoded `args` may run: `undefined`, or the text the model
 * reads instead. The rules first (deny > ask > the live policies > allow), then the tool's own
 * flag; `ask` asks a person, only when they say so. `decided` hears which rule decided (`deny: …`,
 * `ask: …`, `policy: …`, `allow`, `needsApproval`, `none`): what a shadow record sets beside its own.
 *
 * @since 0.1.0
 * @category combinators
 */
export const check = <R>(
  policy: Policy | undefined,
  tool: Tool.Tool<R>,
  args: unknown,
  context: Tool.Context,
  ask: (rule: string) => Effect.Effect<Answer>,
  decided?: ((rule: string) => Effect.Effect<void>) | undefined
): Effect.Effect<string | undefined, never, R> => {
  const by = <A, R2>(rule: string, then: Effect.Effect<A, never, R2>) => decided === undefined ? then : Effect.andThen(decided(rule), then)
  const asking = (rule: string) => by(rule, Effect.map(Effect.suspend(() => ask(rule)), render))
  const discovered = tool.discovered
  // A server's tool its declaration guards runs unasked only when an `allow` names it exactly.
  const allowed = (pattern: string | undefined) => pattern !== undefined && (discovered === undefined || policy!.named.has(tool.name))
  const flagged = (): Effect.Effect<string | undefined, never, R> => {
    if (discovered !== undefined) {
      const rule = `discovered: ${discovered.server}`
      return discovered.unlisted === "ask" ? asking(rule) : by(rule, Effect.succeed(deniedUnlisted(tool.name, discovered.server)))
    }
    const needs = tool.needsApproval
    if (needs === false) return by("none", Effect.undefined)
    if (needs === true) return asking(NEEDS_APPROVAL)
    return Effect.flatMap(needs(args, context), (yes) => (yes ? asking(NEEDS_APPROVAL) : by("none", Effect.undefined)))
  }
  const said = verdict(policy, tool.name)
  switch (said._tag) {
    case "Deny":
      return by(`deny: ${said.pattern}`, Effect.succeed(deniedByRule(tool.name, said.pattern)))
    case "Ask":
      return asking(`ask: ${said.pattern}`)
    case "Allow":
      return allowed(said.pattern) ? by("allow", Effect.undefined) : flagged()
    case "Tool":
      return flagged()
    case "Policy": {
      const call = { tool: tool.name, input: args, sessionId: context.sessionId, agent: context.agent, assigns: context.assigns }
      return Effect.flatMap(ApprovalPolicy.firstDecision(policy!.policies, call), (first) => {
        if (first === undefined) return allowed(policy!.allows(tool.name)) ? by("allow", Effect.undefined) : flagged()
        const rule = `policy: ${first.policy}`
        switch (first.decision.decision) {
          case "allow":
            return by(rule, Effect.undefined)
          case "ask":
            return asking(rule)
          case "deny":
            return by(rule, Effect.succeed(ApprovalPolicy.deniedByPolicy(first.policy, first.decision.reason)))
        }
      })
    }
  }
}

/** What the model reads for a server's tool its declaration denies unless a rule allows it by name. */
export const deniedUnlisted = (tool: string, server: string): string =>
  `Denied: ${tool} is a tool the server ${server} lists that no rule allows by name`

/** The rule of a request its tool's own `needsApproval` made. */
export const NEEDS_APPROVAL = "needsApproval"
const byPolicy: Verdict = { _tag: "Policy" }
const toolDecides: Verdict = { _tag: "Tool" }

/** An approval. @since 0.1.0 @category constructors */
export const approved: Answer = { _tag: "Approved" }

/** A denial, with the reason the model reads (none: `Denied by the user`). @since 0.1.0 @category constructors */
export const denied = (reason?: string): Answer => ({ _tag: "Denied", reason })

/**
 * The answerer of a caller who gave none (a workflow run's default): every request fails the run,
 * naming the tool and the call, rather than waiting forever.
 *
 * @since 0.1.0
 * @category constructors
 */
export const nobody: Answerer = (request) =>
  Effect.fail(
    new Unanswered({
      agent: request.agent,
      callId: request.callId,
      tool: request.tool,
      description: `${request.tool} (call ${request.callId}) needs approval and nobody can answer: give the run an \`approve\` answerer`
    })
  )

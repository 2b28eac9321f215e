/**
 * ApprovalPolicy — rules as code: an Effect that looks at one call (its tool, its decoded input,
 * the session, the agent, the assigns) and decides allow, ask or deny, with a reason; and shadow
 * mode, in which a policy decides nothing and only records what it would have decided next to
 * what happened, so a team can trial it on live traffic (docs/approvals.md, ADR 0088).
 *
 * An agent's or a session start's `Approval.Rules` take `policies`; they are read in order after
 * the `deny` and `ask` globs and before the `allow` globs and the tool's own `needsApproval`: the
 * first live policy with an opinion decides (`undefined`: no opinion, the next rule decides). A
 * policy whose Effect fails, dies or takes longer than `DECISION_TIMEOUT` asks a person, saying
 * so: a broken policy never lets a call through. Every shadow policy is run for every call the
 * rules see, after the live decision, in a fiber of the session's scope (no call waits for it);
 * its decision becomes an approval record with `shadow` set, in the store's approval log, beside
 * the rule that really decided (`rule`).
 */
import { Cause, Duration, Effect, Option } from "effect"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * What a policy sees of one call.
 *
 * @since 0.1.0
 * @category models
 */
export interface Call {
  readonly tool: string
  /** The call's arguments, decoded by the tool's Schema. */
  readonly input: unknown
  readonly sessionId: string
  readonly agent: string
  readonly assigns: Readonly<Record<string, unknown>>
}

/**
 * A policy's decision, with the reason a person (`ask`) or the model (`deny`) reads.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decision {
  readonly decision: "allow" | "ask" | "deny"
  readonly reason?: string | undefined
}

/**
 * A policy: a name (what the records and the model's texts name), how it decides, and whether it
 * only records (`shadow`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ApprovalPolicy {
  readonly name: string
  readonly decide: (call: Call) => Effect.Effect<Decision | undefined>
  readonly shadow?: boolean | undefined
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * A policy named `name` deciding with `decide`; `shadow: true` only records what it would decide.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  name: string,
  decide: (call: Call) => Effect.Effect<Decision | undefined>,
  options: { readonly shadow?: boolean | undefined } = {}
): ApprovalPolicy => ({ name, decide, ...(options.shadow === true ? { shadow: true } : {}) })

/** @since 0.1.0 @category constructors */
export const allow = (reason?: string): Decision => ({ decision: "allow", reason })

/** @since 0.1.0 @category constructors */
export const ask = (reason?: string): Decision => ({ decision: "ask", reason })

/** @since 0.1.0 @category constructors */
export const deny = (reason?: string): Decision => ({ decision: "deny", reason })

/**
 * What the model reads for a call a policy denied.
 *
 * @since 0.1.0
 * @category constructors
 */
export const deniedByPolicy = (policy: string, reason: string | undefined): string =>
  `Denied by policy ${JSON.stringify(policy)}${reason === undefined || reason === "" ? "" : `: ${reason}`}`

// ---------------------------------------------------------------------------------------------
// Combinators
// ---------------------------------------------------------------------------------------------

/**
 * `policy`'s decision for `call`; one that fails or dies is an `ask` saying so.
 *
 * @since 0.1.0
 * @category combinators
 */
export const decideSafely = (policy: ApprovalPolicy, call: Call): Effect.Effect<Decision | undefined> =>
  Effect.suspend(() => policy.decide(call)).pipe(
    Effect.timeoutOption(DECISION_TIMEOUT),
    Effect.map(Option.getOrElse(() => ask(`the policy did not decide within ${Duration.format(DECISION_TIMEOUT)}: a person decides`))),
    Effect.catchCause((cause) => Effect.succeed(ask(`the policy failed (${Cause.pretty(cause).split("\n")[0]?.slice(0, 200) ?? "unknown"}): a person decides`)))
  )

/**
 * How long a policy may take to decide one call: past it, a person decides (a live policy), or
 * nothing is recorded but that (a shadow one). A policy that hangs holds neither a call nor a fiber.
 *
 * @since 0.1.0
 * @category constants
 */
export const DECISION_TIMEOUT = Duration.seconds(10)

/**
 * The first live policy's decision for `call` that has one, with its name.
 *
 * @since 0.1.0
 * @category combinators
 */
export const firstDecision = (
  policies: ReadonlyArray<ApprovalPolicy>,
  call: Call
): Effect.Effect<{ readonly policy: string; readonly decision: Decision } | undefined> => {
  const live = policies.filter((policy) => policy.shadow !== true)
  const next = (i: number): Effect.Effect<{ readonly policy: string; readonly decision: Decision } | undefined> =>
    i === live.length
      ? Effect.undefined
      : Effect.flatMap(decideSafely(live[i]!, call), (decision) => decision === undefined ? next(i + 1) : Effect.succeed({ policy: live[i]!.name, decision }))
  return next(0)
}

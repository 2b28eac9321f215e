/**
 * ApprovalRecord — a tool call's request for a person's answer, kept as a record: who asked, why,
 * until when, and who answered what, when and why (docs/approvals.md, docs/decisions/0088).
 *
 * A session makes one for each call that asks (a rule, the tool's `needsApproval`, a policy, or
 * the tool itself mid-call), with an id of its own (a UUIDv7: time-ordered, never the model's call
 * id). The record travels in the snapshot's batch (`Snapshot.Batch.approvals`), so it is saved in
 * the same commit as the wait, and a store that keeps an approval log (`ApprovalLog`) indexes it
 * there: open until answered, then kept for the audit. A shadow policy's would-be decision is a
 * record too (`shadow`), answered as it is made: it never waits.
 *
 * What a record holds came from outside (the model's arguments, a person's reason, an answerer's
 * name): it is redacted as the model's texts are before a store sees it, and bounded here
 * (`bounded`): an input past `MAX_INPUT_CHARS` of JSON is kept as a sentence saying so, a reason
 * or a summary past its limit is cut. An answerer's name is data: stores bind it, never splice it.
 */
import { Schema } from "effect"
import * as JsonLimits from "./JsonLimits.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * How a request ended: a person (or program) approved or denied it, its deadline passed
 * (`expired`), or its run ended first (`aborted`: an abort, or the call cut off by a crash).
 *
 * @since 0.1.0
 * @category models
 */
export const Outcome = Schema.Literals(["approved", "denied", "expired", "aborted"])
export type Outcome = typeof Outcome.Type

/**
 * What a shadow policy would have decided for a call, beside what happened (the record's `rule`
 * and `outcome`): kept for a team trialling a policy on live traffic, never waited on.
 *
 * @since 0.1.0
 * @category models
 */
export const Shadow = Schema.Struct({
  policy: Schema.String,
  decision: Schema.Literals(["allow", "ask", "deny"]),
  reason: Schema.optionalKey(Schema.String)
})
export type Shadow = typeof Shadow.Type

/**
 * One approval.
 *
 * @since 0.1.0
 * @category models
 */
export const ApprovalRecord = Schema.Struct({
  /** The record's own id (UUIDv7): what `Approvals.approve` and the CLI take. */
  id: Schema.String,
  /** The session whose run asked: a sub-agent's call is its caller's session's (see `agent`). */
  sessionId: Schema.String,
  /** The run that asked, when one did (a restored batch's continuation has none of its own). */
  runId: Schema.optionalKey(Schema.String),
  /** The asking agent's path, joined with `/`: `main`, or `main/researcher` for a sub-agent's call. */
  agent: Schema.String,
  /** The model's id for the call, as `session.approve` takes it. */
  callId: Schema.String,
  tool: Schema.String,
  /** The call's arguments, redacted (or a sentence, past `MAX_INPUT_CHARS`). */
  input: Schema.Unknown,
  /** What asked: `ask: <pattern>`, `needsApproval`, `policy: <name>`, `discovered: <server>`, or `tool` (mid-call). */
  rule: Schema.String,
  /** A tool asking mid-call: what it is about to do, and more when it gave more. */
  summary: Schema.optionalKey(Schema.String),
  details: Schema.optionalKey(Schema.String),
  /** Epoch milliseconds. */
  requestedAt: Schema.Int,
  /** The deadline (epoch ms): unanswered by then, the request is `expired`. */
  expiresAt: Schema.optionalKey(Schema.Int),
  answeredAt: Schema.optionalKey(Schema.Int),
  /** Absent while the request is open. */
  outcome: Schema.optionalKey(Outcome),
  /** Who answered: the identity the program passed (`{ by }`), or `rules` / `expiry` / `abort`. */
  by: Schema.optionalKey(Schema.String),
  reason: Schema.optionalKey(Schema.String),
  /** A shadow policy's decision: the record is an observation, never open. */
  shadow: Schema.optionalKey(Shadow)
})
export type ApprovalRecord = typeof ApprovalRecord.Type

/**
 * An answer's author and why, as `approve` and `deny` take them.
 *
 * @since 0.1.0
 * @category models
 */
export interface By {
  /** The answerer's identity, as the program knows it (a user name, an email, a service). */
  readonly by?: string | undefined
  readonly reason?: string | undefined
  /**
   * The record this answer is for (`Approvals` gives it): a call now waiting under another record
   * (its run continued after a restart and asked again) refuses it rather than take it.
   */
  readonly approval?: string | undefined
}

/** Past this much JSON, a record keeps a sentence in place of the call's input. */
export const MAX_INPUT_CHARS = 64 * 1024

/** Past this, a reason, a summary or details are cut (with `…`). */
export const MAX_TEXT_CHARS = 4096

/** Past this, an answerer's identity is cut. */
export const MAX_BY_CHARS = 256

// ---------------------------------------------------------------------------------------------
// Guards
// ---------------------------------------------------------------------------------------------

/**
 * Whether the request still waits for an answer at `now` (epoch ms): not answered, and not past
 * its deadline. A shadow record never does.
 *
 * @since 0.1.0
 * @category guards
 */
export const isOpen = (record: ApprovalRecord, now: number): boolean =>
  record.outcome === undefined && record.shadow === undefined && (record.expiresAt === undefined || record.expiresAt > now)

// ---------------------------------------------------------------------------------------------
// Combinators
// ---------------------------------------------------------------------------------------------

const cut = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`)

/**
 * `input` as a record keeps it: itself when its JSON is within `MAX_INPUT_CHARS` (and
 * JsonLimits' depth), else a sentence naming its size.
 *
 * @since 0.1.0
 * @category combinators
 */
export const boundedInput = (input: unknown): unknown => {
  const refused = JsonLimits.check(input, { ...JsonLimits.defaults, maxChars: MAX_INPUT_CHARS })
  if (refused === undefined) return input
  return `[input not kept: it holds ${refused.description}; the session's history has the call]`
}

/**
 * The answer's fields as a record keeps them: the identity and the reason cut to their limits.
 *
 * @since 0.1.0
 * @category combinators
 */
export const answered = (record: ApprovalRecord, outcome: Outcome, at: number, by: By | undefined): ApprovalRecord => ({
  ...record,
  outcome,
  answeredAt: at,
  ...(by?.by === undefined ? {} : { by: cut(by.by, MAX_BY_CHARS) }),
  ...(by?.reason === undefined ? {} : { reason: cut(by.reason, MAX_TEXT_CHARS) })
})

/**
 * A summary or details as a record keeps them.
 *
 * @since 0.1.0
 * @category combinators
 */
export const boundedText = (text: string): string => cut(text, MAX_TEXT_CHARS)

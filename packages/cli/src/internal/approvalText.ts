/**
 * approvalText — how `condukt approvals` prints a record for a person: one line in a list, every
 * field for `show`, `approve` and `deny`. Times are UTC ISO with their distance from `now` (`5m
 * ago`, `in 59m`). What came from outside (an input, an identity, a reason) is data: strings an
 * answerer or a model wrote are printed JSON-quoted, and every text is kept to its line, control
 * characters escaped, so a record cannot move the cursor or forge a line of output.
 */
import type * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import * as DateTime from "effect/DateTime"

/** Past this many characters, a list line's input is cut (with `…`). */
export const LIST_INPUT_CHARS = 60

/** Control characters, line separators and bidi controls: what could break or disguise a line. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

/** `text` on one line: each unsafe character as its JSON escape. */
export const oneLine = (text: string): string => text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`)

/** A string from outside, quoted. */
const quoted = (text: string) => oneLine(JSON.stringify(text))

/** An input as JSON on one line (JSON escapes control characters; the separators and bidi controls too here). */
const json = (value: unknown): string => oneLine(JSON.stringify(value) ?? "null")

/** A span of time as a person reads it: `45s`, `59m`, `5h`, `3d`. */
export const span = (ms: number): string => {
  const seconds = Math.max(0, Math.floor(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`
  if (seconds < 48 * 3600) return `${Math.floor(seconds / 3600)}h`
  return `${Math.floor(seconds / 86400)}d`
}

/** `at` relative to `now`: `5m ago`, `in 59m`. */
export const relative = (at: number, now: number): string => (at <= now ? `${span(now - at)} ago` : `in ${span(at - now)}`)

const iso = (at: number) => DateTime.formatIso(DateTime.makeUnsafe(at))

/** An instant in full: `2026-11-29T03:00:00.000Z (5m ago)`. */
const instant = (at: number, now: number) => `${iso(at)} (${relative(at, now)})`

/**
 * Where the record stands at `now`: `open`, `open, expires in 59m`, `expired` (past its deadline,
 * unanswered), or its outcome and who gave it (`approved by "alice"`).
 */
export const status = (record: ApprovalRecord.ApprovalRecord, now: number): string => {
  if (record.shadow !== undefined) return `shadow: ${oneLine(record.shadow.policy)} would ${record.shadow.decision}`
  if (record.outcome !== undefined) return `${record.outcome}${record.by === undefined ? "" : ` by ${quoted(record.by)}`}`
  if (record.expiresAt === undefined) return "open"
  return record.expiresAt <= now ? "expired" : `open, expires ${relative(record.expiresAt, now)}`
}

/**
 * A record as a list line: id, age, agent, tool and input (cut to `LIST_INPUT_CHARS`), rule, status.
 *
 * @since 0.1.0
 * @category constructors
 */
export const line = (record: ApprovalRecord.ApprovalRecord, now: number): string =>
  [
    oneLine(record.id),
    relative(record.requestedAt, now),
    oneLine(record.agent),
    `${oneLine(record.tool)} ${cut(json(record.input), LIST_INPUT_CHARS)}`,
    oneLine(record.rule),
    status(record, now)
  ].join("  ")

/**
 * A record in full, one field a line, each line `name: value`; the fields it lacks left out.
 *
 * @since 0.1.0
 * @category constructors
 */
export const details = (record: ApprovalRecord.ApprovalRecord, now: number): ReadonlyArray<string> => {
  const fields: Array<readonly [string, string | undefined]> = [
    ["id", oneLine(record.id)],
    ["session", oneLine(record.sessionId)],
    ["run", record.runId === undefined ? undefined : oneLine(record.runId)],
    ["agent", oneLine(record.agent)],
    ["call", oneLine(record.callId)],
    ["tool", oneLine(record.tool)],
    ["input", json(record.input)],
    ["rule", oneLine(record.rule)],
    ["summary", record.summary === undefined ? undefined : quoted(record.summary)],
    ["details", record.details === undefined ? undefined : quoted(record.details)],
    ["requested", instant(record.requestedAt, now)],
    ["expires", record.expiresAt === undefined ? undefined : instant(record.expiresAt, now)],
    ["answered", record.answeredAt === undefined ? undefined : instant(record.answeredAt, now)],
    ["status", status(record, now)],
    ["reason", record.reason === undefined ? undefined : quoted(record.reason)],
    [
      "shadow",
      record.shadow === undefined
        ? undefined
        : `${oneLine(record.shadow.policy)}: ${record.shadow.decision}${record.shadow.reason === undefined ? "" : ` (${quoted(record.shadow.reason)})`}`
    ]
  ]
  return fields.flatMap(([name, value]) => (value === undefined ? [] : [`${`${name}:`.padEnd(11)}${value}`]))
}

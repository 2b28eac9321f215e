/**
 * approvalRules — an agent step's approval rules as a workflow writes them, and as its session
 * takes them. A workflow's `approval { … }` block applies to every agent step; a step's own
 * `approvals = { … }` joins its lists (the workflow's patterns first, each once) and its `timeout`
 * and `expires` win. A duration is seconds as a number (`600`) or a string with its unit (`"45s"`,
 * `"30m"`, `"1h"`, `"2d"`); the session takes milliseconds. The Validator refuses any other
 * duration, so `millis` meets only those two shapes at run time.
 */
import type { Approval } from "@condukt/core"
import type { ApprovalRules } from "../Document.ts"

/** A duration string: a positive count and its unit, seconds to days. */
const SPAN = /^(\d+(?:\.\d+)?)(s|m|h|d)$/

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** What a duration may be, as validation errors say it. */
export const DURATION_FORMS = `seconds as a positive number (600), or a string with its unit ("45s", "30m", "1h", "2d")`

/** `value` in milliseconds, when it is a duration a workflow may write (positive seconds, or a span string). */
export const millis = (value: unknown): number | undefined => {
  if (typeof value === "number") return value > 0 && Number.isFinite(value) ? value * 1000 : undefined
  if (typeof value !== "string") return undefined
  const span = SPAN.exec(value)
  if (span === null) return undefined
  const ms = Number(span[1]) * UNIT_MS[span[2] as keyof typeof UNIT_MS]
  return ms > 0 ? ms : undefined
}

const joined = (first: ReadonlyArray<string> | undefined, second: ReadonlyArray<string> | undefined) =>
  first === undefined && second === undefined ? undefined : [...new Set([...(first ?? []), ...(second ?? [])])]

/**
 * The rules of one agent step's session: the workflow's block joined with the step's own, the
 * durations in milliseconds; `undefined` when neither gives any.
 */
export const forStep = (workflow: ApprovalRules | undefined, step: ApprovalRules | undefined): Approval.Rules | undefined => {
  if (workflow === undefined && step === undefined) return undefined
  const timeout = step?.timeout ?? workflow?.timeout
  const expires = step?.expires ?? workflow?.expires
  return {
    allow: joined(workflow?.allow, step?.allow),
    ask: joined(workflow?.ask, step?.ask),
    deny: joined(workflow?.deny, step?.deny),
    timeout: timeout === undefined ? undefined : millis(timeout),
    expires: expires === undefined ? undefined : millis(expires)
  }
}

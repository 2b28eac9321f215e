/**
 * Approve — how `condukt run` answers a tool call of an agent step that waits for approval
 * (docs/cli.md, ADR 0060): `--approve all` approves every call, `--approve none` denies every
 * call (the model reads why); without the flag it asks on the terminal, on stderr (a line naming
 * the request's approval record, its rule and its deadline when it has them, then the question:
 * `y` approves, `n` or an empty line denies, any other text denies with that text as the
 * reason the model reads). Without a terminal on stdin and without the flag nobody can answer:
 * the step fails at once, naming the tool and the flag, rather than waiting forever.
 */
import { Approval } from "@condukt/core"
import { Clock, DateTime, Effect, type Terminal } from "effect"
import { oneLine, relative } from "./internal/approvalText.ts"
import { quote } from "./Progress.ts"

/**
 * `--approve`'s values.
 *
 * @since 0.1.0
 * @category models
 */
export type Mode = "all" | "none"

/** What the model reads for a call `--approve none` denied. */
export const DENIED_BY_FLAG = "condukt run --approve none denies every call"

/**
 * The answer a line typed at the prompt gives.
 *
 * @since 0.1.0
 * @category combinators
 */
export const parse = (line: string): Approval.Answer => {
  const text = line.trim()
  const lower = text.toLowerCase()
  if (lower === "y" || lower === "yes") return Approval.approved
  return lower === "" || lower === "n" || lower === "no" ? Approval.denied() : Approval.denied(text)
}

/** `at` (epoch ms) in the local time zone, to the minute: `2026-11-29 14:05`. */
const localTime = (at: number): string => {
  const parts = DateTime.toParts(DateTime.makeZonedUnsafe(at, { timeZone: DateTime.zoneMakeLocal() }))
  const two = (n: number) => String(n).padStart(2, "0")
  return `${parts.year}-${two(parts.month)}-${two(parts.day)} ${two(parts.hour)}:${two(parts.minute)}`
}

/** What the request's record says (its id, the rule that asked, its deadline at `now`), when it has one. */
const about = (request: Approval.Request, now: number): string | undefined => {
  const fields = [
    request.id === undefined ? undefined : `approval ${oneLine(request.id)}`,
    request.rule === undefined ? undefined : `rule ${oneLine(request.rule)}`,
    request.expiresAt === undefined ? undefined : `expires ${localTime(request.expiresAt)} (${relative(request.expiresAt, now)})`
  ].filter((field) => field !== undefined)
  return fields.length === 0 ? undefined : `    ${request.agent}: ${fields.join(", ")}`
}

/**
 * The question for `request` at `now` (epoch ms): a line naming its record when it has one (id,
 * rule, deadline as a local time and how far off), then the question, one line.
 *
 * @since 0.1.0
 * @category constructors
 */
export const question = (request: Approval.Request, now: number): string => {
  const asked = `    ${request.agent}: allow ${request.tool} ${quote(request.input)}? [y/n/reason]`
  const record = about(request, now)
  return record === undefined ? asked : `${record}\n${asked}`
}

/**
 * The answerer for `condukt run`: the flag's, else the terminal's (`ask` prints the question and
 * reads a line; `undefined` when stdin is no terminal), else none, which fails the step naming the
 * tool and the flag.
 *
 * @since 0.1.0
 * @category constructors
 */
export const answerer = (
  mode: Mode | undefined,
  ask: ((question: string) => Effect.Effect<string, Terminal.QuitError>) | undefined
): Approval.Answerer => {
  if (mode === "all") return () => Effect.succeed(Approval.approved)
  if (mode === "none") return () => Effect.succeed(Approval.denied(DENIED_BY_FLAG))
  if (ask === undefined) {
    return (request) =>
      Effect.fail(
        new Approval.Unanswered({
          agent: request.agent,
          callId: request.callId,
          tool: request.tool,
          description: `${request.tool} (call ${request.callId}) needs approval and there is no terminal to ask on; run with --approve all or --approve none`
        })
      )
  }
  return (request) =>
    Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => ask(question(request, now))),
      Effect.map(parse),
      Effect.catchTag("QuitError", () =>
        Effect.fail(
          new Approval.Unanswered({
            agent: request.agent,
            callId: request.callId,
            tool: request.tool,
            description: `${request.tool} (call ${request.callId}) needs approval and the terminal closed before an answer`
          })
        ))
    )
}

/**
 * approvalCommands — what `condukt approvals list|show|approve|deny` do once their arguments are
 * parsed: open the store `--store` names (approvalStore.ts), ask its approval log, print. `Cli`'s
 * handlers load this module with a dynamic `import()`, so it loads the stores and nothing of the
 * workflow engine, the providers or MCP.
 *
 * An answer is recorded in the store (`ApprovalLog.answer`: once, refused when the request was
 * answered already, has expired, or is unknown); the session whose call asked takes it when it
 * next starts. What the commands take from the command line is data: the identity and the reason
 * go to the store as they are (it binds them, and cuts them to the record's limits), and an id is
 * only ever looked up. Exit codes: 0 done, 1 a refused answer or an unknown id, 2 a usage error or
 * a store that cannot be opened.
 */
import * as ApprovalLog from "@condukt/core/ApprovalLog"
import type * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import type { SessionStoreError } from "@condukt/core/SessionStoreError"
import { Clock, DateTime, Effect, Option } from "effect"
import * as ApprovalStore from "./approvalStore.ts"
import * as ApprovalText from "./approvalText.ts"
import { type Exit, fail, plain, reportUnexpected } from "./print.ts"

/** What every `approvals` command takes. */
export interface Common {
  readonly store: string
  readonly json: boolean
  readonly verbose: boolean
}

/** `approvals list`'s filters, as parsed. */
export interface ListArgs extends Common {
  readonly status: "open" | "answered" | "all"
  readonly session: Option.Option<string>
  readonly agent: Option.Option<string>
  readonly tool: Option.Option<string>
  readonly by: Option.Option<string>
  readonly since: Option.Option<string>
  readonly until: Option.Option<string>
  readonly limit: Option.Option<number>
  readonly cursor: Option.Option<string>
}

/** `approve` and `deny`'s arguments, as parsed. */
export interface AnswerArgs extends Common {
  readonly id: string
  readonly by: string
  readonly reason: Option.Option<string>
}

/** A span back from now, as `--since` takes it: a count and a unit (`90s`, `30m`, `1h`, `2d`, `1w`). */
const BACK = /^(\d{1,9})(s|m|h|d|w)$/

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const

/**
 * The instant `text` names at `now` (epoch ms): an ISO time (`2026-11-29T03:00:00Z`, a date), or a
 * span back from now (`1h`); `undefined` for anything else.
 *
 * @since 0.1.0
 * @category constructors
 */
export const instant = (text: string, now: number): number | undefined => {
  const back = BACK.exec(text)
  if (back !== null) return now - Number(back[1]) * UNIT_MS[back[2] as keyof typeof UNIT_MS]
  // Only ISO: `Date`'s parser also takes `1` or `March 7`, which no one means here.
  if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) return undefined
  return Option.getOrUndefined(Option.map(DateTime.make(text), DateTime.toEpochMillis))
}

/** A time flag's instant, or exit 2 naming the flag and what it takes. */
const timeFlag = (flag: string, value: Option.Option<string>, now: number) => {
  if (Option.isNone(value)) return Effect.succeed(undefined)
  const at = instant(value.value, now)
  return at === undefined
    ? fail(plain, 2, `--${flag} takes an ISO time (2026-11-29T03:00:00Z) or a span back from now (90s, 30m, 1h, 2d, 1w), not ${JSON.stringify(value.value)}`)
    : Effect.succeed(at)
}

/** Runs `body` on the log of `args.store`, each unexpected failure reported per `--verbose`. */
const withLog = <A>(
  args: Common,
  body: (log: ApprovalLog.Service<SessionStoreError>, now: number) => Effect.Effect<A, Exit>
) =>
  reportUnexpected(plain, args.verbose)(Effect.scoped(Effect.gen(function*() {
    const log = yield* ApprovalStore.open(args.store)
    return yield* body(log, yield* Clock.currentTimeMillis)
  })))

/** A store's failure after it opened (a corrupt row, a lock held too long): its message, exit 1. */
const storeFailed = (error: { readonly message: string }) => fail(plain, 1, error.message)

const printRecord = (record: ApprovalRecord.ApprovalRecord, json: boolean, now: number) =>
  json ? plain.out(JSON.stringify(record)) : Effect.forEach(ApprovalText.details(record, now), plain.out, { discard: true })

/** `condukt approvals list`: one page of records, oldest first, and the cursor of the next. */
export const list = (args: ListArgs) =>
  withLog(args, (log, now) =>
    Effect.gen(function*() {
      const limit = Option.getOrUndefined(args.limit)
      if (limit !== undefined && !(limit >= 1 && limit <= ApprovalLog.MAX_PAGE)) {
        return yield* fail(plain, 2, `--limit is how many records a page holds: 1 to ${ApprovalLog.MAX_PAGE}, not ${limit}`)
      }
      const since = yield* timeFlag("since", args.since, now)
      const until = yield* timeFlag("until", args.until, now)
      const page = yield* Effect.catch(
        log.list({
          status: args.status,
          sessionId: Option.getOrUndefined(args.session),
          agent: Option.getOrUndefined(args.agent),
          tool: Option.getOrUndefined(args.tool),
          by: Option.getOrUndefined(args.by),
          since,
          until,
          limit,
          cursor: Option.getOrUndefined(args.cursor),
          now
        }),
        storeFailed
      )
      if (args.json) return yield* plain.out(JSON.stringify(page.next === undefined ? { records: page.records } : page))
      yield* Effect.forEach(page.records, (record) => plain.out(ApprovalText.line(record, now)), { discard: true })
      if (page.records.length === 0) yield* plain.err(`no ${args.status === "all" ? "" : `${args.status} `}approvals match`)
      if (page.next !== undefined) yield* plain.out(`next page: --cursor ${page.next}`)
    }))

/** `condukt approvals show`: the record in full, or exit 1 when no record has the id. */
export const show = (args: Common & { readonly id: string }) =>
  withLog(args, (log, now) =>
    Effect.gen(function*() {
      const record = yield* Effect.catch(log.get(args.id), storeFailed)
      if (Option.isNone(record)) return yield* fail(plain, 1, new ApprovalLog.ApprovalRefused({ id: args.id, reason: "unknown" }).message)
      yield* printRecord(record.value, args.json, now)
    }))

/** `condukt approvals approve|deny`: the answer recorded once, the record as answered; a refusal's message and exit 1. */
export const answer = (outcome: "approved" | "denied") => (args: AnswerArgs) =>
  withLog(args, (log, now) =>
    Effect.gen(function*() {
      if (args.by.trim() === "" || ApprovalText.oneLine(args.by) !== args.by) {
        return yield* fail(plain, 2, "--by names who answers, on one line: it cannot be empty or hold control characters")
      }
      const answered = yield* log.answer(args.id, outcome, now, { by: args.by, reason: Option.getOrUndefined(args.reason) }).pipe(
        Effect.catchTag("ApprovalRefused", (refused) => fail(plain, 1, refused.message)),
        Effect.catchTag("SessionStoreError", storeFailed)
      )
      yield* printRecord(answered, args.json, now)
    }))

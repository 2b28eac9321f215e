/**
 * bench/approvalList — listing open approvals from the SQLite store's approval log (issue 39:
 * listing 10,000 open approvals ≤ 50 ms on SQLite).
 *
 * 10,000 open approval records, saved by 100 sessions of 100 each (as a save indexes its batch's
 * records), in a `SqliteSessionStore` file in the temp directory. Timed: `approvals.list({ limit:
 * 100 })`, the first page; and paging through all 10,000 in pages of 100 and of 1,000 (`MAX_PAGE`),
 * each call given the previous page's cursor. Baseline in the same run, on the same file: the same
 * pages by a raw `SELECT` on a `node:sqlite` connection of the bench's own, one prepared statement,
 * each body parsed with `JSON.parse` (what the store adds: its statement's text built from the
 * filter, its transaction, decoding each record with its Schema, the Effect around it). Reported:
 * medians, and the store's ratio to the raw SELECT; the goal is judged on the 10,000 in pages of 100.
 *
 * Run: node_modules/.bin/node bench/approvalList.ts [--runs=N]
 */
import { type ApprovalRecord, Message, Snapshot } from "@condukt/core"
import { SqliteSessionStore } from "@condukt/node"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { report } from "./report.ts"

const RUNS = Number(process.argv.find((a) => a.startsWith("--runs="))?.slice(7) ?? 30)
const SESSIONS = 100
const PER_SESSION = 100
const TOTAL = SESSIONS * PER_SESSION
const GOAL_MS = 50

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const record = (n: number, sessionId: string): ApprovalRecord.ApprovalRecord => ({
  id: `01900000-0000-7000-8000-${String(n).padStart(12, "0")}`,
  sessionId,
  agent: n % 3 === 0 ? "main/researcher" : "main",
  callId: `call_${n}`,
  tool: n % 2 === 0 ? "Bash" : "Write",
  input: { command: `rm -rf build/${n} && make -j4 target-${n}`, timeout: 120 },
  rule: "ask: Bash",
  requestedAt: 1_700_000_000_000 + n
})

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-bench-approvals-"))
const file = path.join(dir, "sessions.db")

/** Times `f` `RUNS` times after a few untimed calls; milliseconds each. */
const timed = <A, E>(f: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 5; i++) yield* f
    const times: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      const began = performance.now()
      yield* f
      times.push(performance.now() - began)
    }
    return times
  })

const program = Effect.gen(function*() {
  const store = yield* SqliteSessionStore.make({ file })
  for (let s = 0; s < SESSIONS; s++) {
    const sessionId = `session-${s}`
    const approvals = Array.from({ length: PER_SESSION }, (_, i) => record(s * PER_SESSION + i, sessionId))
    yield* store.save(Snapshot.make({
      id: sessionId,
      agent: "bench",
      model: "bench:x",
      messages: [Message.user("go")],
      assigns: {},
      createdAt: 0,
      updatedAt: 0,
      batch: { waiting: approvals.map((r) => ({ callId: r.callId, tool: r.tool, input: r.input })), results: [], started: [], approvals }
    }))
  }
  const log = store.approvals!
  const pages = (limit: number) =>
    Effect.gen(function*() {
      let cursor: string | undefined
      let count = 0
      do {
        const page = yield* log.list({ limit, cursor })
        count += page.records.length
        cursor = page.next
      } while (cursor !== undefined)
      if (count !== TOTAL) return yield* Effect.die(`listed ${count} records, ${TOTAL} saved`)
    })

  // The baseline: the same pages, one prepared SELECT on a connection of the bench's own (the
  // module is loaded by now, its ExperimentalWarning dropped by the store's open).
  const db = new (process.getBuiltinModule("node:sqlite").DatabaseSync)(file)
  const select = db.prepare(
    "SELECT id, body FROM condukt_approvals WHERE shadow = 0 AND outcome IS NULL AND (expires_at IS NULL OR expires_at > ?) AND id > ? ORDER BY id LIMIT ?"
  )
  const raw = (limit: number, all: boolean) =>
    Effect.sync(() => {
      let cursor = ""
      let count = 0
      for (;;) {
        const rows = select.all(Date.now(), cursor, limit + 1)
        const records = rows.slice(0, limit).map((row) => JSON.parse(String(row["body"])) as ApprovalRecord.ApprovalRecord)
        count += records.length
        if (!all || rows.length <= limit) break
        cursor = records.at(-1)!.id
      }
      if (all && count !== TOTAL) throw new Error(`listed ${count} records, ${TOTAL} saved`)
    })

  const results = {
    first: { ours: yield* timed(log.list({ limit: 100 })), raw: yield* timed(raw(100, false)) },
    pages100: { ours: yield* timed(pages(100)), raw: yield* timed(raw(100, true)) },
    pages1000: { ours: yield* timed(pages(1000)), raw: yield* timed(raw(1000, true)) }
  }
  db.close()
  return results
}).pipe(Effect.scoped)

const results = await Effect.runPromise(program)
fs.rmSync(dir, { recursive: true, force: true })

const ms = (x: number) => `${x.toFixed(2)} ms`
const rows = [
  ["first page of 100", results.first, null],
  [`all ${TOTAL.toLocaleString("en")} in pages of 100`, results.pages100, GOAL_MS],
  [`all ${TOTAL.toLocaleString("en")} in pages of 1,000`, results.pages1000, null]
] as const
for (const [what, { ours, raw }, goal] of rows) {
  const ratio = median(ours) / median(raw)
  console.log(`${what}: ${ms(median(ours))} (raw SELECT ${ms(median(raw))}, ${ratio.toFixed(2)}x)${goal === null ? "" : `; goal ≤ ${goal} ms: ${median(ours) <= goal ? "met" : "MISSED"}`}`)
  report({
    benchmark: `approval list (SQLite, ${TOTAL.toLocaleString("en")} open): ${what} / raw SELECT (median)`,
    ours: ms(median(ours)),
    baseline: ms(median(raw)),
    ratio,
    goal: goal === null ? "report" : `≤ ${goal} ms`,
    met: goal === null ? null : median(ours) <= goal
  })
}

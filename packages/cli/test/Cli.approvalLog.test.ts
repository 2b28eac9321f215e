/**
 * `condukt approvals list|show|approve|deny`, as a person runs them: the real CLI as a child
 * process on a SQLite store (and a disk store's directory, a Postgres database) whose records were
 * saved as a session saves them, in its snapshot's batch through the store's `save`. Times are set from the test's
 * clock hours away from now, so the ages printed (`3h ago`, `in 9h`) hold however long a run takes.
 */
import * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import * as SessionStore from "@condukt/core/SessionStore"
import * as Snapshot from "@condukt/core/Snapshot"
import * as DiskSessionStore from "@condukt/node/sessionStore/Disk"
import * as SqliteSessionStore from "@condukt/node/sessionStore/Sqlite"
import * as SqlSessionStore from "@condukt/node/sessionStore/Sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { execIn, root } from "../../../test/support/exec.ts"
import * as EmbeddedPostgres from "../../cluster/test/support/embeddedPostgres.ts"
import { TempDir } from "@condukt/testing"

const condukt = path.join(root, "node_modules/.bin/condukt")
const env = { PATH: `${path.join(root, "node_modules/.bin")}:/usr/bin:/bin`, HOME: os.tmpdir() }

const HOUR = 3_600_000
const HOSTILE = "'; DROP TABLE condukt_approvals; --"

/** Record `n`'s id: a UUIDv7's shape, sorting as `n` does. */
const idOf = (n: number) => `01900000-0000-7000-8000-${String(n).padStart(12, "0")}`

const record = (n: number, fields: Partial<ApprovalRecord.ApprovalRecord>): ApprovalRecord.ApprovalRecord => ({
  id: idOf(n),
  sessionId: "s1",
  agent: "notes",
  callId: `call_${n}`,
  tool: "Read",
  input: { path: `${n}.txt` },
  rule: "ask: Read",
  requestedAt: 0,
  ...fields
})

/** Saves, through `store`'s save as a session does, one snapshot per session holding its records in its batch. */
const saveAll = (store: SessionStore.Service, records: ReadonlyArray<ApprovalRecord.ApprovalRecord>) =>
  Effect.forEach(
    [...new Set(records.map((r) => r.sessionId))],
    (sessionId) => {
      const own = records.filter((r) => r.sessionId === sessionId)
      return store.save(Snapshot.make({
        id: sessionId,
        agent: "notes",
        model: "openai:gpt-4.1-mini",
        messages: [],
        assigns: {},
        createdAt: 0,
        updatedAt: 0,
        batch: { waiting: own.map((r) => ({ callId: r.callId, tool: r.tool, input: r.input })), results: [], started: [], approvals: own }
      }))
    },
    { discard: true }
  )

/** A fresh directory, removed with the scope. */
const tempDir = TempDir.make("condukt-approvals-")

/** `records` saved into a store built by `layer`, closed again before the CLI opens it. */
const seed = <E>(layer: Layer.Layer<SessionStore.SessionStore, E>, records: ReadonlyArray<ApprovalRecord.ApprovalRecord>) =>
  Effect.scoped(Effect.flatMap(Layer.build(layer), (context) => saveAll(Context.get(context, SessionStore.SessionStore), records)))

/**
 * The four records the cases share, at `now`: an open Read (3h ago), an open Bash of a sub-agent
 * with a deadline in 10h and a two-line input, an expired Write of another session, an approved one.
 */
const four = (now: number) => [
  record(1, { requestedAt: now - 3 * HOUR }),
  record(2, {
    agent: "notes/researcher",
    tool: "Bash",
    input: { command: "rm -rf build\necho done", note: "x".repeat(80) },
    rule: "needsApproval",
    runId: "run-1",
    requestedAt: now - 2 * HOUR,
    expiresAt: now + 10 * HOUR
  }),
  record(3, { sessionId: "s2", agent: "deploy", tool: "Write", rule: "ask: Write", requestedAt: now - 2 * HOUR, expiresAt: now - HOUR }),
  record(4, { requestedAt: now - 2 * HOUR, outcome: "approved", by: "carol", answeredAt: now - HOUR, reason: "fine" })
]

/** A SQLite store holding `four`, and the instant they were made at. */
const sqliteWithFour = Effect.gen(function*() {
  const dir = yield* tempDir
  const db = path.join(dir, "sessions.db")
  const now = yield* Clock.currentTimeMillis
  yield* seed(SqliteSessionStore.layer({ file: db }), four(now))
  return { dir, db, now }
})

const iso = (at: number) => new Date(at).toISOString()

const cli = (dir: string, ...args: ReadonlyArray<string>) => execIn(dir, condukt, args, env)

const LINE_1 = `${idOf(1)}  3h ago  notes  Read {"path":"1.txt"}  ask: Read  open`
const LINE_2 = `${idOf(2)}  2h ago  notes/researcher  Bash {"command":"rm -rf build\\necho done","note":"xxxxxxxxxxxxxx…  needsApproval  open, expires in 9h`

describe("condukt approvals", () => {
  it.live("list: the open requests, one line each (input cut to one line), oldest first; --json: the page whole", () =>
    Effect.gen(function*() {
      const { db, dir, now } = yield* sqliteWithFour
      assert.deepStrictEqual(yield* cli(dir, "approvals", "list", "--store", db), { stdout: `${LINE_1}\n${LINE_2}\n`, stderr: "", exitCode: 0 })
      const json = yield* cli(dir, "approvals", "list", "--store", db, "--json")
      assert.deepStrictEqual({ ...json, stdout: JSON.parse(json.stdout) }, { stdout: { records: four(now).slice(0, 2) }, stderr: "", exitCode: 0 })
      assert.deepStrictEqual(yield* cli(dir, "approvals", "list", "--store", db, "--tool", "Nope"), {
        stdout: "",
        stderr: "no open approvals match\n",
        exitCode: 0
      })
    }).pipe(Effect.scoped))

  it.live("list's filters: status, session, agent prefix, tool, answerer, since and until (ISO or a span back)", () =>
    Effect.gen(function*() {
      const { db, dir, now } = yield* sqliteWithFour
      const ids = (...args: ReadonlyArray<string>) =>
        Effect.map(cli(dir, "approvals", "list", "--store", db, "--json", ...args), (result) => {
          assert.strictEqual(result.exitCode, 0, result.stderr)
          return JSON.parse(result.stdout).records.map((r: ApprovalRecord.ApprovalRecord) => r.callId)
        })
      assert.deepStrictEqual(yield* ids("--status", "answered"), ["call_4"])
      assert.deepStrictEqual(yield* ids("--status", "all"), ["call_1", "call_2", "call_3", "call_4"])
      assert.deepStrictEqual(yield* ids("--status", "all", "--session", "s2"), ["call_3"])
      assert.deepStrictEqual(yield* ids("--agent", "notes"), ["call_1", "call_2"])
      assert.deepStrictEqual(yield* ids("--agent", "notes/researcher"), ["call_2"])
      assert.deepStrictEqual(yield* ids("--status", "all", "--tool", "Write"), ["call_3"])
      assert.deepStrictEqual(yield* ids("--status", "all", "--by", "carol"), ["call_4"])
      assert.deepStrictEqual(yield* ids("--status", "all", "--since", "150m"), ["call_2", "call_3", "call_4"])
      assert.deepStrictEqual(yield* ids("--status", "all", "--until", iso(now - 150 * 60_000)), ["call_1"])
      const plain = yield* cli(dir, "approvals", "list", "--store", db, "--status", "all", "--session", "s2")
      assert.strictEqual(plain.stdout, `${idOf(3)}  2h ago  deploy  Write {"path":"3.txt"}  ask: Write  expired\n`)
      const answered = yield* cli(dir, "approvals", "list", "--store", db, "--status", "answered")
      assert.strictEqual(answered.stdout, `${idOf(4)}  2h ago  notes  Read {"path":"4.txt"}  ask: Read  approved by "carol"\n`)
      assert.deepStrictEqual(yield* cli(dir, "approvals", "list", "--store", db, "--since", "yesterday"), {
        stdout: "",
        stderr: `--since takes an ISO time (2026-11-29T03:00:00Z) or a span back from now (90s, 30m, 1h, 2d, 1w), not "yesterday"\n`,
        exitCode: 2
      })
    }).pipe(Effect.scoped))

  it.live("250 open records page through with the cursor each page prints; --limit past 1000 is refused", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const db = path.join(dir, "many.db")
      const now = yield* Clock.currentTimeMillis
      const many = Array.from({ length: 250 }, (_, i) => record(i + 1, { sessionId: `s${i % 5}`, requestedAt: now - HOUR }))
      yield* seed(SqliteSessionStore.layer({ file: db }), many)
      const first = yield* cli(dir, "approvals", "list", "--store", db, "--limit", "100")
      const lines = first.stdout.trimEnd().split("\n")
      assert.deepStrictEqual([lines.length, lines[0], lines[100]], [
        101,
        `${idOf(1)}  1h ago  notes  Read {"path":"1.txt"}  ask: Read  open`,
        `next page: --cursor ${idOf(100)}`
      ])
      const seen: Array<string> = []
      let cursor: string | undefined
      let pages = 0
      do {
        const result = yield* cli(dir, "approvals", "list", "--store", db, "--json", "--limit", "100", ...(cursor === undefined ? [] : ["--cursor", cursor]))
        const page = JSON.parse(result.stdout)
        seen.push(...page.records.map((r: ApprovalRecord.ApprovalRecord) => r.id))
        cursor = page.next
        pages++
      } while (cursor !== undefined)
      assert.deepStrictEqual({ pages, seen }, { pages: 3, seen: many.map((r) => r.id) })
      assert.deepStrictEqual(yield* cli(dir, "approvals", "list", "--store", db, "--limit", "5000"), {
        stdout: "",
        stderr: "--limit is how many records a page holds: 1 to 1000, not 5000\n",
        exitCode: 2
      })
    }).pipe(Effect.scoped))

  it.live("show: every field, plain or --json; an unknown id is exit 1 with the refusal's message", () =>
    Effect.gen(function*() {
      const { db, dir, now } = yield* sqliteWithFour
      assert.deepStrictEqual(yield* cli(dir, "approvals", "show", "--store", db, idOf(2)), {
        stdout: [
          `id:        ${idOf(2)}`,
          "session:   s1",
          "run:       run-1",
          "agent:     notes/researcher",
          "call:      call_2",
          "tool:      Bash",
          `input:     {"command":"rm -rf build\\necho done","note":"${"x".repeat(80)}"}`,
          "rule:      needsApproval",
          `requested: ${iso(now - 2 * HOUR)} (2h ago)`,
          `expires:   ${iso(now + 10 * HOUR)} (in 9h)`,
          "status:    open, expires in 9h",
          ""
        ].join("\n"),
        stderr: "",
        exitCode: 0
      })
      const json = yield* cli(dir, "approvals", "show", "--store", db, "--json", idOf(4))
      assert.deepStrictEqual(JSON.parse(json.stdout), four(now)[3])
      assert.deepStrictEqual(yield* cli(dir, "approvals", "show", "--store", db, "../../etc/passwd"), {
        stdout: "",
        stderr: `no approval "../../etc/passwd": list the open ones to find its id\n`,
        exitCode: 1
      })
    }).pipe(Effect.scoped))

  it.live("approve --by --reason records the answer once; a second is refused naming who answered; an expired or unknown one is refused", () =>
    Effect.gen(function*() {
      const { db, dir, now } = yield* sqliteWithFour
      const approved = yield* cli(dir, "approvals", "approve", "--store", db, idOf(1), "--by", "alice", "--reason", "read-only, fine")
      const answeredAt: number = JSON.parse((yield* cli(dir, "approvals", "show", "--store", db, "--json", idOf(1))).stdout).answeredAt
      assert.deepStrictEqual(approved, {
        stdout: [
          `id:        ${idOf(1)}`,
          "session:   s1",
          "agent:     notes",
          "call:      call_1",
          "tool:      Read",
          `input:     {"path":"1.txt"}`,
          "rule:      ask: Read",
          `requested: ${iso(now - 3 * HOUR)} (3h ago)`,
          `answered:  ${iso(answeredAt)} (0s ago)`,
          `status:    approved by "alice"`,
          `reason:    "read-only, fine"`,
          ""
        ].join("\n"),
        stderr: "",
        exitCode: 0
      })
      const again = yield* cli(dir, "approvals", "approve", "--store", db, idOf(1), "--by", "bob")
      assert.deepStrictEqual(again, {
        stdout: "",
        stderr: `approval ${idOf(1)} was answered already: approved by "alice" at ${iso(answeredAt)}\n`,
        exitCode: 1
      })
      assert.deepStrictEqual(yield* cli(dir, "approvals", "deny", "--store", db, idOf(3), "--by", "bob"), {
        stdout: "",
        stderr: `approval ${idOf(3)} expired at ${iso(now - HOUR)}: its call was not run\n`,
        exitCode: 1
      })
      assert.deepStrictEqual(yield* cli(dir, "approvals", "deny", "--store", db, "nope", "--by", "bob"), {
        stdout: "",
        stderr: `no approval "nope": list the open ones to find its id\n`,
        exitCode: 1
      })
      const denied = yield* cli(dir, "approvals", "deny", "--store", db, "--json", idOf(2), "--by", "bob", "--reason", "r".repeat(5000))
      const record = JSON.parse(denied.stdout)
      assert.deepStrictEqual([record.outcome, record.by, record.reason.length, record.reason.at(-1)], ["denied", "bob", ApprovalRecord.MAX_TEXT_CHARS, "…"])
      assert.deepStrictEqual(yield* cli(dir, "approvals", "approve", "--store", db, idOf(2), "--by", " "), {
        stdout: "",
        stderr: "--by names who answers, on one line: it cannot be empty or hold control characters\n",
        exitCode: 2
      })
    }).pipe(Effect.scoped))

  it.live("a hostile identity is data: stored as given, listed back by it, the table still there", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* sqliteWithFour
      const denied = yield* cli(dir, "approvals", "deny", "--store", db, idOf(2), "--by", HOSTILE, "--reason", "no\n\u001b[31mred")
      assert.strictEqual(denied.exitCode, 0, denied.stderr)
      assert.include(denied.stdout, `status:    denied by "'; DROP TABLE condukt_approvals; --"\nreason:    "no\\n\\u001b[31mred"\n`)
      const listed = yield* cli(dir, "approvals", "list", "--store", db, "--status", "answered", "--by", HOSTILE, "--json")
      assert.deepStrictEqual(JSON.parse(listed.stdout).records.map((r: ApprovalRecord.ApprovalRecord) => [r.id, r.by]), [[idOf(2), HOSTILE]])
      const all = yield* cli(dir, "approvals", "list", "--store", db, "--status", "all", "--json")
      assert.strictEqual(JSON.parse(all.stdout).records.length, 4)
    }).pipe(Effect.scoped))

  it.live("a store that cannot be opened is exit 2 with one sentence: nothing there, not a database", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      fs.writeFileSync(path.join(dir, "notes.txt"), "not a database\n")
      assert.deepStrictEqual(yield* cli(dir, "approvals", "list", "--store", "missing.db"), {
        stdout: "",
        stderr: "no store at missing.db: give a SQLite file, the directory of a disk store, or a postgres:// URL\n",
        exitCode: 2
      })
      assert.isFalse(fs.existsSync(path.join(dir, "missing.db")))
      const bad = yield* cli(dir, "approvals", "show", "--store", "notes.txt", idOf(1))
      assert.deepStrictEqual(bad, { stdout: "", stderr: "cannot open the store notes.txt: SessionStore.open: at notes.txt: file is not a database\n", exitCode: 2 })
    }).pipe(Effect.scoped))

  it.live("a disk store's directory: listed and answered alike", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = path.join(dir, "sessions")
      const now = yield* Clock.currentTimeMillis
      yield* seed(DiskSessionStore.layer({ dir: store }).pipe(Layer.provide(NodeServices.layer)), four(now))
      assert.deepStrictEqual(yield* cli(dir, "approvals", "list", "--store", store), { stdout: `${LINE_1}\n${LINE_2}\n`, stderr: "", exitCode: 0 })
      const approved = yield* cli(dir, "approvals", "approve", "--store", store, idOf(1), "--by", "alice")
      assert.strictEqual(approved.exitCode, 0, approved.stderr)
      const again = yield* cli(dir, "approvals", "approve", "--store", store, idOf(1), "--by", "bob")
      assert.deepStrictEqual([again.exitCode, again.stderr.startsWith(`approval ${idOf(1)} was answered already: approved by "alice" at `)], [1, true])
    }).pipe(Effect.scoped))

  it.live("a postgres:// URL: the SQL store on Postgres, listed and answered alike, a hostile identity bound as data", () =>
    Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres.start
      const database = yield* postgres.createDatabase
      const url = `postgresql://postgres@localhost/${database}?host=${encodeURIComponent(postgres.socketDir)}`
      const dir = yield* tempDir
      const now = yield* Clock.currentTimeMillis
      yield* seed(SqlSessionStore.layer({ location: url }).pipe(Layer.provide(PgClient.layer({ url: Redacted.make(url) }))), four(now))
      assert.deepStrictEqual(yield* cli(dir, "approvals", "list", "--store", url), { stdout: `${LINE_1}\n${LINE_2}\n`, stderr: "", exitCode: 0 })
      const denied = yield* cli(dir, "approvals", "deny", "--store", url, "--json", idOf(1), "--by", HOSTILE)
      assert.deepStrictEqual([denied.exitCode, JSON.parse(denied.stdout).by], [0, HOSTILE], denied.stderr)
      const listed = yield* cli(dir, "approvals", "list", "--store", url, "--status", "all", "--json")
      assert.deepStrictEqual(JSON.parse(listed.stdout).records.map((r: ApprovalRecord.ApprovalRecord) => [r.callId, r.outcome ?? "open"]), [
        ["call_1", "denied"],
        ["call_2", "open"],
        ["call_3", "open"],
        ["call_4", "approved"]
      ])
      const again = yield* cli(dir, "approvals", "approve", "--store", url, idOf(1), "--by", "bob")
      assert.deepStrictEqual([again.exitCode, again.stderr.startsWith(`approval ${idOf(1)} was answered already: denied by ${JSON.stringify(HOSTILE)} at `)], [1, true])
    }).pipe(Effect.scoped), { timeout: 120_000 })
})

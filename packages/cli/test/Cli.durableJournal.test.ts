/**
 * `condukt run --durable` against what else touches a run's journal: another process given the
 * same run id while the run is live (refused, naming the live one: ADR 0081's lease), two
 * processes resuming one id at the same moment (one runs it), a process killed with its lease
 * held (the run resumes once the lease lapses), and a journal with garbage written into it
 * (refused as corrupted, naming the record). Real CLI processes on real SQLite files and a real
 * Postgres; the processes are synchronised on the files their steps write, never on time.
 */
import { Processes } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { DatabaseSync } from "node:sqlite"
import { execIn } from "../../../test/support/exec.ts"
import * as EmbeddedPostgres from "../../cluster/test/support/embeddedPostgres.ts"
import * as Loopback from "../../providers/test/loopback.ts"
import { counts, endSleeper, env, FLAKY, runKilled, spawn, THREE } from "./durableRun.ts"
import { condukt } from "./notesRun.ts"

/** A refusal's times (when the live run started, when its lease lapses) as `<time>` and `<n>`. */
const unleased = (text: string) =>
  text.replace(/since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, "since <time>").replace(/lapses, in \d+ s/g, "lapses, in <n> s")

/** What a process given run `id` of `db` is told while process `pid` of this host runs it. */
const busy = (id: string, db: string, pid: number) =>
  `Durable run failed: run ${id} in ${db} is being run by another process (pid ${pid} on ${os.hostname()}, since <time>): ` +
  "wait for it to end, then resume it; if that process is gone (killed, its machine down), the run can be resumed once its lease lapses, in <n> s\n"

/**
 * THREE killed in step two on `db` (its lease held, then lapsed), resumed by two processes started
 * at the same moment: the first to end is refused, naming the other, which runs step two again
 * (and only it) once let through.
 */
const twoResumes = (dir: string, db: string) =>
  Effect.gen(function*() {
    const killed = yield* runKilled(dir, ["flow.hcl", "--durable", db, "--quiet"], env)
    const id = killed.runId
    assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 1, three: 0 })
    const args = ["run", "flow.hcl", "--durable", db, "--run-id", id, "--quiet"]
    const a = yield* spawn(dir, args, env)
    const b = yield* spawn(dir, args, env)
    // The one holding the run waits in step two until let through: the first to end is the other.
    const refused = yield* Effect.raceFirst(Effect.as(a.exited, a), Effect.as(b.exited, b))
    const running = refused === a ? b : a
    assert.deepStrictEqual(
      { ...(yield* refused.exited), stdout: refused.stdout(), stderr: unleased(refused.stderr()) },
      { code: 1, signal: null, stdout: "", stderr: busy(id, db, running.pid) }
    )
    yield* endSleeper(dir)
    assert.deepStrictEqual(
      { ...(yield* running.exited), stdout: running.stdout(), stderr: running.stderr() },
      { code: 0, signal: null, stdout: "one\ntwo\nthree\n", stderr: "" }
    )
    assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 2, three: 1 })
  })

describe("condukt run --durable: one process per run, and a journal that cannot be read", () => {
  it.live("a second process given a live run's id is refused, naming the first (pid, host, since when), and runs nothing; once the first ends, the id resumes", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "flow.hcl": THREE })
      const first = yield* spawn(dir, ["run", "flow.hcl", "--durable", "runs.db", "--quiet"], env)
      const sleeper = path.join(dir, "sleeper.pid")
      // Step two of the first process is running.
      yield* Processes.awaitPidFile(sleeper)
      const id = /^run ([0-9a-f]{16}) /.exec(first.stderr())![1]!

      const second = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "runs.db", "--run-id", id], env)
      assert.deepStrictEqual({ ...second, stderr: unleased(second.stderr) }, { stdout: "", stderr: busy(id, "runs.db", first.pid), exitCode: 1 })
      assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 1, three: 0 })

      // The first goes on and ends; then the id resumes: the run's recorded end, nothing run again.
      yield* endSleeper(dir)
      assert.deepStrictEqual(yield* first.exited, { code: 0, signal: null })
      assert.strictEqual(first.stdout(), "one\ntwo\nthree\n")
      const resumed = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "runs.db", "--run-id", id], env)
      assert.deepStrictEqual(resumed, { stdout: "one\ntwo\nthree\n", stderr: "", exitCode: 0 })
      assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 1, three: 1 })
    }).pipe(Effect.scoped), { timeout: 90_000 })

  it.live("a failed run being retried by one process is refused to a second one (RunBusy, naming the first), which runs nothing; the first completes the retry", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "flow.hcl": FLAKY })
      const failed = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "runs.db", "--quiet"], env)
      assert.strictEqual(failed.exitCode, 1)
      const id = /^run ([0-9a-f]{16}) /.exec(failed.stderr)![1]!
      fs.writeFileSync(path.join(dir, "marker"), "")
      const retrying = yield* spawn(dir, ["run", "flow.hcl", "--durable", "runs.db", "--run-id", id, "--quiet"], env)
      // Step two of the retry is running.
      yield* Processes.awaitPidFile(path.join(dir, "sleeper.pid"))

      const second = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "runs.db", "--run-id", id], env)
      assert.deepStrictEqual({ ...second, stderr: unleased(second.stderr) }, { stdout: "", stderr: busy(id, "runs.db", retrying.pid), exitCode: 1 })
      assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 2, three: 0 })

      yield* endSleeper(dir)
      assert.deepStrictEqual(
        { ...(yield* retrying.exited), stdout: retrying.stdout(), stderr: retrying.stderr() },
        { code: 0, signal: null, stdout: "one\ntwo\nthree\n", stderr: `run ${id} (durable, in runs.db): attempt 2, retrying its failed step two\n` }
      )
      assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 2, three: 1 })
    }).pipe(Effect.scoped), { timeout: 90_000 })

  it.live("killed with its lease held, a run resumes once the lease lapses (CONDUKT_DURABLE_LEASE); two processes resuming it at once: one runs it, the other is refused (SQLite)", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "flow.hcl": THREE })
      yield* twoResumes(dir, "runs.db")
    }).pipe(Effect.scoped), { timeout: 90_000 })

  it.live("the same on Postgres (a postgres:// URL)", () =>
    Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres.start
      const database = yield* postgres.createDatabase
      const dir = yield* Loopback.tempFiles({ "flow.hcl": THREE })
      yield* twoResumes(dir, `postgresql://postgres@localhost/${database}?host=${encodeURIComponent(postgres.socketDir)}`)
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("garbage in a journal (the recorded workflow, the inputs, a step's output, the run's start) is reported as a corrupted journal naming the record; nothing runs; the journal restored, the run resumes", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "flow.hcl": THREE })
      const id = (yield* runKilled(dir, ["flow.hcl", "--durable", "runs.db", "--quiet"], env)).runId
      fs.writeFileSync(path.join(dir, "resume"), "")
      const db = yield* Effect.acquireRelease(
        Effect.sync(() => new DatabaseSync(path.join(dir, "runs.db"))),
        (db) => Effect.sync(() => db.close())
      )
      const STEP_ONE = `(SELECT id FROM cluster_messages WHERE tag = 'activity' AND payload LIKE '%"name":"one"%')`
      const RUN_START = `(SELECT id FROM cluster_messages WHERE tag = 'run')`
      /** The run resumed with `garbage` in `column` of the row `where` picks, then the row as it was. */
      const withGarbage = (table: string, column: string, where: string, garbage: string) =>
        Effect.gen(function*() {
          const row = db.prepare(`SELECT ${column} AS value FROM ${table} WHERE ${where}`).get() as { value: string }
          db.prepare(`UPDATE ${table} SET ${column} = ? WHERE ${where}`).run(garbage)
          const resumed = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "runs.db", "--run-id", id], env)
          db.prepare(`UPDATE ${table} SET ${column} = ? WHERE ${where}`).run(row.value)
          return resumed
        })
      const corrupted = (what: string) => ({
        stdout: "",
        stderr: `Durable run failed: the journal of run ${id} in runs.db is corrupted: ${what}; ` +
          "this run cannot be resumed: start a new run (the other runs in runs.db are not affected)\n",
        exitCode: 1
      })
      assert.deepStrictEqual(
        yield* withGarbage("condukt_workflow_runs", "document", `id = '${id}'`, "{not json"),
        corrupted("the workflow recorded when it started (condukt_workflow_runs.document) is not a JSON object")
      )
      assert.deepStrictEqual(
        yield* withGarbage("condukt_workflow_runs", "inputs", `id = '${id}'`, "[1, 2]"),
        corrupted("the inputs recorded when it started (condukt_workflow_runs.inputs) are not a JSON object")
      )
      assert.deepStrictEqual(
        yield* withGarbage("cluster_replies", "payload", `request_id = ${STEP_ONE}`, "garbage{"),
        corrupted("the recorded output of step one (a row of cluster_replies) is not JSON")
      )
      assert.deepStrictEqual(
        yield* withGarbage("cluster_replies", "payload", `request_id = ${STEP_ONE}`, `{"_tag":"Success","value":"garbage"}`),
        corrupted("the recorded output of step one (a row of cluster_replies) does not hold a step's output or failure")
      )
      assert.deepStrictEqual(
        yield* withGarbage("cluster_messages", "payload", `id = ${RUN_START}`, "garbage"),
        corrupted("the record of the run's start (a row of cluster_messages) is not JSON")
      )
      assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 1, three: 0 })
      const resumed = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "runs.db", "--run-id", id, "--quiet"], env)
      assert.deepStrictEqual(resumed, { stdout: "one\ntwo\nthree\n", stderr: "", exitCode: 0 })
      assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 2, three: 1 })
    }).pipe(Effect.scoped), { timeout: 90_000 })

  it.live("CONDUKT_DURABLE_LEASE that is not a number of seconds (at least 1) is a usage error, exit 2, before anything runs", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "flow.hcl": THREE, "resume": "" })
      const refused = {
        stdout: "",
        stderr: "CONDUKT_DURABLE_LEASE is how long a durable run's lease lasts: a number of seconds, at least 1\n",
        exitCode: 2
      }
      for (const value of ["soon", "0.5"]) {
        const run = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "runs.db"], { ...env, CONDUKT_DURABLE_LEASE: value })
        assert.deepStrictEqual(run, refused)
      }
      assert.deepStrictEqual({ db: fs.existsSync(path.join(dir, "runs.db")), ...counts(dir, ["one"]) }, { db: false, one: 0 })
    }).pipe(Effect.scoped), { timeout: 60_000 })
})

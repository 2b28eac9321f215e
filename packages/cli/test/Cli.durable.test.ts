/**
 * `condukt run --durable`, as a user runs it: the real CLI as a child process, killed (SIGKILL)
 * while a step runs, then started again with the run id it printed. The steps' side effects are
 * counted in files; the killed process is synchronised on a file its step writes, never on time.
 */
import { Processes } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { execIn, root } from "../../../test/support/exec.ts"
import * as Loopback from "../../providers/test/loopback.ts"
import * as EmbeddedPostgres from "../../cluster/test/support/embeddedPostgres.ts"
import { serve } from "../../workflows/test/support.ts"
import { counts, env, FLAKY, FLAKY_FAILURE, hangingCmd, runKilled, THREE } from "./durableRun.ts"
import { condukt, untimed, untimedEvents } from "./notesRun.ts"

/**
 * THREE stopped in step two, resumed by its id on `db` (its step two let through): the steps done
 * before are not run again, step two runs again, and the output is the whole run's.
 */
const resumeThree = (dir: string, db: string, id: string) =>
  Effect.gen(function*() {
    fs.writeFileSync(path.join(dir, "resume"), "")
    const resumed = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", db, "--run-id", id], env)
    assert.deepStrictEqual({ ...resumed, stderr: untimed(resumed.stderr) }, {
      stdout: "one\ntwo\nthree\n",
      stderr: [
        "three: 3 steps pending (one, two, three)",
        "  one done before the restart, not run again",
        "  two running again: it started before the restart and did not finish",
        "  two done in <t>",
        "  three running",
        "  three done in <t>",
        "finished in <t>",
        ""
      ].join("\n"),
      exitCode: 0
    })
    assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 2, three: 1 })
    return resumed
  })

/**
 * FLAKY run on `db` until its step two fails; the cause fixed (`marker`), the same id given again
 * retries it: step one not run again, steps two and three run; given a third time, it runs nothing.
 */
const retryFlaky = (dir: string, db: string) =>
  Effect.gen(function*() {
    const failed = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", db], env)
    const id = /^run ([0-9a-f]{16}) /.exec(failed.stderr)?.[1]
    assert.isDefined(id, failed.stderr)
    assert.deepStrictEqual({ ...failed, stderr: untimed(failed.stderr) }, {
      stdout: "",
      stderr: [
        `run ${id} (durable, in ${db}; resume it with --run-id ${id})`,
        "flaky: 3 steps pending (one, two, three)",
        "  one running",
        "  one done in <t>",
        "  two running",
        `  two failed after <t>: ${FLAKY_FAILURE}`,
        "failed in <t>",
        `Workflow run failed: ${FLAKY_FAILURE}`,
        ""
      ].join("\n"),
      exitCode: 1
    })
    assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 1, three: 0 })

    fs.writeFileSync(path.join(dir, "marker"), "")
    fs.writeFileSync(path.join(dir, "resume"), "")
    const retried = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", db, "--run-id", id!], env)
    assert.deepStrictEqual({ ...retried, stderr: untimed(retried.stderr) }, {
      stdout: "one\ntwo\nthree\n",
      stderr: [
        `run ${id} (durable, in ${db}): attempt 2, retrying its failed step two`,
        "flaky: 3 steps pending (one, two, three)",
        "  one done before the restart, not run again",
        "  two running",
        "  two done in <t>",
        "  three running",
        "  three done in <t>",
        "finished in <t>",
        ""
      ].join("\n"),
      exitCode: 0
    })
    assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 2, three: 1 })

    const third = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", db, "--run-id", id!], env)
    assert.deepStrictEqual(third, { stdout: "one\ntwo\nthree\n", stderr: "", exitCode: 0 })
    assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 2, three: 1 })
  })

describe("condukt run --durable", () => {
  it.live("a run killed in step 2 of 3 resumes by its id: step 1 not run again, step 2 run again (it had not finished), step 3 run, the output an uninterrupted run's", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "flow.hcl": THREE })
      const killed = yield* runKilled(dir, ["flow.hcl", "--durable", "runs.db"], env)
      const id = killed.runId
      assert.strictEqual(
        untimed(killed.stderr),
        [
          `run ${id} (durable, in runs.db; resume it with --run-id ${id})`,
          "three: 3 steps pending (one, two, three)",
          "  one running",
          "  one done in <t>",
          "  two running",
          ""
        ].join("\n")
      )
      assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 1, three: 0 })

      const resumed = yield* resumeThree(dir, "runs.db", id)

      // The same workflow never interrupted, in a directory of its own: the same output.
      const whole = yield* Loopback.tempFiles({ "flow.hcl": THREE, "resume": "" })
      const uninterrupted = yield* execIn(whole, condukt, ["run", "flow.hcl", "--durable", "runs.db", "--quiet"], env)
      assert.strictEqual(uninterrupted.exitCode, 0)
      assert.strictEqual(uninterrupted.stdout, resumed.stdout)
      assert.deepStrictEqual(counts(whole, ["one", "two", "three"]), { one: 1, two: 1, three: 1 })
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("an http step and an agent step are journaled too: resumed with --json, neither asks its server again, and each event says whether it was resumed", () =>
    Effect.gen(function*() {
      let pageRequests = 0
      const page = yield* serve((_, response) => {
        pageRequests++
        response.writeHead(200, { "content-type": "text/plain" }).end("the page")
      })
      const model = yield* Loopback.start([
        Loopback.sse(Loopback.fixture("openai-tools.sse")),
        Loopback.sse(Loopback.fixture("openai-final.sse"))
      ])
      const dir = yield* Loopback.tempFiles({
        "a.txt": "alpha\n",
        "b.txt": "beta\n",
        "mixed.hcl": `workflow "mixed" {
  runtime {
    model = "openai:gpt-4.1-mini"
  }
  http "fetch" {
    method = "GET"
    url = "${page.url}"
  }
  agent "notes" {
    needs = ["fetch"]
    tools = ["Read"]
    input = "What do a.txt and b.txt say?"
  }
${hangingCmd("last", ["notes"])}  output = { page = task.fetch.body, notes = task.notes.output, last = task.last.stdout }
}
`
      })
      const withModel = { ...env, OPENAI_API_KEY: "sk-loopback-test", OPENAI_BASE_URL: model.url }
      const killed = yield* runKilled(dir, ["mixed.hcl", "--durable", "runs.db", "--json"], withModel)
      assert.deepStrictEqual({ pageRequests, modelRequests: model.requests.length }, { pageRequests: 1, modelRequests: 2 })

      fs.writeFileSync(path.join(dir, "resume"), "")
      const resumed = yield* execIn(dir, condukt, ["run", "mixed.hcl", "--durable", "runs.db", "--run-id", killed.runId, "--json"], withModel)
      assert.deepStrictEqual({ stderr: resumed.stderr, exitCode: resumed.exitCode }, { stderr: "", exitCode: 0 })
      assert.deepStrictEqual(untimedEvents(resumed.stdout), [
        { _tag: "RunStarted", workflow: "mixed", steps: ["fetch", "notes", "last"] },
        { _tag: "StepFinished", step: "fetch", resumed: true },
        { _tag: "StepFinished", step: "notes", resumed: true },
        { _tag: "StepStarted", step: "last", restarted: true },
        { _tag: "StepFinished", step: "last", resumed: false },
        { _tag: "RunFinished", ok: true },
        { _tag: "Output", output: { page: "the page", notes: "a.txt says alpha; b.txt says beta.", last: "last\n" } }
      ])
      assert.deepStrictEqual({ pageRequests, modelRequests: model.requests.length }, { pageRequests: 1, modelRequests: 2 })
      assert.deepStrictEqual(counts(dir, ["last"]), { last: 2 })
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("an unknown run id, a file that is not a database and a changed workflow under the same id: one line each, exit 1 (--run-id alone: exit 2)", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "flow.hcl": THREE, "resume": "", "notes.txt": `${"not a database; ".repeat(20)}\n` })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "runs.db", "--run-id", "f00dfeedf00dfeed"], env), {
        stdout: "",
        stderr: "Durable run failed: no run f00dfeedf00dfeed in runs.db: a durable run prints its id when it starts\n",
        exitCode: 1
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "notes.txt", "--run-id", "f00dfeedf00dfeed"], env), {
        stdout: "",
        stderr: "Durable run failed: cannot open the database notes.txt: file is not a database\n",
        exitCode: 1
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "flow.hcl", "--run-id", "f00dfeedf00dfeed"], env), {
        stdout: "",
        stderr: "--run-id needs --durable: the database the run is kept in\n",
        exitCode: 2
      })
      const first = yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "runs.db", "--quiet"], env)
      assert.strictEqual(first.exitCode, 0)
      const id = /^run ([0-9a-f]{16}) /.exec(first.stderr)![1]!
      fs.writeFileSync(path.join(dir, "flow.hcl"), THREE.replace(`echo three"]`, `echo THREE"]`))
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "flow.hcl", "--durable", "runs.db", "--run-id", id], env), {
        stdout: "",
        stderr:
          `Durable run failed: run ${id} in runs.db was started from another version of flow.hcl: resume it with the workflow it started with, or start a new run\n`,
        exitCode: 1
      })
      assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 1, three: 1 })
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("SIGINT during a durable run stops it at once, its step's processes with it; the run resumes by its id", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "flow.hcl": THREE })
      const node = path.join(root, "node_modules/node/bin/node")
      const bin = path.join(root, "packages/cli/src/bin.ts")
      const cli = child.spawn(node, [bin, "run", "flow.hcl", "--durable", "runs.db", "--quiet"], {
        cwd: dir,
        env,
        stdio: ["ignore", "ignore", "pipe"],
        detached: true
      })
      let stderr = ""
      cli.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      const exited = Effect.callback<number | null>((resume) => {
        cli.once("close", (code) => resume(Effect.succeed(code)))
      })
      const sleeper = yield* Processes.awaitPidFile(path.join(dir, "sleeper.pid"))
      process.kill(-cli.pid!, "SIGINT")
      assert.strictEqual(yield* exited, 130)
      yield* Processes.awaitDeath(sleeper)
      assert.isTrue(yield* Processes.isDead(sleeper))
      const id = /^run ([0-9a-f]{16}) /.exec(stderr)![1]!
      yield* resumeThree(dir, "runs.db", id)
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("a run that failed in step 2 of 3, given again by its id once the cause is fixed, is retried: step 1 not run again, steps 2 and 3 run; a third time, nothing runs", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "flow.hcl": FLAKY })
      yield* retryFlaky(dir, "runs.db")
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("on Postgres (a postgres:// URL): a failed run is retried from its failed step as on SQLite", () =>
    Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres.start
      const database = yield* postgres.createDatabase
      const dir = yield* Loopback.tempFiles({ "flow.hcl": FLAKY })
      yield* retryFlaky(dir, `postgresql://postgres@localhost/${database}?host=${encodeURIComponent(postgres.socketDir)}`)
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("on Postgres (a postgres:// URL): a run killed in step 2 resumes by its id as on SQLite", () =>
    Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres.start
      const database = yield* postgres.createDatabase
      const url = `postgresql://postgres@localhost/${database}?host=${encodeURIComponent(postgres.socketDir)}`
      const dir = yield* Loopback.tempFiles({ "flow.hcl": THREE })
      const killed = yield* runKilled(dir, ["flow.hcl", "--durable", url, "--quiet"], env)
      assert.strictEqual(killed.stderr, `run ${killed.runId} (durable, in ${url}; resume it with --run-id ${killed.runId})\n`)
      yield* resumeThree(dir, url, killed.runId)
    }).pipe(Effect.scoped), { timeout: 120_000 })
})

/**
 * A workflow's runs as `condukt serve --workflows` lists them (`GET /workflows/{name}/runs`, the
 * CLI's `WorkflowRuns`): the real CLI as a child process on a free loopback port, spoken to with
 * fetch. In memory, and with `--durable` across a restart (the finished runs read back from the
 * database). It also serves the Studio, and says where on its second line.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Loopback from "../../providers/test/loopback.ts"
import { env, spawn, type Started } from "../../cli/test/durableRun.ts"
import { request } from "./fixtures/sseClient.ts"

const ALICE = "tok-alice-0123456789abcdef"
const BOB = "tok-bob-0123456789abcdef"
const tokens = ["--token", `${ALICE}=alice`, "--token", `${BOB}=bob`]

const ECHO = `workflow "echo" {
  input "word" {
    type = "string"
  }
  cmd "say" {
    argv = ["echo", "\${input.word}"]
  }
  output = "\${task.say.stdout}"
}
`

/** The line the server prints on stdout once it listens (its URL), and its stderr then. */
const linesOf = (started: Started) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 600; attempt++) {
      const lines = started.stdout().split("\n")
      if (lines.length > 1) return [lines[0]!, started.stderr()] as const
      yield* Effect.sleep(50)
    }
    return yield* Effect.die(new Error(`condukt serve printed no URL: ${started.stderr()}`))
  })

const serve = (dir: string, args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const started = yield* spawn(dir, ["serve", "--port", "0", "--workflows", "wf", ...args, ...tokens], env)
    const [url, said] = yield* linesOf(started)
    return { started, url, said }
  })

/** A run of `echo` started with `word`, polled until it ended: its id and when it started. */
const run = (url: string, token: string, word: string) =>
  Effect.gen(function*() {
    const start = yield* request(url, "/workflows/echo/runs", { token, body: { inputs: { word } } })
    assert.strictEqual(start.status, 201)
    for (let attempt = 0; attempt < 1200; attempt++) {
      const read = yield* request(url, start.body.location, { token })
      if (read.body.outcome !== "running") {
        assert.strictEqual(typeof read.body.startedAt, "number")
        return { runId: start.body.runId as string, startedAt: read.body.startedAt as number }
      }
      yield* Effect.sleep(50)
    }
    return yield* Effect.die(new Error(`the run ${start.body.runId} never ended`))
  })

const finished = (run: { readonly runId: string; readonly startedAt: number }, word: string, durable: boolean) => ({
  runId: run.runId,
  workflow: "echo",
  inputs: { word },
  startedAt: run.startedAt,
  outcome: "succeeded",
  steps: { say: { state: "finished", output: { ok: true, stdout: `${word}\n`, exit_code: 0 } } },
  output: `${word}\n`,
  durable
})

const setUp = Effect.map(Loopback.tempFiles({}), (dir) => {
  fs.mkdirSync(path.join(dir, "wf"))
  fs.writeFileSync(path.join(dir, "wf", "echo.hcl"), ECHO)
  return dir
})

describe("condukt serve's workflow runs", () => {
  it.live("lists the principal's runs of a workflow newest first, at most limit, and serves the Studio it names", () =>
    Effect.gen(function*() {
      const dir = yield* setUp
      const { said, url } = yield* serve(dir, [])
      assert.strictEqual(said, `serving workflow "echo" at ${url}, the Studio at ${url}/studio (Ctrl-C stops it)\n`)
      const page = yield* Effect.promise(() => fetch(`${url}/studio`))
      assert.deepStrictEqual([page.status, page.headers.get("content-type")], [200, "text/html; charset=utf-8"])

      const a1 = yield* run(url, ALICE, "one")
      const b1 = yield* run(url, BOB, "bob")
      const a2 = yield* run(url, ALICE, "two")
      assert.deepStrictEqual(yield* request(url, "/workflows/echo/runs", { token: ALICE }), { status: 200, body: { runs: [finished(a2, "two", false), finished(a1, "one", false)] } })
      assert.deepStrictEqual(yield* request(url, "/workflows/echo/runs?limit=1", { token: ALICE }), { status: 200, body: { runs: [finished(a2, "two", false)] } })
      assert.deepStrictEqual(yield* request(url, "/workflows/echo/runs", { token: BOB }), { status: 200, body: { runs: [finished(b1, "bob", false)] } })
      const other = yield* request(url, "/workflows/other/runs", { token: ALICE })
      assert.deepStrictEqual([other.status, other.body._tag], [404, "NotFound"])
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("--durable: a server started again on the database lists the runs the one before finished, from the database", () =>
    Effect.gen(function*() {
      const dir = yield* setUp
      const first = yield* serve(dir, ["--durable", "runs.db"])
      const a1 = yield* run(first.url, ALICE, "one")
      const a2 = yield* run(first.url, ALICE, "two")
      const b1 = yield* run(first.url, BOB, "bob")
      process.kill(first.started.pid, "SIGKILL")
      yield* first.started.exited

      const second = yield* serve(dir, ["--durable", "runs.db"])
      assert.deepStrictEqual(yield* request(second.url, "/workflows/echo/runs", { token: ALICE }), { status: 200, body: { runs: [finished(a2, "two", true), finished(a1, "one", true)] } })
      assert.deepStrictEqual(yield* request(second.url, "/workflows/echo/runs", { token: BOB }), { status: 200, body: { runs: [finished(b1, "bob", true)] } })
      // A run started by this server is listed as it is now, before the ones it read back.
      const a3 = yield* run(second.url, ALICE, "three")
      assert.deepStrictEqual(
        yield* request(second.url, "/workflows/echo/runs?limit=2", { token: ALICE }),
        { status: 200, body: { runs: [finished(a3, "three", true), finished(a2, "two", true)] } }
      )
    }).pipe(Effect.scoped), { timeout: 60_000 })
})

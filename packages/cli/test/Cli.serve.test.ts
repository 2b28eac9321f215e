/**
 * `condukt serve`, as a user runs it: the real CLI as a child process on a free loopback port,
 * spoken to with fetch. A module's agents (scripted by the module's own `layer`: `TestModel`)
 * run sessions whose events are read over SSE; a directory's workflows run as runs polled to
 * their end; with `--durable` the server is killed (SIGKILL) mid-run and started again on the
 * same database, and the run finishes without running its finished step again. Bad input is one
 * sentence and exit 2. The processes are synchronised on what they print and the files their
 * steps write, never on time.
 */
import { Processes } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { execIn, root } from "../../../test/support/exec.ts"
import * as Loopback from "../../providers/test/loopback.ts"
import { counts, env, KILLED_LEASE, spawn, type Started, THREE } from "./durableRun.ts"
import { condukt } from "./notesRun.ts"

const ALICE = "tok-alice-0123456789abcdef"
const BOB = "tok-bob-0123456789abcdef"
const tokens = ["--token", `${ALICE}=alice`, "--token", `${BOB}=bob`]

/** The module served: two agents (a named export, and one in an `agents` record), scripted by its `layer`. */
const MODULE = `import * as Agent from ${JSON.stringify(path.join(root, "packages/core/src/Agent.ts"))}
import { TestModel } from ${JSON.stringify(path.join(root, "packages/testing/src/index.ts"))}

export const helper = Agent.make({ name: "helper", model: "test:scripted" })
export const agents = { reviewer: Agent.make({ name: "reviewer", model: "test:scripted" }) }
export const layer = TestModel.layer([TestModel.text("Hello from the module.")])
`

/** A workflow with inputs (one defaulted), a step each input reaches, and a step \`when\` skips. */
const GREET = `workflow "greet" {
  input "name" {
    type = "string"
  }
  input "times" {
    type    = "integer"
    default = 1
  }
  cmd "hello" {
    argv = ["echo", "Hello, \${input.name} x\${input.times}"]
  }
  cmd "loud" {
    needs = ["hello"]
    when  = input.times > 1
    argv  = ["echo", "HELLO"]
  }
  cmd "bye" {
    needs = ["hello"]
    argv  = ["echo", "bye \${input.name}"]
  }
  output = "\${task.hello.stdout}\${task.bye.stdout}"
}
`

/** The URL the server prints on stdout once it listens (it fails if the process ends first). */
const urlOf = (started: Started) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 600; attempt++) {
      const line = started.stdout().split("\n")[0]
      if (line !== undefined && line.startsWith("http://") && started.stdout().includes("\n")) return line
      yield* Effect.sleep(50)
    }
    return yield* Effect.die(new Error(`condukt serve printed no URL: ${started.stderr()}`))
  })

/** `condukt serve <args>` in `dir`, once it listens: its process and URL. */
const serve = (dir: string, args: ReadonlyArray<string>, processEnv: Record<string, string> = env) =>
  Effect.gen(function*() {
    const started = yield* spawn(dir, ["serve", "--port", "0", ...args], processEnv)
    return { started, url: yield* urlOf(started) }
  })

const call = (url: string, route: string, token: string | undefined, body?: unknown) =>
  Effect.promise(async () => {
    const headers: Record<string, string> = {}
    if (token !== undefined) headers.authorization = `Bearer ${token}`
    if (body !== undefined) headers["content-type"] = "application/json"
    const response = await fetch(url + route, { method: body === undefined ? "GET" : "POST", headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) as any }
  })

/** The run polled until it is no longer running. */
const finished = (url: string, route: string, token: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 1200; attempt++) {
      const answer = yield* call(url, route, token)
      if (answer.status !== 200 || answer.body.outcome !== "running") return answer
      yield* Effect.sleep(50)
    }
    return yield* Effect.die(new Error(`the run ${route} never ended`))
  })

/** The SSE events of `route` up to the first `AgentEnd`: their ids and tags. */
const eventsUntilEnd = (url: string, route: string, token: string) =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const response = await fetch(url + route, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal })
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    const got: Array<{ id: number; event: string; text?: string }> = []
    let buffer = ""
    while (got.at(-1)?.event !== "AgentEnd") {
      const { done, value } = await reader.read()
      if (done) break
      buffer += value
      let end: number
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const fields = Object.fromEntries(frame.split("\n").map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]))
        if (fields.id === undefined) continue
        const data = JSON.parse(fields.data!)
        got.push({ id: Number(fields.id), event: fields.event!, ...(data._tag === "TextDelta" ? { text: data.text } : {}) })
      }
    }
    controller.abort()
    return { status: response.status, events: got }
  })

/** `dir/wf` holding `files`. */
const workflowsDir = (dir: string, files: Record<string, string>) => {
  fs.mkdirSync(path.join(dir, "wf"))
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, "wf", name), text)
}

describe("condukt serve", () => {
  it.live("serves the agents a module exports: a session started by agent name, a run waited for, its events read over SSE; another principal gets 404", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "agents.ts": MODULE })
      const { started, url } = yield* serve(dir, ["agents.ts", ...tokens])
      assert.strictEqual(started.stderr(), `serving agents "helper", "reviewer" at ${url}, the Studio at ${url}/studio (Ctrl-C stops it)\n`)

      const session = yield* call(url, "/sessions", ALICE, { agent: "reviewer", id: "s1" })
      assert.deepStrictEqual({ status: session.status, id: session.body.id, principal: session.body.principal, agent: session.body.agent }, {
        status: 201,
        id: "s1",
        principal: "alice",
        agent: "reviewer"
      })
      const run = yield* call(url, "/sessions/s1/runs", ALICE, { prompt: "Hi" })
      const { runId, ...outcome } = run.body
      assert.isString(runId)
      assert.deepStrictEqual({ status: run.status, ...outcome }, { status: 200, outcome: "completed", text: "Hello from the module.", turns: 1, lastEventId: 7 })

      const events = yield* eventsUntilEnd(url, "/sessions/s1/events?after=0", ALICE)
      assert.deepStrictEqual(events, {
        status: 200,
        events: [
          { id: 1, event: "AgentStart" },
          { id: 2, event: "TurnStart" },
          { id: 3, event: "TextDelta", text: "Hello fr" },
          { id: 4, event: "TextDelta", text: "om the m" },
          { id: 5, event: "TextDelta", text: "odule." },
          { id: 6, event: "TurnEnd" },
          { id: 7, event: "AgentEnd" }
        ]
      })
      assert.deepStrictEqual(yield* call(url, "/sessions/s1", BOB), { status: 404, body: { _tag: "NotFound", message: "no session \"s1\" here (start one with POST /sessions)" } })
      assert.deepStrictEqual(yield* call(url, "/workflows", ALICE), {
        status: 404,
        body: { _tag: "NotFound", message: "no workflows are served here (condukt serve --workflows <dir> serves a directory's)" }
      })
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("serves a directory's workflows as runs (a module's agents beside): listed with their inputs, a run started with inputs and polled to its end with each step's state and output; bad inputs 400, another principal 404", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "agents.ts": MODULE })
      workflowsDir(dir, { "greet.hcl": GREET, "three.hcl": THREE })
      // The module's agents beside, and the tokens from the environment this time.
      const { started, url } = yield* serve(dir, ["agents.ts", "--workflows", "wf"], { ...env, CONDUKT_TOKENS: `${ALICE}=alice, ${BOB}=bob` })
      assert.strictEqual(started.stderr(), `serving agents "helper", "reviewer" and workflows "greet", "three" at ${url}, the Studio at ${url}/studio (Ctrl-C stops it)\n`)

      assert.deepStrictEqual(yield* call(url, "/workflows", ALICE), {
        status: 200,
        body: {
          workflows: [
            { name: "greet", inputs: { name: { type: "string" }, times: { type: "integer", default: 1 } }, steps: ["bye", "hello", "loud"] },
            { name: "three", inputs: {}, steps: ["one", "three", "two"] }
          ]
        }
      })
      const asked = Date.now()
      const start = yield* call(url, "/workflows/greet/runs", ALICE, { inputs: { name: "Ada" } })
      const runId = start.body.runId
      assert.deepStrictEqual(start, { status: 201, body: { runId, workflow: "greet", location: `/workflows/greet/runs/${runId}` } })

      const ended = yield* finished(url, start.body.location, ALICE)
      const startedAt = ended.body.startedAt
      assert.isTrue(startedAt >= asked && startedAt <= Date.now(), `started at ${startedAt}, asked at ${asked}`)
      assert.deepStrictEqual(ended, {
        status: 200,
        body: {
          runId,
          workflow: "greet",
          inputs: { name: "Ada" },
          startedAt,
          outcome: "succeeded",
          steps: {
            bye: { state: "finished", output: { ok: true, stdout: "bye Ada\n", exit_code: 0 } },
            hello: { state: "finished", output: { ok: true, stdout: "Hello, Ada x1\n", exit_code: 0 } },
            loud: { state: "skipped", why: "when is false" }
          },
          output: "Hello, Ada x1\nbye Ada\n",
          durable: false
        }
      })
      const notFound = { status: 404, body: { _tag: "NotFound", message: `no run "${runId}" here` } }
      assert.deepStrictEqual(yield* call(url, start.body.location, BOB), notFound)
      assert.deepStrictEqual(yield* call(url, `/workflows/three/runs/${runId}`, ALICE), notFound)
      assert.deepStrictEqual(yield* call(url, "/workflows/greet/runs", ALICE, { inputs: { name: 42 } }), {
        status: 400,
        body: { _tag: "BadRequest", message: "inputs do not match their declarations: name: got 42, expected string" }
      })
      assert.deepStrictEqual(yield* call(url, "/workflows/greet/runs", ALICE, { inputs: { nam: "Ada" } }), {
        status: 400,
        body: { _tag: "BadRequest", message: "unknown input nam; this workflow takes name, times" }
      })
      assert.deepStrictEqual(yield* call(url, "/workflows/nope/runs", ALICE, {}), {
        status: 404,
        body: { _tag: "NotFound", message: "no workflow \"nope\" is served here (GET /workflows lists them)" }
      })
      assert.strictEqual((yield* call(url, "/workflows", undefined)).status, 401)
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("--durable: the server killed (SIGKILL) in step 2 of 3 and started again on the same database finishes the run: step 1 not run again, step 2 again (it had not finished), step 3", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({})
      workflowsDir(dir, { "three.hcl": THREE })
      const leased = { ...env, CONDUKT_DURABLE_LEASE: String(KILLED_LEASE) }
      // --no-studio: the line names no Studio, and none is served.
      const first = yield* serve(dir, ["--workflows", "wf", "--durable", "runs.db", "--no-studio", ...tokens], leased)
      assert.strictEqual(first.started.stderr(), `serving workflow "three" (durable, in runs.db) at ${first.url} (Ctrl-C stops it)\n`)
      assert.strictEqual((yield* Effect.promise(() => fetch(`${first.url}/studio`))).status, 404)
      const start = yield* call(first.url, "/workflows/three/runs", ALICE, {})
      assert.strictEqual(start.status, 201)
      const location: string = start.body.location

      const sleeper = yield* Processes.awaitPidFile(path.join(dir, "sleeper.pid"))
      const midway = yield* call(first.url, location, ALICE)
      assert.deepStrictEqual(midway.body.steps, { one: { state: "finished" }, three: { state: "pending" }, two: { state: "running" } })
      const startedAt = midway.body.startedAt
      assert.strictEqual(typeof startedAt, "number")
      process.kill(first.started.pid, "SIGKILL")
      assert.strictEqual((yield* first.started.exited).signal, "SIGKILL")
      process.kill(sleeper, "SIGKILL")
      yield* Processes.awaitDeath(sleeper)
      fs.rmSync(path.join(dir, "sleeper.pid"))
      fs.writeFileSync(path.join(dir, "resume"), "")

      const second = yield* serve(dir, ["--workflows", "wf", "--durable", "runs.db", ...tokens], leased)
      assert.deepStrictEqual(yield* finished(second.url, location, ALICE), {
        status: 200,
        body: {
          runId: start.body.runId,
          workflow: "three",
          inputs: {},
          // When the first server started it: kept across the kill.
          startedAt,
          outcome: "succeeded",
          steps: {
            one: { state: "finished", output: { ok: true, stdout: "one\n", exit_code: 0 }, resumed: true },
            three: { state: "finished", output: { ok: true, stdout: "three\n", exit_code: 0 } },
            two: { state: "finished", output: { ok: true, stdout: "two\n", exit_code: 0 }, restarted: true }
          },
          output: "one\ntwo\nthree\n",
          durable: true
        }
      })
      assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 2, three: 1 })
      assert.strictEqual((yield* call(second.url, location, BOB)).status, 404)
    }).pipe(Effect.scoped), { timeout: 90_000 })

  it.live("--durable: the server stopped with SIGTERM in step 2 stops the step's process and leaves the run to the next server, which finishes it", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({})
      workflowsDir(dir, { "three.hcl": THREE })
      const leased = { ...env, CONDUKT_DURABLE_LEASE: String(KILLED_LEASE) }
      const first = yield* serve(dir, ["--workflows", "wf", "--durable", "runs.db", ...tokens], leased)
      const start = yield* call(first.url, "/workflows/three/runs", ALICE, {})
      const location: string = start.body.location
      const sleeper = yield* Processes.awaitPidFile(path.join(dir, "sleeper.pid"))
      process.kill(first.started.pid, "SIGTERM")
      assert.deepStrictEqual(yield* first.started.exited, { code: 130, signal: null })
      yield* Processes.awaitDeath(sleeper)
      fs.rmSync(path.join(dir, "sleeper.pid"))
      fs.writeFileSync(path.join(dir, "resume"), "")

      const second = yield* serve(dir, ["--workflows", "wf", "--durable", "runs.db", ...tokens], leased)
      const answer = yield* finished(second.url, location, ALICE)
      assert.deepStrictEqual({ outcome: answer.body.outcome, output: answer.body.output }, { outcome: "succeeded", output: "one\ntwo\nthree\n" })
      assert.deepStrictEqual(counts(dir, ["one", "two", "three"]), { one: 1, two: 2, three: 1 })
    }).pipe(Effect.scoped), { timeout: 90_000 })

  it.live("refuses bad input with one sentence and exit 2: nothing to serve, no token, a short token, a missing module, a module exporting no agent, a workflow that does not parse, a port in use", () =>
    Effect.gen(function*() {
      const dir = yield* Loopback.tempFiles({ "empty.ts": "export const nothing = 1\n", "agents.ts": MODULE })
      workflowsDir(dir, { "broken.hcl": "workflow \"broken\" {\n  cmd \"a\" {\n" })
      const busy = yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<net.Server>((resolve) => { const server = net.createServer(); server.listen(0, "127.0.0.1", () => resolve(server)) })),
        (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
      const port = (busy.address() as net.AddressInfo).port
      const refused = (args: ReadonlyArray<string>) => Effect.map(execIn(dir, condukt, ["serve", ...args], env), ({ exitCode, stderr, stdout }) => ({ exitCode, stdout, stderr: stderr.split("\n")[0] }))
      const answers = {
        nothing: yield* refused(tokens),
        noToken: yield* refused(["agents.ts"]),
        shortToken: yield* refused(["agents.ts", "--token", "short=alice"]),
        missing: yield* refused(["missing.ts", ...tokens]),
        noAgent: yield* refused(["empty.ts", ...tokens]),
        broken: yield* refused(["--workflows", "wf", ...tokens]),
        portInUse: yield* refused(["agents.ts", "--port", String(port), ...tokens])
      }
      const sentence = (stderr: string) => ({ exitCode: 2, stdout: "", stderr })
      assert.deepStrictEqual(answers, {
        nothing: sentence("condukt serve needs a module whose agents it serves, or --workflows <dir>, or both"),
        noToken: sentence(
          "condukt serve needs at least one --token <token>=<principal> (or CONDUKT_TOKENS=<token>=<principal>,…): no request is served without one"
        ),
        shortToken: sentence("a token must have at least 16 characters (the one for alice has 5)"),
        missing: sentence("cannot serve missing.ts: no such file"),
        noAgent: sentence("cannot serve empty.ts: it exports no agent (export each Agent.make(...), or `agents`: an array or a record of them)"),
        broken: sentence(
          "check failed: wf/broken.hcl:2:11: Unclosed configuration block: There is no closing brace for this block before the end of the file. " +
            "This may be caused by incorrect brace nesting elsewhere in this file."
        ),
        portInUse: sentence(`cannot serve on 127.0.0.1:${port}: listen EADDRINUSE: address already in use 127.0.0.1:${port}`)
      })
    }).pipe(Effect.scoped), { timeout: 60_000 })
})

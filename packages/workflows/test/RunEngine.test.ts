import { Condukt } from "@condukt/node"
import { Processes, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Workflow, WorkflowEvent } from "../src/index.ts"
import { endpoint } from "./support.ts"

const run = (source: string, options: Parameters<typeof Workflow.run>[1] = {}) =>
  Effect.flatMap(Workflow.parse(source, "test.hcl"), (document) => Workflow.run(document, options))

const failure = (source: string, options: Parameters<typeof Workflow.run>[1] = {}) =>
  Effect.map(Effect.flip(run(source, options)), (error) => error.message)

const GREET = `
workflow "greet" {
  input "name" {
    type = "string"
    description = "Who to greet"
  }
  input "times" {
    type = "integer"
    default = 1
  }
  cmd "hello" {
    argv = ["echo", "Hello, \${input.name} x\${input.times}"]
  }
  output = { text = task.hello.stdout, ok = task.hello.ok }
}
`

const CHECKS = `
workflow "checks" {
  cmd "lint" {
    argv = ["sh", "-c", "exit 0"]
  }
  cmd "test" {
    argv = ["sh", "-c", "echo failing; exit 3"]
  }
  cmd "package" {
    needs = ["lint", "test"]
    argv = ["echo", "lint=\${task.lint.ok} test=\${task.test.exit_code}"]
  }
  output = task.package.stdout
}
`

describe("RunEngine", () => {
  it.live("runs a workflow: defaults filled, template interpolated, types kept in the output", () =>
    Effect.gen(function*() {
      const result = yield* run(GREET, { inputs: { name: "Ada" } })
      assert.deepStrictEqual(result.output, { text: "Hello, Ada x1\n", ok: true })
      const five = yield* run(GREET, { inputs: { name: "Ada", times: 5 } })
      assert.deepStrictEqual(five.output, { text: "Hello, Ada x5\n", ok: true })
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("refuses inputs that do not match their declarations", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* failure(GREET, { inputs: {} }), "missing required input name")
      assert.strictEqual(yield* failure(GREET, { inputs: { name: "Ada", extra: 1 } }), "unknown input extra; this workflow takes name, times")
      assert.strictEqual(yield* failure(GREET, { inputs: { name: 3 } }), "inputs do not match their declarations: name: got 3, expected string")
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("a non-zero exit is data and the run goes on", () =>
    Effect.gen(function*() {
      const result = yield* run(CHECKS)
      assert.strictEqual(result.output, "lint=true test=3\n")
      assert.deepStrictEqual(result.steps["test"], { ok: false, stdout: "failing\n", exit_code: 3 })
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("a cycle and an unknown dependency fail before any step runs", () =>
    Effect.gen(function*() {
      const cycle = CHECKS.replace(`argv = ["sh", "-c", "exit 0"]`, `needs = ["package"]\n    argv = ["echo", task.package.stdout]`)
      assert.strictEqual(yield* failure(cycle), "steps lint, package depend on each other in a cycle; remove one of the dependencies")
      const unknown = CHECKS.replace(`needs = ["lint", "test"]`, `needs = ["lint", "test", "docs"]`)
      assert.strictEqual(yield* failure(unknown), "step package: depends on docs, which is not a step of this workflow; fix the name or add the step")
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("when false skips a step and cascades to its dependents; member access on a skipped slot is null", () =>
    Effect.gen(function*() {
      const source = `
workflow "deploy" {
  input "environment" {
    type = "string"
    enum = ["staging", "production"]
  }
  cmd "version" {
    argv = ["echo", "1.2.3"]
  }
  cmd "deploy" {
    needs = ["version"]
    when = input.environment == "production"
    argv = ["echo", "deploying", task.version.stdout]
  }
  cmd "notify" {
    needs = ["deploy"]
    argv = ["echo", "done \${task.deploy.stdout}"]
  }
  output = { deployed = task.deploy.ok, version = task.version.stdout }
}`
      const staging = yield* run(source, { inputs: { environment: "staging" } })
      assert.deepStrictEqual(staging.output, { deployed: null, version: "1.2.3\n" })
      assert.deepStrictEqual(staging.skipped, ["deploy", "notify"])
      const production = yield* run(source, { inputs: { environment: "production" } })
      assert.deepStrictEqual(production.output, { deployed: true, version: "1.2.3\n" })
      assert.strictEqual(
        yield* failure(source.replace(`input.environment == "production"`, `input.environment`), { inputs: { environment: "staging" } }),
        'step deploy: when must be true or false, got "staging"'
      )
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("a tool step records a tool's failure as data; an unknown tool fails the run", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wf-tool-"))
      fs.writeFileSync(path.join(dir, "README.md"), "hello\n")
      const source = `
workflow "tools" {
  tool "readme" {
    id = "Read"
    args = { path = "README.md" }
  }
  tool "missing" {
    id = "Read"
    args = { path = "nope.md" }
  }
  output = { readme = task.readme.ok, missing = task.missing.ok }
}`
      const result = yield* run(source, { cwd: dir })
      assert.deepStrictEqual(result.output, { readme: true, missing: false })
      assert.strictEqual((result.steps["readme"] as { output: string }).output, "hello\n")
      assert.strictEqual(
        yield* failure(source.replace(`id = "Read"\n    args = { path = "nope.md" }`, `id = "Nope"`), { cwd: dir }),
        'step missing: unknown tool "Nope"; the tools here are Bash, Edit, Glob, Grep, Read, Write'
      )
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("an agent step runs on the model with the system prompt, and output_schema gives structured output", () =>
    Effect.gen(function*() {
      const source = `
workflow "summarize" {
  runtime {
    model = "test:model"
  }
  input "paths" {
    type = "array"
    items = { type = "string" }
  }
  map "summaries" {
    over = input.paths
    as = "path"
    concurrency = 1
    agent {
      input = "Summarize \${path}"
      system = "You summarize."
      output_schema = {
        type = "object"
        properties = { summary = { type = "string" } }
        required = ["summary"]
      }
    }
  }
  output = task.summaries
}`
      const result = yield* run(source, { inputs: { paths: ["a.md", "b.md"] } }).pipe(
        // TestModel has no native mechanism: the answer is a call of the submit tool.
        Effect.provide(TestModel.layer([TestModel.toolCall("submit", { summary: "A" }), TestModel.toolCall("submit", { summary: "B" })]))
      )
      assert.deepStrictEqual(result.output, [{ ok: true, output: { summary: "A" } }, { ok: true, output: { summary: "B" } }])
      // A wrong answer is sent back twice, then the step fails.
      const wrong = yield* Effect.flip(run(source, { inputs: { paths: ["a.md"] } })).pipe(
        Effect.provide(TestModel.layer([1, 2, 3].map(() => TestModel.toolCall("submit", { title: "A" }))))
      )
      assert.strictEqual(wrong.reason, "AgentFailed")
      assert.strictEqual(wrong.message.replace(/Session [0-9a-f-]+:/, "Session <id>:"),
        "step summaries[0]: Session <id>: the model's answer did not match the output schema after 2 retries: Missing key\n  at [\"summary\"]"
      )
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("an agent step reports its turns, tokens so far and tool calls, named by the step", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wf-agent-events-"))
      fs.writeFileSync(path.join(dir, "a.txt"), "alpha\n")
      const source = `
workflow "reads" {
  agent "reader" {
    model = "test"
    tools = ["Read"]
    input = "What does a.txt say?"
  }
  output = task.reader.output
}`
      const events: Array<WorkflowEvent.WorkflowEvent> = []
      const result = yield* run(source, { cwd: dir, onEvent: (event) => Effect.sync(() => events.push(event)) }).pipe(
        Effect.provide(TestModel.layer([TestModel.toolCall("Read", { path: "a.txt" }, "call-1"), TestModel.text("It says alpha.")]))
      )
      assert.strictEqual(result.output, "It says alpha.")
      // TestModel counts 10 input and 5 output tokens a turn.
      assert.deepStrictEqual(events.map(({ at: _at, ...event }) => ("durationMs" in event ? { ...event, durationMs: 0 } : event)), [
        { _tag: "RunStarted", workflow: "reads", steps: ["reader"] },
        { _tag: "StepStarted", step: "reader" },
        { _tag: "TurnStarted", step: "reader", turn: 1 },
        { _tag: "TurnFinished", step: "reader", turn: 1, inputTokens: 10, outputTokens: 5, tokensSoFar: 15 },
        { _tag: "ToolStarted", step: "reader", callId: "call-1", tool: "Read" },
        { _tag: "ToolFinished", step: "reader", callId: "call-1", tool: "Read", durationMs: 0, ok: true },
        { _tag: "TurnStarted", step: "reader", turn: 2 },
        { _tag: "TurnFinished", step: "reader", turn: 2, inputTokens: 10, outputTokens: 5, tokensSoFar: 30 },
        { _tag: "StepFinished", step: "reader", durationMs: 0 },
        { _tag: "RunFinished", durationMs: 0, ok: true }
      ])
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("two independent steps run at once: each waits for the other's marker file", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wf-par-"))
      const waitFor = (mine: string, other: string) =>
        `["sh", "-c", "touch ${mine}; sleep 0.3; i=0; while [ ! -e ${other} ]; do i=$((i+1)); [ $i -gt 200 ] && exit 9; sleep 0.05; done"]`
      const source = `
workflow "parallel" {
  cmd "a" {
    argv = ${waitFor("a.marker", "b.marker")}
  }
  cmd "b" {
    argv = ${waitFor("b.marker", "a.marker")}
  }
  output = [task.a.exit_code, task.b.exit_code]
}`
      const events: Array<WorkflowEvent.WorkflowEvent> = []
      const result = yield* run(source, { cwd: dir, onEvent: (event) => Effect.sync(() => events.push(event)) })
      assert.deepStrictEqual(result.output, [0, 0])
      const at = (tag: string, step: string) => events.find((e) => e._tag === tag && "step" in e && e.step === step)!.at
      assert.isTrue(at("StepStarted", "a") < at("StepFinished", "b") && at("StepStarted", "b") < at("StepFinished", "a"))
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("map with concurrency = 2 over 4 items runs exactly 2 at a time (event log)", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wf-map-"))
      // Items pair up (0 with 1, 2 with 3): each waits for its partner's marker, so a map running
      // them one at a time would time out, and the event log shows never more than 2 running.
      const source = `
workflow "fanout" {
  input "numbers" {
    type = "array"
    default = [0, 1, 2, 3]
  }
  map "items" {
    over = input.numbers
    as = "i"
    concurrency = 2
    cmd {
      argv = ["sh", "-c", "touch m\${i}; p=$(( \${i} ^ 1 )); n=0; while [ ! -e m$p ]; do n=$((n+1)); [ $n -gt 200 ] && exit 9; sleep 0.05; done"]
    }
  }
  output = task.items
}`
      const events: Array<WorkflowEvent.WorkflowEvent> = []
      const result = yield* run(source, { cwd: dir, concurrency: 8, onEvent: (event) => Effect.sync(() => events.push(event)) })
      assert.deepStrictEqual((result.output as ReadonlyArray<{ exit_code: number }>).map((r) => r.exit_code), [0, 0, 0, 0])
      let running = 0
      let most = 0
      for (const event of events) {
        if (!("step" in event) || !event.step.startsWith("items[")) continue
        if (event._tag === "StepStarted") most = Math.max(most, ++running)
        if (event._tag === "StepFinished") running--
      }
      assert.strictEqual(most, 2)
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("an http step sends method, headers and body, and reads a JSON answer", () =>
    Effect.gen(function*() {
      const hook = yield* endpoint(201, { id: 7, state: "open" })
      const result = yield* run(`
workflow "file" {
  input "url" {
    type = "string"
  }
  http "create" {
    method = "PUT"
    url = input.url
    headers = { authorization = "Bearer t0ken", "x-trace" = "abc" }
    body = { title = "Disk full", labels = ["ops"] }
    expect_status = [200, 201]
  }
  output = { status = task.create.status, id = task.create.body.id, state = task.create.body.state }
}`, { inputs: { url: hook.url } })
      assert.deepStrictEqual(result.output, { status: 201, id: 7, state: "open" })
      const received = yield* Deferred.await(hook.received)
      assert.strictEqual(received.method, "PUT")
      assert.strictEqual(received.headers["authorization"], "Bearer t0ken")
      assert.strictEqual(received.headers["x-trace"], "abc")
      assert.strictEqual(received.headers["content-type"], "application/json")
      assert.deepStrictEqual(JSON.parse(received.body), { title: "Disk full", labels: ["ops"] })
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("an http step with a string body sends it as it is; a status outside expect_status fails the run", () =>
    Effect.gen(function*() {
      const hook = yield* endpoint(503, { error: "busy" })
      const source = `
workflow "ping" {
  input "url" {
    type = "string"
  }
  http "ping" {
    method = "POST"
    url = input.url
    body = "ping"
    expect_status = 200
  }
}`
      assert.strictEqual(yield* failure(source, { inputs: { url: hook.url } }), `step ping: POST ${hook.url} answered 503, expected 200`)
      const received = yield* Deferred.await(hook.received)
      assert.strictEqual(received.body, "ping")
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("the first real error stops the run and kills the steps still running", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wf-stop-"))
      const pidFile = path.join(dir, "long.pid")
      const source = `
workflow "stop" {
  cmd "long" {
    argv = ["sh", "-c", "echo $$ > ${pidFile}.tmp && mv ${pidFile}.tmp ${pidFile} && exec sleep 600"]
  }
  cmd "ready" {
    argv = ["sh", "-c", "while [ ! -s ${pidFile} ]; do sleep 0.02; done"]
  }
  tool "broken" {
    needs = ["ready"]
    id = "NoSuchTool"
  }
}`
      const events: Array<WorkflowEvent.WorkflowEvent> = []
      const message = yield* failure(source, { onEvent: (event) => Effect.sync(() => events.push(event)) })
      assert.isTrue(message.startsWith(`step broken: unknown tool "NoSuchTool"; the tools here are `))
      const pid = Number(fs.readFileSync(pidFile, "utf8"))
      assert.isTrue(yield* Processes.isDead(pid))
      assert.isFalse(events.some((event) => event._tag === "StepFinished" && event.step === "long"))
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(Condukt.layer)))
})

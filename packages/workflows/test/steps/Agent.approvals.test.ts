/**
 * An agent step whose tool calls wait for approval: the step's `approvals` rules and a caller's
 * tool flagged `needsApproval`, answered by the run's `approve`; without one the step fails at
 * the first request instead of waiting forever. A scripted model, the real session and sandbox.
 */
import { Approval, Tool } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ApprovalRules from "../../src/internal/approvalRules.ts"
import { Workflow, type WorkflowEvent } from "../../src/index.ts"

const DURATIONS = `seconds as a positive number (600), or a string with its unit ("45s", "30m", "1h", "2d")`

const run = (source: string, options: Parameters<typeof Workflow.run>[1] = {}) =>
  Effect.flatMap(Workflow.parse(source, "test.hcl"), (document) => Workflow.run(document, options))

/** A tool that asks before every call, and counts its runs. */
const deploys: Array<string> = []
const Deploy = Tool.make("deploy", {
  description: "Deploys a branch",
  parameters: Schema.Struct({ branch: Schema.String }),
  needsApproval: true,
  call: ({ branch }) => Effect.sync(() => {
    deploys.push(branch)
    return `${branch} deployed`
  })
})

const DEPLOY = `
workflow "ship" {
  agent "ship" {
    model = "test"
    tools = ["deploy"]
    input = "Deploy main"
  }
  output = task.ship.output
}`

/** What the model read for each call, from its requests. */
const toolResults = Effect.map(
  Effect.flatMap(Effect.service(TestModel.TestModel), (model) => model.requests),
  (requests) =>
    requests.flatMap((request) => request.messages).flatMap((message) =>
      message._tag === "ToolResultMessage" ? [[message.callId, message.content, message.isError] as const] : []
    )
)

describe("an agent step whose calls wait for approval", () => {
  it.live("without an answerer: the step fails at the first request, naming the tool, and the call never runs", () =>
    Effect.gen(function*() {
      deploys.length = 0
      const error = yield* Effect.flip(run(DEPLOY, { tools: [Deploy] }))
      assert.deepStrictEqual({ reason: error.reason, message: error.message }, {
        reason: "AgentFailed",
        message: "step ship: deploy (call call-1) needs approval and nobody can answer: give the run an `approve` answerer"
      })
      assert.deepStrictEqual(deploys, [])
    }).pipe(
      Effect.provide(TestModel.layer([TestModel.toolCall("deploy", { branch: "main" }, "call-1"), TestModel.text("Deployed.")])),
      Effect.provide(Condukt.layer)
    ))

  it.live("the answerer approves: the call runs once; each request is reported with the step's id and the call's input", () =>
    Effect.gen(function*() {
      deploys.length = 0
      const asked: Array<Approval.Request> = []
      const events: Array<WorkflowEvent.WorkflowEvent> = []
      const result = yield* run(DEPLOY, {
        tools: [Deploy],
        approve: (request) => Effect.sync(() => asked.push(request)).pipe(Effect.as(Approval.approved)),
        onEvent: (event) => Effect.sync(() => events.push(event))
      })
      assert.strictEqual(result.output, "Deployed.")
      assert.deepStrictEqual(deploys, ["main"])
      // The request is its approval record's too: its own id, and what asked (the tool's flag).
      assert.deepStrictEqual(asked, [{ agent: "ship", callId: "call-1", tool: "deploy", input: { branch: "main" }, id: asked[0]!.id, rule: "needsApproval" }])
      assert.match(asked[0]!.id ?? "", /^[0-9a-f-]{36}$/)
      assert.deepStrictEqual(
        events.filter((event) => event._tag === "ApprovalRequested").map(({ at: _at, ...event }) => event),
        [{ _tag: "ApprovalRequested", step: "ship", callId: "call-1", tool: "deploy", input: { branch: "main" } }]
      )
      assert.deepStrictEqual(yield* toolResults, [["call-1", "main deployed", false]])
    }).pipe(
      Effect.provide(TestModel.layer([TestModel.toolCall("deploy", { branch: "main" }, "call-1"), TestModel.text("Deployed.")])),
      Effect.provide(Condukt.layer)
    ))

  it.live("the step's approvals rules: a denied Read and an asked one the answerer denies with a reason; the model reads both", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wf-approvals-"))
      fs.writeFileSync(path.join(dir, "a.txt"), "alpha\n")
      const source = `
workflow "reads" {
  agent "reader" {
    model     = "test"
    tools     = ["Read", "Glob"]
    input     = "What is here?"
    approvals = { deny = ["Glob"], ask = ["Read"], timeout = 600 }
  }
  output = task.reader.output
}`
      const asked: Array<string> = []
      const result = yield* run(source, {
        cwd: dir,
        approve: (request) => Effect.sync(() => asked.push(request.tool)).pipe(Effect.as(Approval.denied("not today")))
      })
      assert.strictEqual(result.output, "Nothing read.")
      assert.deepStrictEqual(asked, ["Read"])
      assert.deepStrictEqual(yield* toolResults, [
        ["call-1", "Denied by the user: not today", true],
        ["call-2", `Denied by a rule: Glob matches "Glob"`, true]
      ])
      fs.rmSync(dir, { recursive: true })
    }).pipe(
      Effect.provide(TestModel.layer([
        TestModel.reply(TestModel.toolCall("Read", { path: "a.txt" }, "call-1"), TestModel.toolCall("Glob", { pattern: "*" }, "call-2")),
        TestModel.text("Nothing read.")
      ])),
      Effect.provide(Condukt.layer)
    ))

  it.effect("approvals is checked where the workflow loads: its keys, its lists, its globs, its timeout", () =>
    Effect.gen(function*() {
      const invalid = (approvals: string) =>
        Effect.map(
          Effect.flip(Workflow.parse(`workflow "w" {\n  agent "a" {\n    input = "x"\n    approvals = ${approvals}\n  }\n}`, "test.hcl")),
          (error) => error.message
        )
      assert.deepStrictEqual(
        [
          yield* invalid(`{ maybe = ["Bash"] }`),
          yield* invalid(`{ ask = "Bash" }`),
          yield* invalid(`{ deny = ["[z-a]"] }`),
          yield* invalid(`{ timeout = 0 }`)
        ],
        [
          "test.hcl: workflow.steps.a.approvals: unknown keys maybe; approvals takes allow, ask, deny, timeout, expires",
          "test.hcl: workflow.steps.a.approvals.ask: expected a list of strings",
          `test.hcl: workflow.steps.a.approvals.deny: Invalid approval rule "[z-a]": invalid character class range`,
          `test.hcl: workflow.steps.a.approvals.timeout: 0 is not allowed; use ${DURATIONS}`
        ]
      )
    }))

  it.effect("timeout and expires: seconds as a number or a duration string, in a step's approvals and the workflow's approval block; anything else is refused naming where and what is allowed", () =>
    Effect.gen(function*() {
      const document = yield* Workflow.parse(
        `workflow "w" {
  approval {
    ask     = ["deploy"]
    deny    = ["Write"]
    expires = "1h"
    timeout = 600
  }
  agent "a" {
    input     = "x"
    approvals = { ask = ["Bash"], timeout = "30m", expires = 45 }
  }
}`,
        "test.hcl"
      )
      assert.deepStrictEqual(document.approval, { ask: ["deploy"], deny: ["Write"], expires: "1h", timeout: 600 })
      assert.deepStrictEqual(document.steps["a"], { kind: "agent", input: "x", approvals: { ask: ["Bash"], timeout: "30m", expires: 45 } })
      const invalid = (source: string) => Effect.map(Effect.flip(Workflow.parse(source, "test.hcl")), (error) => error.message)
      const step = (approvals: string) => `workflow "w" {\n  agent "a" {\n    input = "x"\n    approvals = ${approvals}\n  }\n}`
      const block = (body: string) => `workflow "w" {\n  approval {\n    ${body}\n  }\n  agent "a" {\n    input = "x"\n  }\n}`
      assert.deepStrictEqual(
        [
          yield* invalid(step(`{ expires = "soon" }`)),
          yield* invalid(step(`{ expires = -5 }`)),
          yield* invalid(step(`{ timeout = "10 minutes" }`)),
          yield* invalid(block(`expires = "0s"`)),
          yield* invalid(block(`maybe = ["Bash"]`)),
          yield* invalid(block(`ask = ["[z-a]"]`)),
          yield* invalid(`workflow "w" {\n  approval {\n  }\n  approval {\n  }\n  agent "a" {\n    input = "x"\n  }\n}`),
          yield* invalid(`workflow "w" {\n  approval = { ask = ["Bash"] }\n  agent "a" {\n    input = "x"\n  }\n}`)
        ],
        [
          `test.hcl: workflow.steps.a.approvals.expires: "soon" is not allowed; use ${DURATIONS}`,
          `test.hcl: workflow.steps.a.approvals.expires: -5 is not allowed; use ${DURATIONS}`,
          `test.hcl: workflow.steps.a.approvals.timeout: "10 minutes" is not allowed; use ${DURATIONS}`,
          `test.hcl: workflow.approval.expires: "0s" is not allowed; use ${DURATIONS}`,
          "test.hcl: workflow.approval: unknown attributes maybe; approval takes allow, ask, deny, timeout, expires",
          `test.hcl: workflow.approval.ask: Invalid approval rule "[z-a]": invalid character class range`,
          "test.hcl: workflow.approval: a workflow has at most one approval block",
          "test.hcl: workflow.approval: approval is a block: approval { ask = [...], timeout = ... }"
        ]
      )
    }))

  it.effect("the workflow's approval block and an agent step's approvals: lists joined, the step's timeout and expires win, in milliseconds", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(
        ApprovalRules.forStep({ ask: ["deploy", "Bash"], deny: ["Write"], timeout: 600, expires: "1h" }, { ask: ["Bash", "Read"], expires: "30m" }),
        { allow: undefined, ask: ["deploy", "Bash", "Read"], deny: ["Write"], timeout: 600_000, expires: 1_800_000 }
      )
      assert.deepStrictEqual(ApprovalRules.forStep({ ask: ["deploy"], expires: "2d" }, undefined), {
        allow: undefined,
        ask: ["deploy"],
        deny: undefined,
        timeout: undefined,
        expires: 172_800_000
      })
      assert.deepStrictEqual(ApprovalRules.forStep(undefined, { timeout: "45s" }), {
        allow: undefined,
        ask: undefined,
        deny: undefined,
        timeout: 45_000,
        expires: undefined
      })
      assert.strictEqual(ApprovalRules.forStep(undefined, undefined), undefined)
    }))

  it.live("a request unanswered by its deadline (the workflow's expires) is denied: the model reads the expiry, the call never runs", () =>
    Effect.gen(function*() {
      deploys.length = 0
      const asked = yield* Deferred.make<Approval.Request>()
      const source = `
workflow "ship" {
  approval {
    ask     = ["deploy"]
    expires = "1s"
  }
  agent "ship" {
    model     = "test"
    tools     = ["deploy"]
    input     = "Deploy main"
    approvals = { deny = ["Glob"] }
  }
  output = task.ship.output
}`
      // Nobody answers: the request waits until its deadline.
      const result = yield* run(source, { tools: [Deploy], approve: (request) => Effect.andThen(Deferred.succeed(asked, request), Effect.never) })
      const request = yield* Deferred.await(asked)
      assert.strictEqual(result.output, "Not deployed.")
      assert.deepStrictEqual(deploys, [])
      assert.deepStrictEqual([request.rule, typeof request.expiresAt], ["ask: deploy", "number"])
      assert.deepStrictEqual(yield* toolResults, [["call-1", Approval.deniedByExpiry(request.expiresAt!), true]])
    }).pipe(
      Effect.provide(TestModel.layer([TestModel.toolCall("deploy", { branch: "main" }, "call-1"), TestModel.text("Not deployed.")])),
      Effect.provide(Condukt.layer)
    ))
})

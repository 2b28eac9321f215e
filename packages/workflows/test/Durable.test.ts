import { Sandbox, Tool } from "@condukt/core"
import { Condukt, SqliteClient } from "@condukt/node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Durable, Workflow, type WorkflowEvent } from "../src/index.ts"

const SOURCE = `
workflow "count" {
  input "who" {
    type = "string"
    default = "Ada"
  }
  tool "first" {
    id = "count"
    args = { label = "first \${input.who}" }
  }
  tool "second" {
    needs = ["first"]
    id = "count"
    args = { label = "second" }
  }
  output = [task.first.output, task.second.output]
}
`

/** A tool counting its calls, in memory: what a step ran is what it counted. */
const counter = () => {
  const calls: Array<string> = []
  const tool = Tool.make("count", {
    description: "Counts its calls",
    parameters: Schema.Struct({ label: Schema.String }),
    call: ({ label }) => Effect.sync(() => (calls.push(label), `${label} #${calls.length}`))
  })
  return { calls, tool }
}

/** Three cmd steps in a chain, each printing its name, for a `scripted` sandbox. */
const CHAIN = `
workflow "flaky" {
  cmd "one" {
    argv = ["echo", "one"]
  }
  cmd "two" {
    needs = ["one"]
    argv = ["echo", "two"]
  }
  cmd "three" {
    needs = ["two"]
    argv = ["echo", "three"]
  }
  output = [task.one.stdout, task.two.stdout, task.three.stdout]
}
`

/**
 * A sandbox answering each command with itself and its count, the commands it ran kept in order:
 * step two's command is cut (its output past the sandbox's limit, so the step fails) its first
 * `failures` times. With it, the retries a run is told of (`onRetried`), kept in order.
 */
const scripted = (failures: number) => {
  const commands: Array<string> = []
  let left = failures
  const sandbox = Sandbox.layerNoop({
    exec: (command) =>
      Effect.sync(() => {
        commands.push(command)
        const cut = command.includes("two") && left-- > 0
        return { output: `${command} #${commands.length}`, exitCode: 0, truncated: cut }
      })
  })
  const retries: Array<Durable.Retry> = []
  const onRetried = (retry: Durable.Retry) => Effect.sync(() => void retries.push(retry))
  return { commands, sandbox, retries, onRetried }
}

/** A database file in a fresh directory, removed with the scope. */
const database = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "durable-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => path.join(dir, "runs.db")))

const runIn = (file: string, source: string, options: Omit<Durable.Options, "location" | "file">) =>
  Effect.flatMap(Workflow.parse(source, "count.hcl"), (document) =>
    Durable.run(document, { sandbox: "virtual", ...options, location: "runs.db", file: "count.hcl" }).pipe(
      Effect.provide(SqliteClient.layer({ file }))
    ))

describe("Durable", () => {
  it.live("a run given again by its id ends as it ended, without running a step again", () =>
    Effect.gen(function*() {
      const file = yield* database
      const { calls, tool } = counter()
      const events: Array<WorkflowEvent.WorkflowEvent> = []
      const recordedAt: Array<number> = []
      const onEvent = (event: WorkflowEvent.WorkflowEvent) => Effect.sync(() => void events.push(event))
      const first = yield* runIn(file, SOURCE, {
        runId: "r1",
        resume: false,
        tools: [tool],
        onEvent,
        onRecorded: Effect.sync(() => void recordedAt.push(events.length))
      })
      // Told once, before the first event.
      assert.deepStrictEqual(recordedAt, [0])
      assert.deepStrictEqual(first.output, ["first Ada #1", "second #2"])
      assert.deepStrictEqual(
        events.flatMap((event) => (event._tag === "StepFinished" ? [[event.step, event.resumed]] : [])),
        [["first", false], ["second", false]]
      )
      const again = yield* runIn(file, SOURCE, { runId: "r1", resume: true, tools: [tool] })
      assert.deepStrictEqual(again, first)
      assert.deepStrictEqual(calls, ["first Ada", "second"])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("runs of other ids in the same database are runs of their own", () =>
    Effect.gen(function*() {
      const file = yield* database
      const { calls, tool } = counter()
      yield* runIn(file, SOURCE, { runId: "r1", resume: false, tools: [tool] })
      const other = yield* runIn(file, SOURCE, { runId: "r2", resume: false, tools: [tool], inputs: { who: "Grace" } })
      assert.deepStrictEqual(other.output, ["first Grace #3", "second #4"])
      assert.deepStrictEqual(calls, ["first Ada", "second", "first Grace", "second"])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("two runs on one database at once, each on its own runner, run only their own steps", () =>
    Effect.gen(function*() {
      const file = yield* database
      const gate = yield* Deferred.make<void>()
      const entered = yield* Deferred.make<void>()
      const gated = Tool.make("count", {
        description: "Waits for the gate",
        parameters: Schema.Struct({ label: Schema.String }),
        call: ({ label }) => Effect.as(Effect.andThen(Deferred.succeed(entered, undefined), Deferred.await(gate)), `${label} gated`)
      })
      const { calls, tool } = counter()
      const slow = yield* Effect.forkChild(runIn(file, SOURCE, { runId: "slow", resume: false, tools: [gated] }))
      yield* Deferred.await(entered)
      const quick = yield* runIn(file, SOURCE, { runId: "quick", resume: false, tools: [tool] })
      assert.deepStrictEqual(quick.output, ["first Ada #1", "second #2"])
      yield* Deferred.succeed(gate, undefined)
      assert.deepStrictEqual((yield* Fiber.join(slow)).output, ["first Ada gated", "second gated"])
      assert.deepStrictEqual(calls, ["first Ada", "second"])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a run interrupted in a map's third item resumes: the first two items not run again, the third run again", () =>
    Effect.gen(function*() {
      const file = yield* database
      const source = `
workflow "items" {
  input "items" {
    type = "array"
    default = ["a", "b", "c"]
  }
  map "each" {
    over = input.items
    as = "item"
    concurrency = 1
    tool {
      id = "count"
      args = { label = "\${item}" }
    }
  }
  output = task.each
}
`
      const calls: Array<string> = []
      const entered = yield* Deferred.make<void>()
      const hangingAtC = Tool.make("count", {
        description: "Counts its calls; hangs at c",
        parameters: Schema.Struct({ label: Schema.String }),
        call: ({ label }) =>
          Effect.andThen(
            Effect.sync(() => calls.push(label)),
            label === "c" ? Effect.andThen(Deferred.succeed(entered, undefined), Effect.never) : Effect.succeed(`${label} done`)
          )
      })
      const first = yield* Effect.forkChild(runIn(file, source, { runId: "items", resume: false, tools: [hangingAtC] }))
      yield* Deferred.await(entered)
      yield* Fiber.interrupt(first)
      const { calls: resumedCalls, tool } = counter()
      const events: Array<WorkflowEvent.WorkflowEvent> = []
      const resumed = yield* runIn(file, source, {
        runId: "items",
        resume: true,
        tools: [tool],
        onEvent: (event) => Effect.sync(() => void events.push(event))
      })
      assert.deepStrictEqual(resumed.output, [
        { ok: true, output: "a done" },
        { ok: true, output: "b done" },
        { ok: true, output: "c #1" }
      ])
      assert.deepStrictEqual({ calls, resumedCalls }, { calls: ["a", "b", "c"], resumedCalls: ["c"] })
      assert.deepStrictEqual(
        events.flatMap((event) =>
          event._tag === "StepFinished" ? [`${event.step} ${event.resumed === true ? "resumed" : "ran"}`]
          : event._tag === "StepStarted" && event.restarted === true ? [`${event.step} restarted`] : []
        ),
        ["each[0] resumed", "each[1] resumed", "each[2] restarted", "each[2] ran", "each ran"]
      )
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a new run whose inputs do not match their declarations fails before it is recorded", () =>
    Effect.gen(function*() {
      const file = yield* database
      const { calls, tool } = counter()
      const recorded: Array<string> = []
      const onRecorded = Effect.sync(() => void recorded.push("bad"))
      const failed = yield* Effect.flip(runIn(file, SOURCE, { runId: "bad", resume: false, tools: [tool], inputs: { who: 42 }, onRecorded }))
      assert.deepStrictEqual([failed._tag, failed.message], ["WorkflowFailed", "inputs do not match their declarations: who: got 42, expected string"])
      const unknown = yield* Effect.flip(runIn(file, SOURCE, { runId: "bad", resume: true, tools: [tool] }))
      assert.deepStrictEqual([unknown._tag, unknown.message], ["DurableFailed", "no run bad in runs.db: a durable run prints its id when it starts"])
      assert.deepStrictEqual({ calls, recorded }, { calls: [], recorded: [] })
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("an unknown id, another document or other inputs under a known id: refused before any step", () =>
    Effect.gen(function*() {
      const file = yield* database
      const { calls, tool } = counter()
      yield* runIn(file, SOURCE, { runId: "r1", resume: false, tools: [tool] })
      const refused = (source: string, options: Omit<Durable.Options, "location" | "file">) =>
        Effect.map(Effect.flip(runIn(file, source, { tools: [tool], ...options })), (error) => [error._tag, error.message])
      assert.deepStrictEqual(yield* refused(SOURCE, { runId: "nope", resume: true }), [
        "DurableFailed",
        "no run nope in runs.db: a durable run prints its id when it starts"
      ])
      assert.deepStrictEqual(yield* refused(SOURCE.replace(`label = "second"`, `label = "2nd"`), { runId: "r1", resume: true }), [
        "DurableFailed",
        "run r1 in runs.db was started from another version of count.hcl: resume it with the workflow it started with, or start a new run"
      ])
      assert.deepStrictEqual(yield* refused(SOURCE, { runId: "r1", resume: true, inputs: { who: "Grace" } }), [
        "DurableFailed",
        "run r1 in runs.db was started with other inputs: resume it with none (its own are kept) or the same ones"
      ])
      assert.deepStrictEqual(yield* refused(SOURCE, { runId: "r1", resume: false }), [
        "DurableFailed",
        "run r1 is already in runs.db: resume it, or start a run of another id"
      ])
      assert.deepStrictEqual(calls, ["first Ada", "second"])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a run that failed, given again by its id, runs its failed step again (the step done before is not): a step that fails the same way fails the run the same way", () =>
    Effect.gen(function*() {
      const file = yield* database
      const { calls, tool } = counter()
      const source = SOURCE.replace(`id = "count"\n    args = { label = "second" }`, `id = "nope"\n    args = { label = "second" }`)
      const failed = yield* Effect.flip(runIn(file, source, { runId: "f1", resume: false, tools: [tool] }))
      assert.deepStrictEqual([failed._tag, failed.message], ["WorkflowFailed", "step second: unknown tool \"nope\"; the tools here are Bash, Edit, Glob, Grep, Read, Write, count"])
      const again = yield* Effect.flip(runIn(file, source, { runId: "f1", resume: true, tools: [tool] }))
      assert.deepStrictEqual(again, failed)
      assert.deepStrictEqual(calls, ["first Ada"])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a run that failed is retried from its failed step: the step done keeps its output, the failed one and its dependent run, each retry is told its attempt; a run that succeeded runs nothing", () =>
    Effect.gen(function*() {
      const file = yield* database
      const { commands, sandbox, retries, onRetried } = scripted(2)
      const events: Array<WorkflowEvent.WorkflowEvent> = []
      const onEvent = (event: WorkflowEvent.WorkflowEvent) => Effect.sync(() => void events.push(event))
      const run = (resume: boolean) => runIn(file, CHAIN, { runId: "flaky", resume, sandbox, onRetried, onEvent })
      const failed = yield* Effect.flip(run(false))
      assert.deepStrictEqual(
        [failed._tag, failed.message],
        ["WorkflowFailed", "step two: the output of echo was cut by the sandbox at its output limit; give the run a sandbox with a larger maxOutputBytes"]
      )
      assert.deepStrictEqual(yield* Effect.flip(run(true)), failed)
      events.length = 0
      const retried = yield* run(true)
      assert.deepStrictEqual(retried.output, ["'echo' 'one' #1", "'echo' 'two' #4", "'echo' 'three' #5"])
      assert.deepStrictEqual(commands, ["'echo' 'one'", "'echo' 'two'", "'echo' 'two'", "'echo' 'two'", "'echo' 'three'"])
      assert.deepStrictEqual(retries, [{ attempt: 2, steps: ["two"] }, { attempt: 3, steps: ["two"] }])
      assert.deepStrictEqual(
        events.flatMap((event) =>
          event._tag === "StepFinished" ? [`${event.step} ${event.resumed === true ? "resumed" : "ran"}`]
          : event._tag === "StepStarted" ? [`${event.step} started${event.restarted === true ? " again" : ""}`] : []
        ),
        ["one resumed", "two started", "two ran", "three started", "three ran"]
      )
      events.length = 0
      assert.deepStrictEqual(yield* run(true), retried)
      assert.deepStrictEqual({ commands: commands.length, retries: retries.length, events: events.length }, { commands: 5, retries: 2, events: 0 })
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a failed step whose run has no end (its process died before recording it) is retried too when the run is given again", () =>
    Effect.gen(function*() {
      const file = yield* database
      const { sandbox, retries, onRetried } = scripted(1)
      const run = (resume: boolean) => runIn(file, CHAIN, { runId: "died", resume, sandbox, onRetried })
      yield* Effect.flip(run(false))
      // What a process that died after step two failed, before the run's end was recorded, leaves.
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`DELETE FROM cluster_replies WHERE request_id IN (SELECT id FROM cluster_messages WHERE tag = 'run')`
        yield* sql`UPDATE cluster_messages SET processed = 0, last_reply_id = NULL WHERE tag = 'run'`
      }).pipe(Effect.provide(SqliteClient.layer({ file })))
      const retried = yield* run(true)
      assert.deepStrictEqual(retried.output, ["'echo' 'one' #1", "'echo' 'two' #3", "'echo' 'three' #4"])
      assert.deepStrictEqual(retries, [{ attempt: 2, steps: ["two"] }])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a run given to a second runner while the first runs it is refused (RunBusy, naming the first's pid and host); once the first ends, it resumes", () =>
    Effect.gen(function*() {
      const file = yield* database
      const gate = yield* Deferred.make<void>()
      const entered = yield* Deferred.make<void>()
      const calls: Array<string> = []
      const gated = Tool.make("count", {
        description: "Counts its calls, then waits for the gate",
        parameters: Schema.Struct({ label: Schema.String }),
        call: ({ label }) => Effect.as(Effect.andThen(Effect.sync(() => calls.push(label)), Effect.andThen(Deferred.succeed(entered, undefined), Deferred.await(gate))), label)
      })
      const holder = { pid: 4242, host: "build-7" }
      const first = yield* Effect.forkChild(runIn(file, SOURCE, { runId: "r1", resume: false, tools: [gated], holder }))
      yield* Deferred.await(entered)
      const refused = yield* Effect.flip(runIn(file, SOURCE, { runId: "r1", resume: true, tools: [gated], holder: { pid: 1, host: "other" } }))
      assert.deepStrictEqual(
        {
          _tag: refused._tag,
          reason: refused._tag === "DurableFailed" ? refused.reason : undefined,
          holder: refused._tag === "DurableFailed" ? [refused.holder?.pid, refused.holder?.host] : undefined,
          message: refused.message.replace(/since \S+\): /, "since <time>): ").replace(/in \d+ s$/, "in <n> s")
        },
        {
          _tag: "DurableFailed",
          reason: "RunBusy",
          holder: [4242, "build-7"],
          message: "run r1 in runs.db is being run by another process (pid 4242 on build-7, since <time>): wait for it to end, " +
            "then resume it; if that process is gone (killed, its machine down), the run can be resumed once its lease lapses, in <n> s"
        }
      )
      assert.deepStrictEqual(calls, ["first Ada"])
      yield* Deferred.succeed(gate, undefined)
      const ended = yield* Fiber.join(first)
      assert.deepStrictEqual(ended.output, ["first Ada", "second"])
      assert.deepStrictEqual(yield* runIn(file, SOURCE, { runId: "r1", resume: true, tools: [gated] }), ended)
      assert.deepStrictEqual(calls, ["first Ada", "second"])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("a run whose lease another process took over (its own lapsed) stops, its step interrupted, with LeaseLost naming the new holder", () =>
    Effect.gen(function*() {
      const file = yield* database
      const entered = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const hanging = Tool.make("count", {
        description: "Waits for ever",
        parameters: Schema.Struct({ label: Schema.String }),
        call: () => Effect.andThen(Deferred.succeed(entered, undefined), Effect.onInterrupt(Effect.never, () => Deferred.succeed(interrupted, undefined)))
      })
      const running = yield* Effect.forkChild(runIn(file, SOURCE, { runId: "r1", resume: false, tools: [hanging], lease: "1 second" }))
      yield* Deferred.await(entered)
      // What a process that found the lease lapsed writes (durableLease's upsert), done here by hand.
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE condukt_workflow_leases SET token = 'theirs', pid = 77, host = 'elsewhere', started_at = 0 WHERE run_id = 'r1'`
      }).pipe(Effect.provide(SqliteClient.layer({ file })))
      const lost = yield* Effect.flip(Fiber.join(running))
      assert.deepStrictEqual([lost._tag, lost._tag === "DurableFailed" ? lost.reason : undefined, lost.message], [
        "DurableFailed",
        "LeaseLost",
        "run r1 in runs.db stopped: its lease lapsed (renewals failed for 1s) and another process runs it (pid 77 on elsewhere, since 1970-01-01T00:00:00.000Z); resume it once that process has ended"
      ])
      yield* Deferred.await(interrupted)
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))
})

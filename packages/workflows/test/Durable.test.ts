/**
 * Durable runs (ADR 0066): a run given again by its id ends as it ended or resumes where its
 * process stopped, the steps done before not run again; a run of another id, document or inputs
 * is refused before any step; one process at a time runs a run (its lease). Retries of a failed
 * run are Durable.retry.test.ts's.
 */
import { Tool } from "@condukt/core"
import { Condukt, SqliteClient } from "@condukt/node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Durable, WorkflowEvent } from "../src/index.ts"
import { counter, database, runIn, SOURCE } from "./durableRun.ts"

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

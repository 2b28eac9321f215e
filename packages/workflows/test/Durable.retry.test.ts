/**
 * A durable run that failed, given again by its id (ADR 0084): the steps that finished keep their
 * outputs and do not run again; the failed steps run again as their next attempt, with those after
 * them and those the failure cut off; a run that succeeded runs nothing. What ran is counted by
 * the tool or the scripted sandbox the steps call, in process.
 */
import { Sandbox } from "@condukt/core"
import { Condukt, SqliteClient } from "@condukt/node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Durable, WorkflowEvent } from "../src/index.ts"
import { counter, database, runIn, SOURCE } from "./durableRun.ts"

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

/**
 * Four cmd steps: `done` first, `slow` beside it, `bad` after `done`, `last` after `slow` and `bad`:
 * a run where one branch fails while the other is still running.
 */
const FORK = `
workflow "fork" {
  cmd "done" {
    argv = ["echo", "done"]
  }
  cmd "slow" {
    argv = ["echo", "slow"]
  }
  cmd "bad" {
    needs = ["done"]
    argv = ["echo", "bad"]
  }
  cmd "last" {
    needs = ["slow", "bad"]
    argv = ["echo", "last"]
  }
  output = [task.done.stdout, task.slow.stdout, task.bad.stdout, task.last.stdout]
}
`

/**
 * A sandbox for FORK answering each command with itself, the commands it ran kept in order. While `failing`, `slow` waits until the test lets it go (told as `slowEntered`; an
 * interruption is kept as `"slow interrupted"`), and `bad`, once `slow` is waiting, is cut (its
 * output past the sandbox's limit: the step fails); after, every command answers at once.
 */
const forked = Effect.gen(function*() {
  const commands: Array<string> = []
  const slowEntered = yield* Deferred.make<void>()
  let failing = true
  const answer = (command: string) => ({ output: command, exitCode: 0, truncated: failing && command.includes("bad") })
  const sandbox = Sandbox.layerNoop({
    exec: (command) =>
      Effect.suspend(() => {
        commands.push(command)
        if (!failing) return Effect.succeed(answer(command))
        if (command.includes("slow")) {
          return Effect.andThen(
            Deferred.succeed(slowEntered, undefined),
            Effect.onInterrupt(Effect.never, () => Effect.sync(() => void commands.push("slow interrupted")))
          )
        }
        return Effect.as(command.includes("bad") ? Deferred.await(slowEntered) : Effect.void, answer(command))
      })
  })
  const retries: Array<Durable.Retry> = []
  const onRetried = (retry: Durable.Retry) => Effect.sync(() => void retries.push(retry))
  return { commands, sandbox, retries, onRetried, mend: Effect.sync(() => void (failing = false)) }
})

/** How many times each command ran. */
const counted = (commands: ReadonlyArray<string>) =>
  Object.fromEntries([...new Set(commands)].sort().map((command) => [command, commands.filter((c) => c === command).length]))

describe("Durable retries", () => {
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

  it.live("a run whose step failed while a step beside it ran is retried from there: the step done before is not run again, the failed one and the one cut off run again, and so does the step after them", () =>
    Effect.gen(function*() {
      const file = yield* database
      const { commands, sandbox, retries, onRetried, mend } = yield* forked
      const events: Array<WorkflowEvent.WorkflowEvent> = []
      const onEvent = (event: WorkflowEvent.WorkflowEvent) => Effect.sync(() => void events.push(event))
      const run = (resume: boolean) => runIn(file, FORK, { runId: "fork", resume, sandbox, onRetried, onEvent })
      const failed = yield* Effect.flip(run(false))
      assert.deepStrictEqual(
        [failed._tag, failed.message],
        ["WorkflowFailed", "step bad: the output of echo was cut by the sandbox at its output limit; give the run a sandbox with a larger maxOutputBytes"]
      )
      assert.deepStrictEqual(counted(commands), { "'echo' 'bad'": 1, "'echo' 'done'": 1, "'echo' 'slow'": 1, "slow interrupted": 1 })
      yield* mend
      events.length = 0
      const retried = yield* run(true)
      assert.deepStrictEqual(retried.output, ["'echo' 'done'", "'echo' 'slow'", "'echo' 'bad'", "'echo' 'last'"])
      assert.deepStrictEqual(counted(commands), {
        "'echo' 'bad'": 2,
        "'echo' 'done'": 1,
        "'echo' 'last'": 1,
        "'echo' 'slow'": 2,
        "slow interrupted": 1
      })
      assert.deepStrictEqual(retries, [{ attempt: 2, steps: ["bad"] }])
      // Steps beside one another start in an order of the scheduler's: sorted.
      assert.deepStrictEqual(
        events.flatMap((event) =>
          event._tag === "StepFinished" ? [`${event.step} ${event.resumed === true ? "resumed" : "ran"}`]
          : event._tag === "StepStarted" ? [`${event.step} started${event.restarted === true ? " again" : ""}`] : []
        ).sort(),
        ["bad ran", "bad started", "done resumed", "last ran", "last started", "slow ran", "slow started again"]
      )
      assert.deepStrictEqual(yield* run(true), retried)
      assert.strictEqual(commands.length, 7)
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))
})

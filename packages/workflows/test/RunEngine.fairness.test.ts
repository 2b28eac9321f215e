/**
 * A run's virtual sandbox runs its commands on worker threads of the run's own (issue 43, ADR
 * 0100): while seven steps spin CPU-bound scripts, other steps' `echo`s and requests answer and the
 * event loop keeps turning; the sandbox's deadline ends a `while true` loop; the workers end with
 * the run, failed or not; `virtual.workers: false` starts none; a caller's pool outlives the run.
 *
 * Counts and outputs are asserted; the two figures — the longest of those steps and the event
 * loop's longest gap while they ran — are held to twenty times the goal (50 ms, measured in
 * bench/virtual-fair.ts), so a loaded machine does not fail them while a starved loop still does:
 * on the run's thread each spinner's `sed` holds it for a second or more at a time.
 */
import { Condukt } from "@condukt/node"
import * as WorkerPool from "@condukt/sandbox-virtual/WorkerPool"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type RunEngine, Workflow, type WorkflowEvent } from "../src/index.ts"
import { endpoint } from "./support.ts"

/** Loops that only a deadline, or the file `/tmp/done`, ends; the deadline past what a loaded machine takes. */
const unlimited = { maxCommands: 1_000_000_000, maxLoopIterations: 1_000_000_000, wallTime: "90 seconds" } as const
const SPINNERS = 7
const ROUNDS = 10
/**
 * Writes a file of 512 KiB, marks itself spinning, then runs `sed` over it until the last answer is
 * in: one command of a second or more that never yields the thread it runs on (ADR 0093).
 */
const spin = (id: number) =>
  `printf '%01000d\\n' 0 > /tmp/big${id}; for i in 1 2 3 4 5 6 7 8 9; do cat /tmp/big${id} /tmp/big${id} > /tmp/next${id}; mv /tmp/next${id} /tmp/big${id}; done; ` +
  `mkdir -p /tmp/spinning; touch /tmp/spinning/${id}; while [ ! -f /tmp/done ]; do sed 's/0/1/g; d' /tmp/big${id}; done; echo stopped`

/**
 * Seven spinners and a chain that waits for them all to spin, then runs an `echo` and a request to
 * a loopback server ten times each, one after the other, then lets the spinners stop.
 */
const FAIR = `
workflow "fair" {
  input "url" {
    type = "string"
  }
${
  Array.from({ length: SPINNERS }, (_, i) => `  cmd "spin${i}" {\n    argv = ["bash", "-c", "${spin(i)}"]\n  }`).join("\n")
}
  cmd "ready" {
    argv = ["bash", "-c", "mkdir -p /tmp/spinning; until [ $(ls /tmp/spinning | wc -l) -ge ${SPINNERS} ]; do sleep 0.05; done"]
  }
${
  Array.from({ length: ROUNDS }, (_, i) =>
    `  cmd "echo${i}" {\n    needs = ["${i === 0 ? "ready" : `ping${i - 1}`}"]\n    argv = ["echo", "hi"]\n  }\n` +
    `  http "ping${i}" {\n    needs = ["echo${i}"]\n    method = "GET"\n    url = input.url\n    expect_status = 200\n  }`).join("\n")
}
  cmd "stop" {
    needs = ["ping${ROUNDS - 1}"]
    argv = ["touch", "/tmp/done"]
  }
}
`

/** Worker threads alive in this process: each holds a message port open. */
const threads = () => process.getActiveResourcesInfo().filter((resource) => resource === "MessagePort").length

const run = (source: string, options: RunEngine.Options) =>
  Effect.flatMap(Workflow.parse(source, "fair.hcl"), (document) => Workflow.run(document, { sandbox: "virtual", ...options }))

/** The longest gap between the event loop's turns (a 5 ms timer's ticks) from `start` to `stop`. */
const gapWatch = () => {
  const state = { last: 0, longest: 0, timer: undefined as ReturnType<typeof setInterval> | undefined }
  const tick = () => {
    const now = performance.now()
    state.longest = Math.max(state.longest, now - state.last)
    state.last = now
  }
  return {
    start: () => {
      state.last = performance.now()
      state.timer = setInterval(tick, 5)
    },
    stop: () => {
      tick()
      clearInterval(state.timer)
    },
    longest: () => state.longest
  }
}

describe("RunEngine's virtual sandbox on worker threads", () => {
  it.live("answers echo steps and requests one after the other while seven steps spin, and the event loop keeps turning", () =>
    Effect.gen(function*() {
      const pong = yield* endpoint(200, { pong: true })
      const gaps = gapWatch()
      const running = new Set<string>()
      const spinningAtAnswer: Array<number> = []
      const answerMs: Array<number> = []
      const onEvent = (event: WorkflowEvent.WorkflowEvent) =>
        Effect.sync(() => {
          if (event._tag === "StepStarted") running.add(event.step)
          if (event._tag === "StepStarted" && event.step === "echo0") gaps.start()
          if (event._tag !== "StepFinished") return
          running.delete(event.step)
          if (!/^(echo|ping)/.test(event.step)) return
          spinningAtAnswer.push([...running].filter((step) => step.startsWith("spin")).length)
          answerMs.push(event.durationMs)
          if (event.step === `ping${ROUNDS - 1}`) gaps.stop()
        })
      const result = yield* run(FAIR, { inputs: { url: pong.url }, virtual: { limits: unlimited }, onEvent })

      const steps = result.steps
      const ping = (i: number) => steps[`ping${i}`] as { readonly status: number; readonly body: unknown }
      assert.deepStrictEqual(
        Array.from({ length: ROUNDS }, (_, i) => [steps[`echo${i}`], ping(i).status, ping(i).body]),
        Array.from({ length: ROUNDS }, () => [{ ok: true, stdout: "hi\n", exit_code: 0 }, 200, { pong: true }])
      )
      assert.deepStrictEqual(
        Array.from({ length: SPINNERS }, (_, i) => steps[`spin${i}`]),
        Array.from({ length: SPINNERS }, () => ({ ok: true, stdout: "stopped\n", exit_code: 0 }))
      )
      // Every answer came while all seven scripts spun: they stop only after the last one.
      assert.deepStrictEqual(spinningAtAnswer, Array.from({ length: 2 * ROUNDS }, () => SPINNERS))
      assert.isBelow(Math.max(...answerMs), 1000)
      assert.isBelow(gaps.longest(), 1000)
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)), 120_000)

  it.live("ends a `while true` loop at the sandbox's deadline, and the steps after it run", () =>
    Effect.gen(function*() {
      const result = yield* run(
        `
workflow "loop" {
  cmd "loop" {
    argv = ["bash", "-c", "while true; do :; done"]
  }
  cmd "after" {
    needs = ["loop"]
    argv = ["echo", "after"]
  }
}
`,
        // The deadline is every command's, counted from when a worker runs it (the loop's worker is
        // terminated when the loop does not look at its deadline in time, and `echo after` then
        // waits for a new one to start, more than 3 s in the whole suite once): 3 s leaves `echo`
        // room on a loaded machine.
        { virtual: { limits: { maxCommands: 1_000_000_000, maxLoopIterations: 1_000_000_000, wallTime: "3 seconds" } } }
      )
      assert.deepStrictEqual(result.steps, {
        loop: { ok: false, stdout: "", exit_code: 124 },
        after: { ok: true, stdout: "after\n", exit_code: 0 }
      })
    }).pipe(Effect.provide(Condukt.layer)), 30_000)

  it.live("ends the run's workers with the run, when it fails too; `workers: false` starts none; a caller's pool outlives the run", () =>
    Effect.gen(function*() {
      const before = threads()
      const during: Array<number> = []
      const onEvent = (event: WorkflowEvent.WorkflowEvent) =>
        Effect.sync(() => void (event._tag === "StepFinished" && during.push(threads() - before)))
      const source = (when: string) => `
workflow "short" {
  cmd "first" {
    argv = ["echo", "one"]
  }
  cmd "second" {
    needs = ["first"]
    when = ${when}
    argv = ["echo", "two"]
  }
}
`
      const passed = yield* run(source("true"), { onEvent })
      const afterPassed = threads() - before
      const failed = yield* Effect.flip(run(source(`"\${task.first.stdout}"`), { onEvent }))
      const afterFailed = threads() - before
      const onThisThread = yield* run(source("true"), { onEvent, virtual: { workers: false } })
      // A pool of the caller's serves the run and outlives it, until the caller's scope closes.
      const shared = yield* Effect.scoped(Effect.gen(function*() {
        const pool = yield* WorkerPool.make({ maxWorkers: 2 })
        const result = yield* run(source("true"), { virtual: { workers: pool } })
        return { steps: result.steps, stats: pool.stats(), threads: threads() - before }
      }))

      assert.deepStrictEqual(passed.steps["second"], { ok: true, stdout: "two\n", exit_code: 0 })
      assert.strictEqual(failed.reason, "WhenFailed")
      assert.deepStrictEqual(onThisThread.steps, passed.steps)
      // One worker warm for the first command, and no more for the second (a chain runs one at a time).
      assert.deepStrictEqual(during, [1, 1, 1, 0, 0])
      assert.deepStrictEqual(shared, { steps: passed.steps, stats: { workers: 1, busy: 0, queued: 0 }, threads: 1 })
      assert.deepStrictEqual([afterPassed, afterFailed, threads() - before], [0, 0, 0])
    }).pipe(Effect.provide(Condukt.layer)), 30_000)
})

/**
 * A script's own `timeout` on a `WorkerPool` (issue 43 item 2): the worker's interpreter has the
 * same `timeout` as the caller's thread (Timeout.test.ts, where its options and messages are
 * tested), and its deadline ends a CPU-bound loop there too, read off the clock between
 * statements while the worker's thread never turns its event loop.
 *
 * No timing is asserted: the sandbox's own deadline is 10 s, so a loop `timeout` did not end
 * would run to it and the call would answer the sandbox's limit instead of printing 124.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as VirtualSandbox from "../src/VirtualSandbox.ts"
import * as WorkerPool from "../src/WorkerPool.ts"
import { ran } from "./support.ts"

const limits: VirtualSandbox.Limits = { maxCommands: 1_000_000_000, maxLoopIterations: 1_000_000_000, wallTime: "10 seconds" }
const spin = "bash -c 'while true; do :; done'"

describe("timeout on a WorkerPool", () => {
  it.live("ends CPU-bound loops, nested or in a for loop, and the script goes on", () =>
    Effect.scoped(Effect.gen(function*() {
      const pool = yield* WorkerPool.make({ maxWorkers: 2 })
      const sandbox = yield* VirtualSandbox.make({ workers: pool, limits })
      assert.deepStrictEqual(yield* sandbox.exec(`timeout 0.3 ${spin}; echo $?; echo after`), ran("124\nafter\n"))
      assert.deepStrictEqual(
        yield* sandbox.exec(`for i in 1 2; do timeout 0.1 ${spin}; echo "$i $?"; done`),
        ran("1 124\n2 124\n")
      )
      assert.deepStrictEqual(yield* sandbox.exec(`timeout 0.2 timeout 5 ${spin}; echo $?`), ran("124\n"))
      // A loop of file reads: each one a message to the sandbox's thread and back.
      assert.deepStrictEqual(
        yield* sandbox.exec("echo x > f; timeout 0.2 bash -c 'while :; do x=$(wc -c < f); done'; echo $?"),
        ran("124\n")
      )
      assert.deepStrictEqual(
        yield* sandbox.exec(`timeout 5 bash -c "timeout 0.1 ${spin}; echo inner \\$?"; echo outer $?`),
        ran("inner 124\nouter 0\n")
      )
      assert.deepStrictEqual(pool.stats().busy, 0)
    })), 60_000)

  it.live("ends a command that waits, keeps a finished command's status, and refuses as GNU does", () =>
    Effect.scoped(Effect.gen(function*() {
      const pool = yield* WorkerPool.make({ maxWorkers: 2 })
      const sandbox = yield* VirtualSandbox.make({ workers: pool, limits })
      assert.deepStrictEqual(yield* sandbox.exec("timeout 0.1 sleep 5; echo $?"), ran("124\n"))
      assert.deepStrictEqual(yield* sandbox.exec("echo in | timeout 5 bash -c 'cat; exit 3'; echo $?"), ran("in\n3\n"))
      assert.deepStrictEqual(
        yield* sandbox.exec("timeout 1x true; echo $?"),
        ran("125\ntimeout: invalid time interval '1x'\nTry 'timeout --help' for more information.\n")
      )
    })), 60_000)
})

describe("the commands a script starts on a WorkerPool", () => {
  it.live("see the call's env, exported as a process's environment is, and only that call's", () =>
    Effect.scoped(Effect.gen(function*() {
      const pool = yield* WorkerPool.make({ maxWorkers: 1 })
      const sandbox = yield* VirtualSandbox.make({ workers: pool, limits })
      assert.deepStrictEqual(
        yield* sandbox.exec("bash -c 'echo $GREETING'; timeout 5 bash -c 'echo $GREETING'", { env: { GREETING: "hi" } }),
        ran("hi\nhi\n")
      )
      assert.deepStrictEqual(yield* sandbox.exec("LOCAL=1; bash -c 'echo [$GREETING$LOCAL]'"), ran("[]\n"))
    })), 60_000)
})


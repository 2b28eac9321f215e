import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Processes from "../src/Processes.ts"

/** A real `sleep` we own, killed when the test's scope closes. */
const sleeper = Effect.acquireRelease(
  Effect.sync(() => spawn("sleep", ["1000"], { stdio: "ignore" })),
  (child) => Effect.sync(() => child.kill("SIGKILL"))
)

describe("Processes", () => {
  it.live("tells a live process from a dead one, and waits for a death", () =>
    Effect.gen(function*() {
      const child = yield* sleeper
      const pid = child.pid!
      assert.isFalse(yield* Processes.isDead(pid))
      assert.strictEqual(yield* Effect.flip(Processes.awaitDeath(pid, 2)), `process ${pid} is still alive (state S)`)
      child.kill("SIGKILL")
      yield* Processes.awaitDeath(pid)
      assert.isTrue(yield* Processes.isDead(pid))
    }))

  it.live("reads a pid file once a whole line is written, and gives up on one that never comes", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-processes-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      fs.writeFileSync(path.join(dir, "ok.pid"), "4242\n")
      assert.strictEqual(yield* Processes.awaitPidFile(path.join(dir, "ok.pid")), 4242)
      fs.writeFileSync(path.join(dir, "partial.pid"), "42")
      assert.strictEqual(
        yield* Effect.flip(Processes.awaitPidFile(path.join(dir, "partial.pid"), 2)),
        `${path.join(dir, "partial.pid")} was never written (20 ms)`
      )
    }))
})

/**
 * reaper against a real program killed without a word: the process groups it started (a
 * long-lived server's, a command's with a background grandchild) do not outlive it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { Processes } from "@condukt/testing"
import { tempDir } from "../sessionStore/conformance.ts"
import { storeWriter } from "../sessionStore/processes.ts"

const fixture = path.resolve(import.meta.dirname, "../fixtures/groupHolder.ts")

describe("reaper", () => {
  it.live("kill -9 of a program: the process groups it started, grandchildren included, are killed", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const program = yield* storeWriter([dir], fixture)
      const pids = yield* Effect.forEach(["server.pid", "shell.pid", "child.pid"], (file) => Processes.awaitPidFile(path.join(dir, file)))
      for (const pid of pids) assert.isFalse(yield* Processes.isDead(pid))
      yield* program.kill
      yield* Effect.forEach(pids, (pid) => Processes.awaitDeath(pid), { discard: true })
    })))
})

/**
 * reaper against a real program killed without a word: the process groups it started (a
 * long-lived server's, a command's with a background grandchild) do not outlive it; its watcher is
 * an awk in a session of its own, no child of the program. The watcher's program on input of the
 * test's own: a group id that now names a process started after it was listed is spared.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Processes, TempDir } from "@condukt/testing"
import * as Reaper from "../../src/internal/reaper.ts"
import { storeWriter } from "../sessionStore/processes.ts"

const tempDir = TempDir.make("condukt-store-")

const fixture = path.resolve(import.meta.dirname, "../fixtures/groupHolder.ts")

/** Fields of `/proc/<pid>/stat` after the command (0: state, 1: parent, 2: group, 3: session, 19: start time). */
const stat = (pid: number): ReadonlyArray<string> => {
  const text = fs.readFileSync(`/proc/${pid}/stat`, "latin1")
  return text.slice(text.lastIndexOf(")") + 2).split(" ")
}

/** `sleep 1000` as the leader of a group of its own, killed with the scope. */
const sleeper = Effect.acquireRelease(
  Effect.callback<ChildProcess>((resume) => {
    const child = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" })
    child.once("spawn", () => resume(Effect.succeed(child)))
  }),
  (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
)

/** Runs the watcher's awk on `input` to its end. */
const watcher = (input: string) =>
  Effect.callback<number>((resume) => {
    const awk = spawn("awk", [Reaper.program], { stdio: ["pipe", "ignore", "inherit"] })
    awk.once("close", (code) => resume(Effect.succeed(code ?? -1)))
    awk.stdin.end(input)
  })

describe("reaper", () => {
  it.live("kill -9 of a program: the process groups it started, grandchildren included, are killed; its watcher, no child of it, leads a session of its own and ends", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const program = yield* storeWriter([dir], fixture)
      const pids = yield* Effect.forEach(["server.pid", "shell.pid", "child.pid"], (file) => Processes.awaitPidFile(path.join(dir, file)))
      for (const pid of pids) assert.isFalse(yield* Processes.isDead(pid))
      const said = (yield* program.next).split(" ")
      assert.deepStrictEqual(said.slice(0, 2), ["reaper", "on"])
      const awk = Number(said[2])
      const [, parent, group, session] = stat(awk)
      assert.notStrictEqual(Number(parent), program.pid)
      assert.deepStrictEqual([group, session], [String(awk), String(awk)])
      yield* program.kill
      yield* Effect.forEach([...pids, awk], (pid) => Processes.awaitDeath(pid), { discard: true })
    })))

  it.live("at EOF, a listed group is killed when its id still names the leader listed, or when its leader is gone; an id now naming a process started at another time is spared", () =>
    Effect.scoped(Effect.gen(function*() {
      const [same, unknown, reused, gone, forgotten] = yield* Effect.all([sleeper, sleeper, sleeper, sleeper, sleeper])
      const startOf = (child: ChildProcess) => stat(child.pid!)[19]!
      // `reused` stands for a process given a listed id after the listed leader's end: its start
      // time is not the one listed. `gone` was listed, then ended without its `-pgid`.
      gone.kill("SIGKILL")
      yield* Processes.awaitDeath(gone.pid!)
      const code = yield* watcher([
        `+${same.pid} ${startOf(same)}`,
        `+${unknown.pid} `,
        `+${reused.pid} ${Number(startOf(reused)) - 100}`,
        `+${gone.pid} 1`,
        // Listed, then forgotten: not killed.
        `+${forgotten.pid} ${startOf(forgotten)}`,
        `-${forgotten.pid}`,
        ""
      ].join("\n"))
      assert.strictEqual(code, 0)
      yield* Effect.forEach([same.pid!, unknown.pid!], (pid) => Processes.awaitDeath(pid), { discard: true })
      assert.isFalse(yield* Processes.isDead(reused.pid!))
      assert.isFalse(yield* Processes.isDead(forgotten.pid!))
    })))
})

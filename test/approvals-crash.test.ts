/**
 * An approval survives its process: a child's run waits for an approval on the disk store (then
 * on the SQLite store) and is killed with SIGKILL there; this process resumes the same id from the
 * same store, lists the waiting call, approves it, and the run ends: each call ran exactly once
 * (the side-effect file), the model was asked once (no turn repeated), the history has no duplicate.
 */
import { Sandbox, Session } from "@condukt/core"
import { DiskSessionStore, SqliteSessionStore } from "@condukt/node"
import { TempDir, TestModel } from "@condukt/testing"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Stream } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { approvalAgent } from "./fixtures/approval-agent.ts"
import { root } from "./support/exec.ts"

const fixture = path.join(root, "test/fixtures/approval-child.ts")

const tempDir = TempDir.make("condukt-approval-crash-")

/** The child, killed with the scope if it is still running; `line` is its first line of stdout. */
const child = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const first = yield* Deferred.make<string>()
    const exited = yield* Deferred.make<string | null>()
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(process.execPath, [fixture, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] })),
      (proc) => Effect.sync(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"))
    )
    let output = ""
    proc.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes("\n")) Deferred.doneUnsafe(first, Effect.succeed(output.slice(0, output.indexOf("\n"))))
    })
    proc.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    proc.on("exit", (code, signal) => {
      Deferred.doneUnsafe(first, Effect.succeed(`exited ${code}: ${output}`))
      Deferred.doneUnsafe(exited, Effect.succeed(signal))
    })
    return { proc, line: Deferred.await(first), exited: Deferred.await(exited) }
  })

const killAndResume = (kind: "disk" | "sqlite") =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const sideEffects = path.join(dir, "ran.txt")
    fs.writeFileSync(sideEffects, "")
    const location = kind === "disk" ? path.join(dir, "sessions") : path.join(dir, "sessions.db")
    const { exited, line, proc } = yield* child([kind, location, sideEffects])
    assert.strictEqual(yield* line, "waiting")
    proc.kill("SIGKILL")
    assert.strictEqual(yield* exited, "SIGKILL")
    assert.strictEqual(fs.readFileSync(sideEffects, "utf8"), "ls .\n")

    const store = kind === "disk"
      ? DiskSessionStore.layer({ dir: location }).pipe(Layer.provide(NodeServices.layer))
      : SqliteSessionStore.layer({ file: location })
    yield* Effect.gen(function*() {
      const session = yield* Session.start(approvalAgent(sideEffects), { id: "careful", sandbox: Sandbox.layerNoop() })
      assert.deepStrictEqual(yield* session.pending, [{ callId: "c_touch", tool: "touch", input: { path: "a" } }])
      const ended = yield* Deferred.make<string>()
      yield* Effect.forkChild(
        Stream.runForEach(session.events, (e) => (e._tag === "AgentEnd" ? Deferred.succeed(ended, e.outcome) : Effect.void)),
        { startImmediately: true }
      )
      yield* session.approve("c_touch")
      assert.strictEqual(yield* Deferred.await(ended), "completed")
      assert.strictEqual(fs.readFileSync(sideEffects, "utf8"), "ls .\ntouch a\n")
      const requests = yield* TestModel.TestModel.use((recorder) => recorder.requests)
      assert.strictEqual(requests.length, 1)
      const history = yield* session.history
      assert.deepStrictEqual(history.map((m) => (m._tag === "ToolResultMessage" ? `${m._tag} ${m.callId}: ${m.content}` : m._tag)), [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage c_touch: touch ran",
        "ToolResultMessage c_ls: ls ran",
        "AssistantMessage"
      ])
      assert.deepStrictEqual(yield* session.pending, [])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.text("tidied")]), store)))
  })

describe("an approval waiting when its process is killed is answered from a new process", () => {
  it.live("on the disk store", () => Effect.scoped(killAndResume("disk")), 60_000)
  it.live("on the SQLite store", () => Effect.scoped(killAndResume("sqlite")), 60_000)
})

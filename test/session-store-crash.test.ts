/**
 * A session outlives its process: a child runs a session on the disk store (then on the SQLite
 * store), is killed with SIGKILL in the middle of a tool call of its third run, and this process
 * resumes the same id from the same store: the first two runs are there whole, the third goes on
 * from its committed tool call, which reads that it was interrupted (Bash is not `retrySafe`: it
 * does not run again), and the next run works.
 */
import { Agent, Message, Sandbox, Session, Tools } from "@condukt/core"
import { DiskSessionStore, SqliteSessionStore } from "@condukt/node"
import { TempDir, TestModel } from "@condukt/testing"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { root } from "./support/exec.ts"

const fixture = path.join(root, "test/fixtures/store-child.ts")

const tempDir = TempDir.make("condukt-store-crash-")

/** Kills a process group, if any of it is left. */
const killGroup = (pgid: number) => Effect.ignore(Effect.try(() => process.kill(-pgid, "SIGKILL")))

/**
 * The first line written to the FIFO at `file`. Opened read-write, so it neither blocks a thread
 * waiting for a writer nor reads end-of-file before one comes.
 */
const firstLine = (file: string) =>
  Effect.acquireUseRelease(
    Effect.sync(() => new net.Socket({ fd: fs.openSync(file, "r+"), readable: true, writable: false })),
    (socket) =>
      Effect.callback<string>((resume) => {
        let text = ""
        socket.on("data", (chunk) => {
          text += chunk.toString()
          if (text.includes("\n")) resume(Effect.succeed(text.slice(0, text.indexOf("\n"))))
        })
      }),
    (socket) => Effect.sync(() => socket.destroy())
  )

/** The child, in its own process group; whatever is left of it and of `pgids` dies with the scope. */
const child = (args: ReadonlyArray<string>, pgids: Array<number>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const proc = spawn(process.execPath, [fixture, ...args], { cwd: root, detached: true, stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      proc.stdout?.on("data", (chunk) => (output += chunk.toString()))
      proc.stderr?.on("data", (chunk) => (output += chunk.toString()))
      const exited = Effect.callback<string | null>((resume) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resume(Effect.succeed(proc.signalCode))
        proc.once("exit", (_code, signal) => resume(Effect.succeed(signal)))
      })
      return { proc, output: () => output, exited }
    }),
    ({ proc }) => Effect.forEach([proc.pid ?? 0, ...pgids], killGroup, { discard: true })
  )

const isAlive = (proc: ChildProcess) => proc.exitCode === null && proc.signalCode === null

const agent = Agent.make({ name: "survivor", model: "test:x", system: "Run commands.", tools: [Tools.Bash] })

const crashAndResume = (kind: "disk" | "sqlite") =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const cwd = path.join(dir, "work")
    fs.mkdirSync(cwd)
    const fifo = path.join(dir, "tool-started")
    execFileSync("mkfifo", [fifo])
    const location = kind === "disk" ? path.join(dir, "sessions") : path.join(dir, "sessions.db")
    const pgids: Array<number> = []
    const { exited, output, proc } = yield* child([kind, location, cwd, fifo], pgids)
    // The third run's Bash call is running: its process group is known, the child is mid-call.
    const toolGroup = Number(yield* firstLine(fifo))
    pgids.push(toolGroup)
    assert.isTrue(isAlive(proc))
    process.kill(proc.pid!, "SIGKILL")
    assert.strictEqual(yield* exited, "SIGKILL")
    yield* killGroup(proc.pid!)
    yield* killGroup(toolGroup)
    // Nothing was printed: no warning (node:sqlite's ExperimentalWarning included), no error.
    assert.strictEqual(output(), "")

    const store = kind === "disk"
      ? DiskSessionStore.layer({ dir: location }).pipe(Layer.provide(NodeServices.layer))
      : SqliteSessionStore.layer({ file: location })
    return yield* Effect.gen(function*() {
      const session = yield* Session.start(agent, { id: "survivor", sandbox: Sandbox.layerNoop() })
      // The third run goes on by itself; this one waits behind it.
      assert.strictEqual((yield* session.run("four")).text, "four done")
      const third = [
        Message.user("three"),
        Message.assistant([
          Message.toolCallPart({ id: "c3", name: "Bash", input: { command: `cut -d' ' -f5 /proc/$$/stat > ${fifo}; sleep 30` } })
        ]),
        Message.toolResult({ callId: "c3", name: "Bash", content: Session.INTERRUPTED_RESULT, isError: true })
      ]
      const before = [
        Message.user("one"),
        Message.assistant([Message.textPart("one done")]),
        Message.user("two"),
        Message.assistant([Message.toolCallPart({ id: "c2", name: "Bash", input: { command: "echo two" } })]),
        Message.toolResult({ callId: "c2", name: "Bash", content: "two\n", isError: false }),
        Message.assistant([Message.textPart("two done")]),
        ...third
      ]
      const requests = yield* TestModel.TestModel.use((recorder) => recorder.requests)
      assert.deepStrictEqual(requests.map((request) => request.messages), [
        before,
        [...before, Message.assistant([Message.textPart("three done")]), Message.user("four")]
      ])
      assert.deepStrictEqual(yield* session.history, [
        ...before,
        Message.assistant([Message.textPart("three done")]),
        Message.user("four"),
        Message.assistant([Message.textPart("four done")])
      ])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.text("three done"), TestModel.text("four done")]), store)))
  })

describe("a session killed mid-tool-call resumes from its store in a new process", () => {
  it.live("on the disk store", () => Effect.scoped(crashAndResume("disk")), 60_000)
  it.live("on the SQLite store", () => Effect.scoped(crashAndResume("sqlite")), 60_000)
})

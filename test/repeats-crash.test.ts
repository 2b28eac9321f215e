/**
 * No silent repeats (issue 25 item 3): a child's run is inside a tool call on a durable store (the
 * disk store, then SqlSessionStore on one SQLite file) and is killed with SIGKILL there, once the
 * call wrote its side-effect line. This process resumes the same id from the same store: the call
 * that had finished keeps its result, the one that was running reads that it was interrupted and
 * does not run again (a `retrySafe` one runs once more instead), the model is not asked for the
 * committed turn again, the interrupted run completes, and the history has no duplicate turn.
 */
import { type Message, Sandbox, Session } from "@condukt/core"
import { SqlSessionStore } from "@condukt/cluster"
import { DiskSessionStore, SqliteClient } from "@condukt/node"
import { TempDir, TestModel } from "@condukt/testing"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { repeatsAgent } from "./fixtures/repeats-agent.ts"
import { root } from "./support/exec.ts"

const fixture = path.join(root, "test/fixtures/repeats-child.ts")

const tempDir = TempDir.make("condukt-repeats-crash-")

/** Waits until `file` holds `content` (watched: no polling on a timer), or the child exits first. */
const untilFile = (file: string, content: string, exited: Effect.Effect<string | null>) =>
  Effect.callback<string>((resume) => {
    const watcher = fs.watch(file, () => check())
    const check = () => {
      if (fs.readFileSync(file, "utf8") !== content) return
      watcher.close()
      resume(Effect.succeed(content))
    }
    check()
    return Effect.sync(() => watcher.close())
  }).pipe(Effect.raceFirst(Effect.map(exited, (signal) => `the child exited first (${signal}): ${fs.readFileSync(file, "utf8")}`)))

/** The child, killed with the scope if it is still running; `output` is what it printed. */
const child = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const exited = yield* Deferred.make<string | null>()
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(process.execPath, [fixture, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] })),
      (proc) => Effect.sync(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"))
    )
    let output = ""
    proc.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    proc.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    proc.on("exit", (_code, signal) => Deferred.doneUnsafe(exited, Effect.succeed(signal)))
    return { proc, exited: Deferred.await(exited), output: () => output }
  })

const killAndResume = (kind: "disk" | "sql", safety: "safe" | "unsafe") =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const sideEffects = path.join(dir, "ran.txt")
    fs.writeFileSync(sideEffects, "")
    const location = kind === "disk" ? path.join(dir, "sessions") : path.join(dir, "sessions.db")
    const { exited, output, proc } = yield* child([kind, location, sideEffects, safety])
    const ranOnce = "note a\ndeploy prod\n"
    assert.strictEqual(yield* untilFile(sideEffects, ranOnce, exited), ranOnce, output())
    proc.kill("SIGKILL")
    assert.strictEqual(yield* exited, "SIGKILL")

    const store = kind === "disk"
      ? DiskSessionStore.layer({ dir: location }).pipe(Layer.provide(NodeServices.layer))
      : SqlSessionStore.layer({ location }).pipe(Layer.provide(SqliteClient.layer({ file: location })))
    yield* Effect.gen(function*() {
      const agent = repeatsAgent(sideEffects, { hang: false, retrySafe: safety === "safe" })
      const session = yield* Session.start(agent, { id: "shipping", sandbox: Sandbox.layerNoop() })
      // Queued behind the interrupted run, which the resumed session goes on with by itself.
      const next = yield* session.run("anything else?")
      assert.strictEqual(next.text, "nothing else")
      const deploy = safety === "safe" ? "deployed to prod" : Session.INTERRUPTED_RESULT
      assert.strictEqual(fs.readFileSync(sideEffects, "utf8"), safety === "safe" ? `${ranOnce}deploy prod\n` : ranOnce)
      const requests = yield* TestModel.TestModel.use((recorder) => recorder.requests)
      // The committed turn is not asked for again: the first request reads the batch's results.
      assert.deepStrictEqual(requests.map((request) => request.messages.map(describeMessage)), [
        ["user: ship it", "assistant: note deploy", "result c_note: noted", `result c_deploy: ${deploy}`],
        [
          "user: ship it",
          "assistant: note deploy",
          "result c_note: noted",
          `result c_deploy: ${deploy}`,
          "assistant: shipped",
          "user: anything else?"
        ]
      ])
      assert.deepStrictEqual((yield* session.history).map(describeMessage), [
        "user: ship it",
        "assistant: note deploy",
        "result c_note: noted",
        `result c_deploy: ${deploy}`,
        "assistant: shipped",
        "user: anything else?",
        "assistant: nothing else"
      ])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.text("shipped"), TestModel.text("nothing else")]), store)))
  })


const describeMessage = (message: Message.Message): string => {
  switch (message._tag) {
    case "UserMessage":
      return `user: ${message.content}`
    case "ToolResultMessage":
      return `result ${message.callId}: ${message.content}`
    case "AssistantMessage":
      return `assistant: ${message.parts.map((part) => (part._tag === "Text" ? part.text : part._tag === "ToolCall" ? part.name : part._tag)).join(" ")}`
  }
}

describe("a tool call running when its process is killed is not run again by the process that resumes the session", () => {
  it.live("on the disk store: the call reads that it was interrupted; the run completes", () => Effect.scoped(killAndResume("disk", "unsafe")), 60_000)
  it.live("on SqlSessionStore (SQLite): the call reads that it was interrupted; the run completes", () => Effect.scoped(killAndResume("sql", "unsafe")), 60_000)
  it.live("on the disk store: a retrySafe call runs once more", () => Effect.scoped(killAndResume("disk", "safe")), 60_000)
  it.live("on SqlSessionStore (SQLite): a retrySafe call runs once more", () => Effect.scoped(killAndResume("sql", "safe")), 60_000)
})

/**
 * Crash cycles, shared by test/Cycles.test.ts (a few) and bench/mcp-cycles.ts (1,000): a session
 * connects to a server declared `restart: "permanent"`, calls its tool, the server crashes
 * (SIGKILL), comes back, the tool is called again, and the session closes. Over stdio the
 * session's supervisor restarts the server (a new process); over Streamable HTTP the server's
 * process is started again on the same port and the client opens a new session (the old one is a
 * 404 there), and the server is stopped after the session. After the cycles: which server processes are still alive, and this process's file
 * descriptors (from /proc/self/fd) against the count before them (after one warm-up cycle, so what
 * the first spawn and the first socket make once, Node's own, is not counted).
 */
import { Deferred, Effect, Exit, Scope, Stream } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import { Agent, Session } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { Processes, TestModel } from "@condukt/testing"
import { McpServer } from "../src/index.ts"
import { descendants, fds, freePort, node } from "./support.ts"

export const tiny = path.resolve(import.meta.dirname, "fixtures/tiny.ts")

export type Transport = "stdio" | "http"

/** What the cycles left. */
export interface Outcome {
  readonly cycles: number
  readonly ms: number
  /** The servers' processes (every pid a call answered, and any process running the fixture under this one) still alive. */
  readonly alive: ReadonlyArray<number>
  readonly fdsBefore: number
  readonly fdsAfter: number
}

const script = [TestModel.toolCall("tiny.pid", {}), TestModel.text("ok"), TestModel.toolCall("tiny.pid", {}), TestModel.text("ok")]

/** The pid the run's `tiny.pid` call answered. */
const pidOf = (result: Session.RunResult): number => {
  const answer = result.messages.find((m) => m._tag === "ToolResultMessage")
  if (answer?._tag !== "ToolResultMessage" || answer.isError) throw new Error(`the call failed: ${JSON.stringify(answer)}`)
  return Number(answer.content)
}

/** An HTTP server process on `port`, running until it is killed; ready when it says so. */
const httpServer = (port: number): Effect.Effect<ChildProcess> =>
  Effect.callback<ChildProcess>((resume) => {
    const child = spawn(node, [tiny, "http", String(port)], { stdio: ["ignore", "pipe", "inherit"] })
    child.stdout!.once("data", () => resume(Effect.succeed(child)))
  })

/** Kills `child` and waits until it has exited and its pipes are closed. */
const kill = (child: ChildProcess): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("close", () => resume(Effect.void))
    child.kill("SIGKILL")
  })

/** One cycle: connect, call, crash, back, call, close. `pids` gets the pids the calls answered. */
const cycle = (transport: Transport, pids: Array<number>, port: number) =>
  Effect.gen(function*() {
    const server = transport === "stdio"
      ? McpServer.stdio({ name: "tiny", command: node, args: [tiny, "stdio"], restart: "permanent" })
      : McpServer.http({ name: "tiny", url: `http://127.0.0.1:${port}/mcp`, restart: "permanent" })
    const scope = yield* Scope.make()
    // The HTTP server runs until the session has closed (its finalizer runs after the session's).
    const http = { server: transport === "http" ? yield* httpServer(port) : undefined }
    yield* Scope.addFinalizer(scope, Effect.suspend(() => (http.server === undefined ? Effect.void : kill(http.server))))
    const session = yield* Session.start(Agent.make({ name: "cycle", model: "test:x", mcpServers: [server] })).pipe(Scope.provide(scope))
    const first = pidOf(yield* session.run("pid"))
    pids.push(first)
    if (transport === "stdio") {
      // The restart's McpServerStarted, watched from before the crash.
      const back = yield* Deferred.make<void>()
      yield* Effect.forkIn(
        session.events.pipe(Stream.filter((e) => e._tag === "McpServerStarted"), Stream.runForEach(() => Deferred.succeed(back, undefined))),
        scope,
        { startImmediately: true }
      )
      process.kill(first, "SIGKILL")
      yield* Deferred.await(back)
    } else {
      yield* kill(http.server!)
      http.server = yield* httpServer(port)
    }
    const second = pidOf(yield* session.run("pid"))
    pids.push(second)
    if (second === first) throw new Error(`the server did not come back: ${first} answered both calls`)
    yield* Scope.close(scope, Exit.void)
  }).pipe(Effect.provide(TestModel.layer(script)))

/** Polls (bounded: 15 s) until this process holds at most `count` descriptors; the count then. */
const settledFds = (count: number) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 300 && fds() > count; attempt++) yield* Effect.sleep("50 millis")
    return fds()
  })

/** Runs `count` cycles over `transport` (after one warm-up cycle) and says what they left. */
export const run = (transport: Transport, count: number): Effect.Effect<Outcome, unknown> =>
  Effect.gen(function*() {
    const pids: Array<number> = []
    const port = yield* freePort
    yield* cycle(transport, pids, port)
    // Every process of the warm-up is dead before the count is taken.
    yield* Effect.forEach(pids, (pid) => Effect.ignore(Processes.awaitDeath(pid)), { discard: true })
    const fdsBefore = yield* settledFds(Number.MAX_SAFE_INTEGER)
    const started = performance.now()
    for (let i = 0; i < count; i++) yield* cycle(transport, pids, port)
    const ms = performance.now() - started
    yield* Effect.forEach(pids, (pid) => Effect.ignore(Processes.awaitDeath(pid)), { discard: true })
    const living = yield* Effect.filter(pids, (pid) => Effect.map(Processes.isDead(pid), (gone) => !gone))
    const alive = [...living, ...descendants(tiny)]
    return { cycles: count, ms, alive: [...new Set(alive)], fdsBefore, fdsAfter: yield* settledFds(fdsBefore) }
  }).pipe(Effect.provide(Condukt.layer))

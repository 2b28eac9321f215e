/**
 * Crash cycles, shared by test/Cycles.test.ts (a few) and bench/mcp-cycles.ts (1,000): a session
 * connects to a server declared `restart: "permanent"`, calls its tool, the server crashes
 * (SIGKILL), comes back, the tool is called again, and the session closes. Over stdio the
 * session's supervisor restarts the server (a new process); over Streamable HTTP the server's
 * process is started again on the same port and the client opens a new session (the old one is a
 * 404 there), and the server is stopped after the session. Each cycle's server processes (the
 * pids its calls answered) must have ended right after it (checked then: on a busy machine a pid
 * is soon reused); after the cycles, no process under this one may run the server, and this
 * process's file descriptors (/proc/self/fd) are counted against the count before them (after one
 * warm-up cycle, so what the first spawn and the first socket make once, Node's own, is not counted).
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
  /** The servers' processes still alive: a pid a cycle's call answered, alive after its cycle; a process under this one running the server after them all. */
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

/** One cycle: connect, call, crash, back, call, close; the pids its two calls answered. */
const cycle = (transport: Transport, port: number) =>
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
    if (second === first) throw new Error(`the server did not come back: ${first} answered both calls`)
    yield* Scope.close(scope, Exit.void)
    return [first, second]
  }).pipe(Effect.provide(TestModel.layer(script)), Effect.orDie)

/** The pids of `pids` still alive after the bounded wait for their death (2 s each). */
const survivors = (pids: ReadonlyArray<number>) =>
  Effect.filter(pids, (pid) => Effect.match(Processes.awaitDeath(pid), { onFailure: () => true, onSuccess: () => false }))

/** Polls (bounded: 15 s) until this process holds at most `count` descriptors; the count then. */
const settledFds = (count: number) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 300 && fds() > count; attempt++) yield* Effect.sleep("50 millis")
    return fds()
  })

/** This process's descriptors once the count held still for 10 readings 50 ms apart (bounded: 15 s). */
const steadyFds = Effect.gen(function*() {
  let last = fds()
  for (let attempt = 0, same = 0; attempt < 300 && same < 10; attempt++) {
    yield* Effect.sleep("50 millis")
    const now = fds()
    same = now === last ? same + 1 : 0
    last = now
  }
  return last
})

/** Runs `count` cycles over `transport` (after one warm-up cycle) and says what they left. */
export const run = (transport: Transport, count: number): Effect.Effect<Outcome> =>
  Effect.gen(function*() {
    const port = yield* freePort
    const alive = [...yield* survivors(yield* cycle(transport, port))]
    const fdsBefore = yield* steadyFds
    const started = performance.now()
    for (let i = 0; i < count; i++) alive.push(...yield* survivors(yield* cycle(transport, port)))
    const ms = performance.now() - started
    return { cycles: count, ms, alive: [...alive, ...descendants(tiny)], fdsBefore, fdsAfter: yield* settledFds(fdsBefore) }
  }).pipe(Effect.provide(Condukt.layer))

/**
 * The restart policies of a session's MCP servers, with real stdio server processes ended by their
 * pid (the fixture's `pid` tool): a crash (SIGKILL, or an exit with a code other than 0) fails the
 * child, so `transient` comes back as `permanent` does; a clean end (exit code 0) is a normal end,
 * which only `permanent` comes back from; `temporary` (the default) never comes back; a server
 * crashing in a loop is given up after the session's supervisor's intensity (more than 3 restarts
 * within 5 s, docs/mcp.md): every server of the session is stopped with the give-up as its reason,
 * a warning is logged, and their tools say they will not come back (ADR 0101).
 *
 * The intensity's period is read on the clock: these tests run on the TestClock (`it.effect`), so
 * restarts fall within one period or apart from it by the test's word, never by the machine's
 * speed. Each end is followed by a wait on the event that answers it (the server started again,
 * or the session's servers stopped): no sleeps. That a server was not restarted is read the same
 * way: the supervisor handles exits in order, so once a later crash of another server has been
 * answered, a restart of the first would have shown.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Logger, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { pathToFileURL } from "node:url"
import { Agent, Session, type SessionEvent } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { McpServer } from "../src/index.ts"
import { fixture, node, results } from "./support.ts"

/** What the supervisor did to a server, in the order it did it: why it went down, why it was stopped. */
type Seen =
  | readonly [tag: "McpServerStarted", server: string]
  | readonly [tag: "McpServerDown", server: string, description: string]
  | readonly [tag: "McpServerStopped", server: string, reason?: SessionEvent.SupervisorGaveUp]
  | readonly [tag: "NoAnswer", server: string]

const seenOf = (e: SessionEvent.SessionEvent): Seen | undefined => {
  switch (e._tag) {
    case "McpServerStarted":
      return [e._tag, e.server]
    case "McpServerDown":
      return [e._tag, e.server, e.description]
    case "McpServerStopped":
      return e.reason === undefined ? [e._tag, e.server] : [e._tag, e.server, e.reason]
    default:
      return undefined
  }
}

/**
 * A session on TestModel with `servers`, a queue of what happens to them from now on, and the
 * warnings logged.
 */
const session = (servers: ReadonlyArray<McpServer.McpServer>, replies: ReadonlyArray<TestModel.Reply>) => {
  const warnings: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel === "Warn") warnings.push((Array.isArray(message) ? message : [message]).join(" "))
  })
  return Effect.gen(function*() {
    const s = yield* Session.start(Agent.make({ name: "restarts", model: "test:x", mcpServers: servers }))
    const seen = yield* Queue.unbounded<Seen>()
    const events = yield* s.subscribe
    yield* Effect.forkScoped(
      Stream.runForEach(events, (e: SessionEvent.SessionEvent) => {
        const what = seenOf(e)
        return what === undefined ? Effect.void : Queue.offer(seen, what)
      }),
      { startImmediately: true }
    )
    return { s, seen, warnings }
  }).pipe(Effect.provide(TestModel.layer(replies)), Effect.provide(Condukt.layer), Effect.provide(Logger.layer([logger])))
}

const stdio = (name: string, restart?: "permanent" | "transient" | "temporary") =>
  McpServer.stdio({ name, command: node, args: [fixture], ...(restart === undefined ? {} : { restart }) })

/** The fixture server, in a process that exits with its argument as the code on SIGUSR2. */
const EXITS_ON_SIGUSR2 = `process.on("SIGUSR2", () => process.exit(Number(process.argv[1]))); import(${JSON.stringify(pathToFileURL(fixture).href)})`

/** The fixture server as a server that ends on its own (SIGUSR2) with exit code `code`. */
const exiting = (name: string, code: number, restart: "permanent" | "transient") =>
  McpServer.stdio({ name, command: node, args: ["-e", EXITS_ON_SIGUSR2, String(code)], restart })

/**
 * Runs the session once (its script calls a server's `pid` tool) and signals that process:
 * SIGKILL, a crash; SIGUSR2, an exit of its own (`exiting`).
 */
const crash = (s: Session.Session, signal: "SIGKILL" | "SIGUSR2" = "SIGKILL") =>
  Effect.gen(function*() {
    const events = Array.from(yield* Stream.runCollect(s.stream("pid")))
    process.kill(Number(results(events)[0]!.content), signal)
  })

/**
 * A bound on the wait for an answer, on the real clock: a build that never answers fails on the
 * whole value (ending in `NoAnswer`) rather than on the test's time limit. Never reached otherwise.
 */
const ANSWER_BOUND = "20 seconds"

/** What the queue holds up to `server` being started again or stopped. */
const untilAnswered = (seen: Queue.Queue<Seen>, server: string) =>
  Effect.gen(function*() {
    const out: Array<Seen> = []
    while (true) {
      const next = yield* TestClock.withLive(Effect.timeoutOption(Queue.take(seen), ANSWER_BOUND))
      if (next._tag === "None") return [...out, ["NoAnswer", server] as const]
      out.push(next.value)
      if (next.value[0] !== "McpServerDown" && next.value[1] === server) return out
    }
  })

/** The model's script for one `crash`: the server's `pid` tool, then a word. */
const pidCall = (server: string) => [TestModel.toolCall(`${server}.pid`, {}), TestModel.text("ok")]

/** `crash` `server` `times` times, `apart` on the TestClock from one another: what answered each crash. */
const crashLoop = (s: Session.Session, seen: Queue.Queue<Seen>, server: string, times: number, apart: Duration.Input) =>
  Effect.gen(function*() {
    const answers: Array<ReadonlyArray<Seen>> = []
    for (let i = 0; i < times; i++) {
      if (i > 0) yield* TestClock.adjust(apart)
      yield* crash(s)
      answers.push(yield* untilAnswered(seen, server))
    }
    return answers
  })

/** What a server's tools answer once it will not come back in the session. */
const GONE = (server: string, why: string) => `Error: MCP server ${server} is down (${why}) and will not come back in this session`

/** Each server's `echo`, in one reply; then a word. */
const echoes = (...servers: ReadonlyArray<string>) => [
  TestModel.reply(...servers.map((server) => TestModel.toolCall(`${server}.echo`, { text: server }))),
  TestModel.text("done")
]

const restartedAfter = (server: string, why: string): ReadonlyArray<Seen> => [["McpServerDown", server, why], ["McpServerStarted", server]]

const restarted = restartedAfter("fx", "the server exited")

/** The session's supervisor's give-up, fx having needed a fourth restart within 5 s. */
const gaveUp: SessionEvent.SupervisorGaveUp = { _tag: "SupervisorGaveUp", server: "fx", maxRestarts: 3, periodMs: 5000 }

describe("MCP server restarts", () => {
  it.effect("a transient server that crashes (non-zero / SIGKILL) comes back, and its tool works", () =>
    Effect.gen(function*() {
      const { s, seen } = yield* session([exiting("fx", 3, "transient")], [...pidCall("fx"), ...pidCall("fx"), ...echoes("fx")])
      yield* crash(s, "SIGUSR2")
      assert.deepStrictEqual(yield* untilAnswered(seen, "fx"), restarted)
      yield* crash(s, "SIGKILL")
      assert.deepStrictEqual(yield* untilAnswered(seen, "fx"), restarted)
      const after = Array.from(yield* Stream.runCollect(s.stream("echo")))
      assert.deepStrictEqual(results(after), [{ name: "fx.echo", content: "fx", isError: false }])
    }).pipe(Effect.scoped))

  it.effect("a transient server that exits 0 stays down, and its tools say so", () =>
    Effect.gen(function*() {
      const { s, seen } = yield* session([exiting("fx", 0, "transient"), stdio("ok", "permanent")], [
        ...pidCall("fx"),
        ...pidCall("ok"),
        ...echoes("fx", "ok")
      ])
      yield* crash(s, "SIGUSR2")
      assert.deepStrictEqual(yield* Queue.take(seen), ["McpServerDown", "fx", "the server exited with code 0"])
      // ok's crash is answered after fx's exit was handled: a restart of fx would show before it.
      assert.deepStrictEqual(yield* crashLoop(s, seen, "ok", 1, "1 second"), [restartedAfter("ok", "the server exited")])
      assert.strictEqual(yield* Queue.size(seen), 0)
      const after = Array.from(yield* Stream.runCollect(s.stream("echo")))
      assert.deepStrictEqual(results(after), [
        { name: "fx.echo", content: GONE("fx", "the server exited with code 0"), isError: true },
        { name: "ok.echo", content: "ok", isError: false }
      ])
    }).pipe(Effect.scoped))

  it.effect("a permanent server that exits 0 comes back, and its tool works", () =>
    Effect.gen(function*() {
      const { s, seen } = yield* session([exiting("fx", 0, "permanent")], [...pidCall("fx"), ...echoes("fx")])
      yield* crash(s, "SIGUSR2")
      assert.deepStrictEqual(yield* untilAnswered(seen, "fx"), restartedAfter("fx", "the server exited with code 0"))
      const after = Array.from(yield* Stream.runCollect(s.stream("echo")))
      assert.deepStrictEqual(results(after), [{ name: "fx.echo", content: "fx", isError: false }])
    }).pipe(Effect.scoped))

  it.effect("a server crashing in a loop is given up after 3 restarts within 5 s: every server of the session is stopped with the give-up as its reason, a warning says so, and their tools say they will not come back", () =>
    Effect.gen(function*() {
      const { s, seen, warnings } = yield* session([stdio("fx", "permanent"), stdio("ok", "permanent")], [
        ...Array.from({ length: 4 }, () => pidCall("fx")).flat(),
        ...echoes("fx", "ok")
      ])
      // Four crashes a second apart: the fourth restart would be the fourth within 5 s.
      assert.deepStrictEqual(yield* crashLoop(s, seen, "fx", 4, "1 second"), [
        restarted,
        restarted,
        restarted,
        [["McpServerDown", "fx", "the server exited"], ["McpServerStopped", "ok", gaveUp], ["McpServerStopped", "fx", gaveUp]]
      ])
      assert.deepStrictEqual(warnings, [
        "MCP server ok will not come back in this session: stopped when fx was given up after 3 restarts within 5s",
        "MCP server fx will not come back in this session: the server exited; given up after 3 restarts within 5s"
      ])
      const after = Array.from(yield* Stream.runCollect(s.stream("echo")))
      assert.deepStrictEqual(results(after), [
        { name: "fx.echo", content: GONE("fx", "the server exited; given up after 3 restarts within 5s"), isError: true },
        { name: "ok.echo", content: GONE("ok", "stopped when fx was given up after 3 restarts within 5s"), isError: true }
      ])
      // The session goes on without them (ADR 0101): the run that called them completed.
      assert.deepStrictEqual(after.flatMap((e) => (e._tag === "AgentEnd" ? [e.outcome] : [])), ["completed"])
    }).pipe(Effect.scoped))

  it.effect("crashes further apart than the period do not add up: a server crashing 5 times, 6 s apart, comes back each time", () =>
    Effect.gen(function*() {
      const { s, seen } = yield* session([stdio("fx", "permanent"), stdio("ok", "permanent")], [
        ...Array.from({ length: 5 }, () => pidCall("fx")).flat(),
        ...echoes("fx", "ok")
      ])
      assert.deepStrictEqual(yield* crashLoop(s, seen, "fx", 5, "6 seconds"), Array.from({ length: 5 }, () => restarted))
      const after = Array.from(yield* Stream.runCollect(s.stream("echo")))
      assert.deepStrictEqual(results(after), [
        { name: "fx.echo", content: "fx", isError: false },
        { name: "ok.echo", content: "ok", isError: false }
      ])
    }).pipe(Effect.scoped))

  it.effect("a temporary server (the default) that crashed is never connected again, nor counted among the restarts, nor stopped by a later give-up", () =>
    Effect.gen(function*() {
      const { s, seen } = yield* session([stdio("tmp"), stdio("fx", "permanent"), stdio("ok", "permanent")], [
        ...pidCall("tmp"),
        ...Array.from({ length: 4 }, () => pidCall("fx")).flat(),
        ...echoes("tmp")
      ])
      yield* crash(s)
      assert.deepStrictEqual(yield* Queue.take(seen), ["McpServerDown", "tmp", "the server exited"])
      // The supervisor handles exits in order: by the time it has restarted fx three times and
      // given up on it, a restart of tmp would have shown, and counted (it would give up a crash sooner).
      assert.deepStrictEqual(yield* crashLoop(s, seen, "fx", 4, "1 second"), [
        restarted,
        restarted,
        restarted,
        [["McpServerDown", "fx", "the server exited"], ["McpServerStopped", "ok", gaveUp], ["McpServerStopped", "fx", gaveUp]]
      ])
      const after = Array.from(yield* Stream.runCollect(s.stream("echo")))
      assert.deepStrictEqual(results(after), [{ name: "tmp.echo", content: GONE("tmp", "the server exited"), isError: true }])
    }).pipe(Effect.scoped))
})

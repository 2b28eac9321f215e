/**
 * The restart policies of a session's MCP servers, with real stdio server processes killed by
 * their pid (the fixture's `pid` tool): `transient` comes back after a crash as `permanent` does (a
 * server's connection ending is always a failure to the supervisor, whatever the exit code);
 * `temporary` (the default) never comes back; a server crashing in a loop is given up after the
 * session's supervisor's intensity (more than 3 restarts within 5 s, docs/mcp.md): the supervisor
 * stops every server of the session, and their tools answer `TransportDown`.
 *
 * The intensity's period is read on the clock: these tests run on the TestClock (`it.effect`), so
 * restarts fall within one period or apart from it by the test's word, never by the machine's
 * speed. Each crash is followed by a wait on the event that answers it (the server started again,
 * or the session's other servers stopped): no sleeps.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Agent, Session, type SessionEvent } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { McpServer } from "../src/index.ts"
import { fixture, node, results } from "./support.ts"

/** What the supervisor did to a server, in the order it did it. */
type Seen = readonly [tag: "McpServerStarted" | "McpServerDown" | "McpServerStopped", server: string]

/** A session on TestModel with `servers`, and a queue of what happens to them from now on. */
const session = (servers: ReadonlyArray<McpServer.McpServer>, replies: ReadonlyArray<TestModel.Reply>) =>
  Effect.gen(function*() {
    const s = yield* Session.start(Agent.make({ name: "restarts", model: "test:x", mcpServers: servers }))
    const seen = yield* Queue.unbounded<Seen>()
    const events = yield* s.subscribe
    yield* Effect.forkScoped(
      Stream.runForEach(events, (e: SessionEvent.SessionEvent) =>
        e._tag === "McpServerStarted" || e._tag === "McpServerDown" || e._tag === "McpServerStopped"
          ? Queue.offer(seen, [e._tag, e.server] as const)
          : Effect.void),
      { startImmediately: true }
    )
    return { s, seen }
  }).pipe(Effect.provide(TestModel.layer(replies)), Effect.provide(Condukt.layer))

const stdio = (name: string, restart?: "permanent" | "transient" | "temporary") =>
  McpServer.stdio({ name, command: node, args: [fixture], ...(restart === undefined ? {} : { restart }) })

/** Runs the session once (its script calls a server's `pid` tool) and kills that process (SIGKILL). */
const crash = (s: Session.Session) =>
  Effect.gen(function*() {
    const events = Array.from(yield* Stream.runCollect(s.stream("pid")))
    process.kill(Number(results(events)[0]!.content), "SIGKILL")
  })

/** What the queue holds up to the first event that is not a server going down. */
const untilAnswered = (seen: Queue.Queue<Seen>) =>
  Effect.gen(function*() {
    const out: Array<Seen> = []
    while (true) {
      const next = yield* Queue.take(seen)
      out.push(next)
      if (next[0] !== "McpServerDown") return out
    }
  })

/** The model's script for one `crash`: the server's `pid` tool, then a word. */
const pidCall = (server: string) => [TestModel.toolCall(`${server}.pid`, {}), TestModel.text("ok")]

/** `crash` `times` times, `apart` on the TestClock from one another: what answered each crash. */
const crashLoop = (s: Session.Session, seen: Queue.Queue<Seen>, times: number, apart: Duration.Input) =>
  Effect.gen(function*() {
    const answers: Array<ReadonlyArray<Seen>> = []
    for (let i = 0; i < times; i++) {
      if (i > 0) yield* TestClock.adjust(apart)
      yield* crash(s)
      answers.push(yield* untilAnswered(seen))
    }
    return answers
  })

const DOWN = (server: string, why: string) => `Error: MCP server ${server} is down (${why}); its tools cannot be called until it is back`

/** Each server's `echo`, in one reply; then a word. */
const echoes = (...servers: ReadonlyArray<string>) => [
  TestModel.reply(...servers.map((server) => TestModel.toolCall(`${server}.echo`, { text: server }))),
  TestModel.text("done")
]

const restarted: ReadonlyArray<Seen> = [["McpServerDown", "fx"], ["McpServerStarted", "fx"]]

describe("MCP server restarts", () => {
  it.effect("with restart: transient, a server that crashed is connected again and its tool works", () =>
    Effect.gen(function*() {
      const { s, seen } = yield* session([stdio("fx", "transient")], [...pidCall("fx"), ...echoes("fx")])
      assert.deepStrictEqual(yield* crashLoop(s, seen, 1, "1 second"), [restarted])
      const after = Array.from(yield* Stream.runCollect(s.stream("echo")))
      assert.deepStrictEqual(results(after), [{ name: "fx.echo", content: "fx", isError: false }])
    }).pipe(Effect.scoped))

  it.effect("a server crashing in a loop is given up after 3 restarts within 5 s: every server of the session stops, and their tools answer TransportDown", () =>
    Effect.gen(function*() {
      const { s, seen } = yield* session([stdio("fx", "permanent"), stdio("ok", "permanent")], [
        ...Array.from({ length: 4 }, () => pidCall("fx")).flat(),
        ...echoes("fx", "ok")
      ])
      // Four crashes a second apart: the fourth restart would be the fourth within 5 s.
      assert.deepStrictEqual(yield* crashLoop(s, seen, 4, "1 second"), [
        restarted,
        restarted,
        restarted,
        [["McpServerDown", "fx"], ["McpServerStopped", "ok"]]
      ])
      const after = Array.from(yield* Stream.runCollect(s.stream("echo")))
      assert.deepStrictEqual(results(after), [
        { name: "fx.echo", content: DOWN("fx", "the server exited"), isError: true },
        { name: "ok.echo", content: DOWN("ok", "it has not started"), isError: true }
      ])
    }).pipe(Effect.scoped))

  it.effect("crashes further apart than the period do not add up: a server crashing 5 times, 6 s apart, comes back each time", () =>
    Effect.gen(function*() {
      const { s, seen } = yield* session([stdio("fx", "permanent"), stdio("ok", "permanent")], [
        ...Array.from({ length: 5 }, () => pidCall("fx")).flat(),
        ...echoes("fx", "ok")
      ])
      assert.deepStrictEqual(yield* crashLoop(s, seen, 5, "6 seconds"), Array.from({ length: 5 }, () => restarted))
      const after = Array.from(yield* Stream.runCollect(s.stream("echo")))
      assert.deepStrictEqual(results(after), [
        { name: "fx.echo", content: "fx", isError: false },
        { name: "ok.echo", content: "ok", isError: false }
      ])
    }).pipe(Effect.scoped))

  it.effect("a temporary server (the default) that crashed is never connected again, nor counted among the restarts", () =>
    Effect.gen(function*() {
      const { s, seen } = yield* session([stdio("tmp"), stdio("fx", "permanent"), stdio("ok", "permanent")], [
        ...pidCall("tmp"),
        ...Array.from({ length: 4 }, () => pidCall("fx")).flat(),
        ...echoes("tmp")
      ])
      yield* crash(s)
      assert.deepStrictEqual(yield* Queue.take(seen), ["McpServerDown", "tmp"])
      // The supervisor handles exits in order: by the time it has restarted fx three times and
      // given up on it, a restart of tmp would have shown, and counted (it would give up a crash sooner).
      assert.deepStrictEqual(yield* crashLoop(s, seen, 4, "1 second"), [
        restarted,
        restarted,
        restarted,
        [["McpServerDown", "fx"], ["McpServerStopped", "ok"]]
      ])
      const after = Array.from(yield* Stream.runCollect(s.stream("echo")))
      assert.deepStrictEqual(results(after), [{ name: "tmp.echo", content: DOWN("tmp", "the server exited"), isError: true }])
    }).pipe(Effect.scoped))
})

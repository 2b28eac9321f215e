/**
 * Streams that resume (issue 40), over real HTTP on loopback, the server's records in SQLite
 * (`SqlServerStore` on `@condukt/node`'s SqliteClient). A client dropped at 1,000 points drawn from
 * a seed, in a long run of a scripted agent (text a character at a time, several turns with tool
 * calls), reconnects with `Last-Event-ID` and reads exactly what follows, no event lost or repeated;
 * so does a client reading a live run dropped again and again. A server process `kill -9`ed
 * mid-run (waiting for an approval) and started again on its SQLite file serves the client, back
 * with its `Last-Event-ID`, exactly the events after it, its session still its principal's with its
 * history. An id before the kept window is a 410 saying how to read again; an id that is not a
 * number the server sent, a 400.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import * as path from "node:path"
import * as Sandbox from "@condukt/core/Sandbox"
import * as SqliteClient from "@condukt/node/SqliteClient"
import { TempDir, TestModel } from "@condukt/testing"
import { storeWriter } from "../../node/test/sessionStore/processes.ts"
import { Auth, Server, ServerStore, SqlServerStore } from "../src/index.ts"
import * as EventJson from "../src/internal/eventJson.ts"
import * as Script from "./fixtures/resumeScript.ts"
import { type Frame, open, request } from "./fixtures/sseClient.ts"

const tempDir = TempDir.make("condukt-store-")

const fixture = path.resolve(import.meta.dirname, "fixtures/resumeServer.ts")

/** Limits far above what the test's thousand connections ask, so that none is refused. */
const generous = { requestsPerSecond: 100_000, burst: 100_000, streamsPerPrincipal: 10_000 }

/** The server's store on the SQLite file `file`, for the scope. */
const sqlStore = (file: string, options: SqlServerStore.Options = {}) =>
  Effect.map(Effect.orDie(Layer.build(SqlServerStore.layer(options).pipe(Layer.provide(SqliteClient.layer({ file }))))), (context) =>
    Context.get(context, ServerStore.ServerStore))

/** The agent of resumeScript.ts served in this process, its records in SQLite (`window`: the events kept). */
const serve = (replies: ReadonlyArray<TestModel.Reply>, options: SqlServerStore.Options = {}) =>
  Effect.gen(function*() {
    const store = yield* sqlStore(path.join(yield* tempDir, "server.db"), options)
    const routes = Server.layer({ agents: { ops: Script.agent }, auth: Auth.bearer(Script.tokens), defaultAgent: "ops", limits: generous })
    const { url } = yield* Server.listen(routes, { limits: generous }).pipe(
      Effect.provide(Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop(), Layer.succeed(ServerStore.ServerStore, store)))
    )
    return { url, store }
  })

/** The next `count` frames of an open stream. */
const frames = (stream: { readonly next: Effect.Effect<Frame> }, count: number) =>
  Effect.forEach(Array.from({ length: count }), () => stream.next)

/** `count` frames of the session's events after `lastEventId`, on a connection dropped after them. */
const readAfter = (url: string, id: string, lastEventId: number | undefined, count: number) =>
  Effect.scoped(Effect.gen(function*() {
    const stream = yield* open(url, `/sessions/${id}/events`, { token: "tok-alice", lastEventId: lastEventId === undefined ? undefined : String(lastEventId) })
    return { status: stream.status, frames: yield* frames(stream, count) }
  }))

/** A session's entries as the frames a client reads. */
const asFrames = (entries: ReadonlyArray<ServerStore.Entry>): Array<Frame> =>
  entries.map((entry) => ({ id: entry.id, event: entry.event._tag, data: { ...JSON.parse(EventJson.encode(entry.event)), at: entry.at } }))

/** Numbers in [0, 1) from a seed (mulberry32): the same drops on every run. */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** `id`'s whole sequence as the store keeps it. */
const whole = (store: ServerStore.Service, id: string) => Effect.map(Effect.orDie(store.read(id, 0, 100_000)), (read) => read.entries)

describe("Resume", () => {
  it.live("a client dropped at 1,000 points drawn from a seed reconnects with Last-Event-ID and reads exactly the events after it, none lost or repeated", () =>
    Effect.gen(function*() {
      const { store, url } = yield* serve(Script.replies(8, false))
      yield* request(url, "/sessions", { token: "tok-alice", body: { id: "long" } })
      const ran = yield* request(url, "/sessions/long/runs", { token: "tok-alice", body: { prompt: "check everything" } })
      assert.deepStrictEqual([ran.status, ran.body.outcome, ran.body.turns], [200, "completed", 9])
      const last: number = ran.body.lastEventId
      const expected = asFrames(yield* whole(store, "long"))
      assert.deepStrictEqual(expected.map((frame) => frame.id), Array.from({ length: last }, (_, i) => i + 1))
      assert.isAbove(last, 500)
      const tags = new Set(expected.map((frame) => frame.event))
      assert.deepStrictEqual(["AgentStart", "TextDelta", "ToolCall", "ToolResult", "TurnEnd", "AgentEnd"].filter((tag) => !tags.has(tag)), [])
      // The whole stream from its start, as a client with no Last-Event-ID reads it.
      assert.deepStrictEqual(yield* readAfter(url, "long", undefined, last), { status: 200, frames: expected })

      const random = seeded(40)
      const drops = Array.from({ length: 1_000 }, () => {
        const after = Math.floor(random() * (last + 1))
        return { after, count: Math.min(last - after, Math.floor(random() * 40)) }
      })
      const wrong = yield* Effect.forEach(drops, ({ after, count }) =>
        Effect.map(readAfter(url, "long", after, count), (read) => {
          const want = { status: 200, frames: expected.slice(after, after + count) }
          return JSON.stringify(read) === JSON.stringify(want) ? [] : [{ after, count, read, want }]
        }), { concurrency: 16 })
      assert.deepStrictEqual(wrong.flat(), [])
    }), { timeout: 60_000 })

  it.live("a client reading a live run, dropped after a few events again and again, reads the run once, whole", () =>
    Effect.gen(function*() {
      const { store, url } = yield* serve(Script.replies(6, false))
      yield* request(url, "/sessions", { token: "tok-alice", body: { id: "live" } })
      const run = yield* Effect.forkChild(request(url, "/sessions/live/runs", { token: "tok-alice", body: { prompt: "go" } }))
      const random = seeded(7)
      const read: Array<Frame> = []
      while (read.at(-1)?.event !== "AgentEnd") {
        const got = yield* Effect.scoped(Effect.gen(function*() {
          const stream = yield* open(url, "/sessions/live/events", { token: "tok-alice", lastEventId: String(read.at(-1)?.id ?? 0) })
          const got: Array<Frame> = []
          const count = 1 + Math.floor(random() * 12)
          while (got.length < count && got.at(-1)?.event !== "AgentEnd") got.push(yield* stream.next)
          return got
        }))
        read.push(...got)
      }
      const ran = yield* Fiber.join(run)
      assert.strictEqual(ran.body.outcome, "completed")
      assert.deepStrictEqual(read, asFrames(yield* whole(store, "live")))
    }), { timeout: 60_000 })

  it.live("a server killed with SIGKILL mid-run and started again on its SQLite file serves the client back with its Last-Event-ID exactly the events after it; the session is still its principal's, with its history", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "condukt.db")
      const start = (...mode: ReadonlyArray<string>) => Effect.gen(function*() {
        const child = yield* storeWriter([file, ...mode], fixture)
        const ready = yield* child.next
        assert.match(ready, /^ready http:\/\/127\.0\.0\.1:\d+$/)
        return { child, url: ready.slice("ready ".length) }
      })
      const first = yield* start()
      assert.strictEqual((yield* request(first.url, "/sessions", { token: "tok-alice", body: { id: "s1" } })).status, 201)
      const seen = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* open(first.url, "/sessions/s1/runs/stream", { token: "tok-alice", body: { prompt: "deploy it" } })
        assert.strictEqual(stream.status, 200)
        const seen = yield* frames(stream, 30)
        // Mid-run: another reader of the session finds the run waiting for the approval of `deploy` when the process dies.
        const watcher = yield* open(first.url, "/sessions/s1/events", { token: "tok-alice" })
        while ((yield* watcher.next).event !== "ApprovalRequested");
        const pending = yield* request(first.url, "/sessions/s1/approvals", { token: "tok-alice" })
        assert.deepStrictEqual(pending.body, [{ callId: "d1", tool: "deploy", input: { target: "prod" } }])
        yield* first.child.kill
        assert.match(yield* first.child.next, /^exited null/)
        return seen
      }))

      const second = yield* start("continue")
      const lastSeen = seen.at(-1)!.id
      const kept = yield* whole(yield* sqlStore(file), "s1")
      assert.strictEqual(kept.at(-1)!.event._tag, "ApprovalRequested")
      assert.isAbove(kept.length, lastSeen + 10)
      assert.deepStrictEqual(seen, asFrames(kept.slice(0, lastSeen)))
      const resumed = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* open(second.url, "/sessions/s1/events", { token: "tok-alice", lastEventId: String(lastSeen) })
        return { status: stream.status, frames: yield* frames(stream, kept.length - lastSeen) }
      }))
      assert.deepStrictEqual(resumed, { status: 200, frames: asFrames(kept.slice(lastSeen)) })

      const mine = yield* request(second.url, "/sessions/s1", { token: "tok-alice" })
      assert.deepStrictEqual([mine.status, mine.body.id, mine.body.principal, mine.body.agent, mine.body.lastEventId], [200, "s1", "alice", "ops", kept.length])
      for (const route of ["", "/history", "/events"]) {
        const theirs = yield* request(second.url, `/sessions/s1${route}`, { token: "tok-bob" })
        const nobody = yield* request(second.url, `/sessions/nothing${route}`, { token: "tok-bob" })
        assert.deepStrictEqual(theirs, { status: 404, body: { ...nobody.body, message: nobody.body.message.replace("nothing", "s1") } })
      }
      const history = yield* request(second.url, "/sessions/s1/history", { token: "tok-alice" })
      assert.strictEqual(history.status, 200)
      assert.deepStrictEqual(history.body[0], { _tag: "UserMessage", content: "deploy it" })
      assert.deepStrictEqual(history.body.map((message: any) => message._tag), [
        "UserMessage",
        ...Array.from({ length: 3 }, () => ["AssistantMessage", "ToolResultMessage"]).flat(),
        "AssistantMessage"
      ])

      // Approved through the new process: the run the first one parked goes on, and its events reach
      // the stream after the last kept, to its end.
      const continued = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* open(second.url, "/sessions/s1/events", { token: "tok-alice", lastEventId: String(kept.length) })
        assert.strictEqual((yield* request(second.url, "/sessions/s1/approvals/d1", { token: "tok-alice", body: { approved: true } })).status, 204)
        const tags: Array<string> = []
        while (tags.at(-1) !== "AgentEnd") tags.push((yield* stream.next).event)
        return tags
      }))
      assert.deepStrictEqual(continued.filter((tag) => tag !== "TextDelta"), ["AgentStart", "ToolCall", "ToolResult", "TurnStart", "TurnEnd", "AgentEnd"])
      const after = yield* request(second.url, "/sessions/s1/history", { token: "tok-alice" })
      assert.deepStrictEqual(after.body.slice(-2).map((message: any) => message._tag), ["ToolResultMessage", "AssistantMessage"])
    }), { timeout: 60_000 })

  it.live("an id before the kept window is a 410 saying how to read the session again; the one just before the window resumes", () =>
    Effect.gen(function*() {
      const { url } = yield* serve(Script.replies(1, false), { window: 5 })
      yield* request(url, "/sessions", { token: "tok-alice", body: { id: "s" } })
      const ran = yield* request(url, "/sessions/s/runs", { token: "tok-alice", body: { prompt: "go" } })
      const last: number = ran.body.lastEventId
      const oldest = last - 4
      const gone = yield* request(url, "/sessions/s/events", { token: "tok-alice", lastEventId: "1" })
      assert.deepStrictEqual(gone, {
        status: 410,
        body: {
          _tag: "Gone",
          message: `events after 1 are no longer kept (the oldest kept is ${oldest}): read the conversation with GET /sessions/{id}/history, then follow the events from ${last}`,
          oldest
        }
      })
      const edge = yield* readAfter(url, "s", oldest - 1, 5)
      assert.deepStrictEqual([edge.status, edge.frames.map((frame) => frame.id)], [200, [oldest, oldest + 1, oldest + 2, oldest + 3, last]])
      assert.strictEqual(edge.frames.at(-1)!.event, "AgentEnd")
      // No Last-Event-ID: from the oldest kept.
      const fresh = yield* readAfter(url, "s", undefined, 5)
      assert.deepStrictEqual(fresh, edge)
    }))

  it.live("a Last-Event-ID that is not the number of an event the server sent (-1, 1e309, text, past the last) is a 400 saying so", () =>
    Effect.gen(function*() {
      const { url } = yield* serve(Script.replies(0, false))
      yield* request(url, "/sessions", { token: "tok-alice", body: { id: "s" } })
      const ran = yield* request(url, "/sessions/s/runs", { token: "tok-alice", body: { prompt: "go" } })
      const last: number = ran.body.lastEventId
      const answers = yield* Effect.forEach(["-1", "1e309", "abc", String(last + 1)], (lastEventId) => request(url, "/sessions/s/events", { token: "tok-alice", lastEventId }))
      const digitsOnly = (value: string) => `Last-Event-ID must be the number of an event this server sent (digits only), not ${JSON.stringify(value)}`
      assert.deepStrictEqual(answers, [
        { status: 400, body: { _tag: "BadRequest", message: digitsOnly("-1") } },
        { status: 400, body: { _tag: "BadRequest", message: digitsOnly("1e309") } },
        { status: 400, body: { _tag: "BadRequest", message: digitsOnly("abc") } },
        { status: 400, body: { _tag: "BadRequest", message: `no event ${last + 1} was sent in this session yet (the last is ${last})` } }
      ])
    }))
})

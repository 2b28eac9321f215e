/**
 * The server in front of the cluster (issue 40, "streams that resume … across two runners"): two
 * runner processes (fixtures/clusterServer.ts) on one database, on SQLite and on a real Postgres
 * (the cluster's support/embeddedPostgres.ts), each serving HTTP with `Server.layerById` over the
 * cluster's `Sessions.ById` and the server's records in the same database (`SqlServerStore`).
 *
 * A principal starts a session through runner A's server and streams a run that waits for an
 * approval halfway; the client drops mid-stream and reconnects to runner B's server with its
 * `Last-Event-ID`: it reads exactly the events after it, those written before the reconnect and
 * those after (the approval, answered through B, lets the run finish), for a session held by each
 * runner; the session holds the run's events once (B, answering, follows no run A's server reads).
 * On B, another principal's requests are answered as for a session that does not exist. A second
 * run's stream hops from runner to runner, dropped after a few events each time (drawn from a
 * seed): the client reads the run once, whole. And the runner holding a session dies while its run
 * waits and its client reads on that runner's server: resumed on the survivor's, the client reads
 * every event once and the run's end.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import * as path from "node:path"
import { EmbeddedPostgres, layer as embeddedPostgres } from "../../cluster/test/support/embeddedPostgres.ts"
import { TempDir } from "@condukt/testing"
import * as Script from "./fixtures/clusterScript.ts"
import { twoServers } from "./fixtures/clusterServers.ts"
import { type Frame, open, request } from "./fixtures/sseClient.ts"

const tempDir = TempDir.make("condukt-store-")

const alice = "tok-alice"
const bob = "tok-bob"

/** The frames of `reader` up to the first one `stop` picks, that one included. */
const until = (reader: { readonly next: Effect.Effect<Frame> }, stop: (frame: Frame) => boolean) =>
  Effect.gen(function*() {
    const frames: Array<Frame> = []
    while (true) {
      const frame = yield* reader.next
      frames.push(frame)
      if (stop(frame)) return frames
    }
  })

const isEnd = (frame: Frame) => frame.event === "AgentEnd"

/** The sessions alice starts through `url` until one is held by each runner (their model says which). */
const oneOnEach = (url: string) =>
  Effect.gen(function*() {
    const held: Record<string, string> = {}
    for (let i = 0; held.a === undefined || held.b === undefined; i++) {
      assert.isBelow(i, 32, `every session so far is on one runner: ${JSON.stringify(held)}`)
      const id = `s${i}`
      const started = yield* request(url, "/sessions", { token: alice, body: { id } })
      assert.strictEqual(started.status, 201, JSON.stringify(started.body))
      const ran = yield* request(url, `/sessions/${id}/runs`, { token: alice, body: { prompt: "whoami" } })
      assert.strictEqual(ran.status, 200, JSON.stringify(ran.body))
      held[ran.body.text] ??= id
    }
    return { a: held.a!, b: held.b! }
  })

/**
 * Session `id`'s `deploy` run streamed through A, dropped after `drop` events, resumed on B after
 * the last one seen, answered on B: what each stream read, and the whole run read again from A.
 */
const resumedOnB = (urls: { readonly a: string; readonly b: string }, id: string, drop: number) =>
  Effect.scoped(Effect.gen(function*() {
    const prompt = `deploy ${id}`
    const onA = yield* Effect.scoped(Effect.gen(function*() {
      const stream = yield* open(urls.a, `/sessions/${id}/runs/stream`, { token: alice, body: { prompt } })
      assert.strictEqual(stream.status, 200, stream.body)
      const frames: Array<Frame> = []
      for (let i = 0; i < drop; i++) frames.push(yield* stream.next)
      return frames
    }))
    const events = yield* open(urls.b, `/sessions/${id}/events`, { token: alice, lastEventId: String(onA.at(-1)!.id) })
    assert.strictEqual(events.status, 200, events.body)
    const asked = yield* until(events, (frame) => frame.event === "ApprovalRequested")
    const answered = yield* request(urls.b, `/sessions/${id}/approvals/call_1`, { token: alice, body: { approved: true } })
    assert.strictEqual(answered.status, 204, JSON.stringify(answered.body))
    const onB = [...asked, ...(yield* until(events, isEnd))]
    // The whole session read again (the `whoami` run, then this one), from A.
    const all = yield* open(urls.a, `/sessions/${id}/events`, { token: alice })
    const whoami = yield* until(all, isEnd)
    const run = yield* until(all, isEnd)
    return { onA, onB, whoami, run, prompt }
  }))

/** A UI message stream's chunks, read to its end (`[DONE]`). */
const uiChunks = (response: Response) =>
  Effect.promise(async () => {
    const text = await response.text()
    return text.split("\n\n").flatMap((frame) => (frame.startsWith("data: ") && frame !== "data: [DONE]" ? [JSON.parse(frame.slice(6)) as { type: string; finishReason?: string }] : []))
  })

/**
 * A chat on runner B while A's server reads its run: the resume on B shows the run waiting for the
 * approval (not a 204), and the chat's answer given on B continues the message to the run's end.
 */
const chatOnB = (urls: { readonly a: string; readonly b: string }, id: string) =>
  Effect.scoped(Effect.gen(function*() {
    const prompt = `deploy ${id}`
    const onA = yield* open(urls.a, `/sessions/${id}/runs/stream`, { token: alice, body: { prompt } })
    yield* until(onA, (frame) => frame.event === "ApprovalRequested")
    const headers = { authorization: `Bearer ${alice}`, "content-type": "application/json" }
    const resumed = yield* Effect.promise(() => fetch(`${urls.b}/chat/${id}/stream`, { headers }))
    assert.strictEqual(resumed.status, 200)
    const waiting = yield* uiChunks(resumed)
    assert.deepStrictEqual(waiting.filter((chunk) => chunk.type === "tool-approval-request" || chunk.type === "finish"), [
      { type: "tool-approval-request", approvalId: "call_1", toolCallId: "call_1" } as never,
      { type: "finish", finishReason: "tool-calls" }
    ])
    const body = {
      id,
      trigger: "submit-message",
      messages: [
        { id: "m1", role: "user", parts: [{ type: "text", text: prompt }] },
        { id: "m2", role: "assistant", parts: [{ type: "tool-deploy", toolCallId: "call_1", state: "approval-responded", input: { target: id }, approval: { id: "call_1", approved: true } }] }
      ]
    }
    const answered = yield* Effect.promise(() => fetch(`${urls.b}/chat`, { method: "POST", headers, body: JSON.stringify(body) }))
    assert.strictEqual(answered.status, 200)
    const rest = yield* uiChunks(answered)
    assert.deepStrictEqual(rest.at(-1), { type: "finish", finishReason: "stop" })
    assert.isTrue(rest.some((chunk) => chunk.type === "tool-output-available"))
    assert.strictEqual((yield* until(onA, isEnd)).at(-1)!.data.outcome, "completed")
  }))

/** Numbers in [1, max] drawn from a seed (xorshift32): the same seed, the same numbers (a failure names its seed). */
const draws = (seed: number) => {
  let state = seed >>> 0 || 1
  return (max: number) => {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    return 1 + (state % max)
  }
}

/**
 * A second `deploy` run of session `id`, its stream started on A and dropped after 1 to 4 events,
 * again and again, each time resumed after its `Last-Event-ID` on the other runner's server; the
 * approval answered on the server the client is on when it reads the request. The frames each
 * connection read, and the run read again whole from B (the session's third).
 */
const hopping = (urls: { readonly a: string; readonly b: string }, id: string, seed: number) =>
  Effect.gen(function*() {
    const draw = draws(seed)
    const reads: Array<ReadonlyArray<Frame>> = []
    let last: Frame | undefined
    for (let hop = 0; last?.event !== "AgentEnd"; hop++) {
      const url = hop % 2 === 0 ? urls.a : urls.b
      const frames = yield* Effect.scoped(Effect.gen(function*() {
        const stream = last === undefined
          ? yield* open(url, `/sessions/${id}/runs/stream`, { token: alice, body: { prompt: `deploy ${id}` } })
          : yield* open(url, `/sessions/${id}/events`, { token: alice, lastEventId: String(last.id) })
        assert.strictEqual(stream.status, 200, `seed ${seed}: ${stream.body}`)
        const frames: Array<Frame> = []
        for (let count = draw(4); frames.length < count && frames.at(-1)?.event !== "AgentEnd";) {
          const frame = yield* stream.next
          frames.push(frame)
          if (frame.event !== "ApprovalRequested") continue
          const answered = yield* request(url, `/sessions/${id}/approvals/call_1`, { token: alice, body: { approved: true } })
          assert.strictEqual(answered.status, 204, `seed ${seed}: ${JSON.stringify(answered.body)}`)
        }
        return frames
      }))
      reads.push(frames)
      last = frames.at(-1)
    }
    const again = yield* Effect.scoped(Effect.gen(function*() {
      const all = yield* open(urls.b, `/sessions/${id}/events`, { token: alice })
      yield* until(all, isEnd)
      yield* until(all, isEnd)
      return yield* until(all, isEnd)
    }))
    return { reads, run: again }
  })

/** Session `id` as `url`'s server has it once no run it started runs (polled, 50 ms apart, for at most 10 s). */
const idle = (url: string, id: string) =>
  request(url, `/sessions/${id}`, { token: alice }).pipe(
    Effect.flatMap((got) => got.body.running === false ? Effect.succeed(got.body) : Effect.fail(`still running: ${JSON.stringify(got.body)}`)),
    Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 200 })
  )

/** The events of session `id` after `from` up to `to`, as `event seq runId` (what a run wrote past its end). */
const extra = (url: string, id: string, from: number, to: number) =>
  Effect.scoped(Effect.gen(function*() {
    if (to <= from) return []
    const events = yield* open(url, `/sessions/${id}/events`, { token: alice, lastEventId: String(from) })
    const frames: Array<string> = []
    while (frames.length < to - from) {
      const frame = yield* events.next
      frames.push(`${frame.id} ${frame.event} seq ${frame.data.seq} run ${frame.data.runId}`)
    }
    return frames
  }))

/** Another principal's requests to B for alice's session `id`, and the same for a session nobody started. */
const isolatedOnB = (url: string, id: string) =>
  Effect.gen(function*() {
    for (const [method, route, body] of [
      ["GET", "", undefined],
      ["GET", "/history", undefined],
      ["GET", "/events", undefined],
      ["GET", "/approvals", undefined],
      ["POST", "/approvals/call_1", { approved: true }],
      ["POST", "/runs", { prompt: "whoami" }],
      ["POST", "/runs/stream", { prompt: "whoami" }],
      ["POST", "/abort", undefined],
      ["DELETE", "", undefined]
    ] as const) {
      const theirs = yield* request(url, `/sessions/${id}${route}`, { method, token: bob, body })
      const nobody = yield* request(url, `/sessions/nobody${route}`, { method, token: bob, body })
      assert.deepStrictEqual(
        [theirs.status, theirs.body],
        [404, { ...nobody.body, message: nobody.body.message.replace("nobody", id) }],
        `${method} /sessions/${id}${route}`
      )
    }
    assert.deepStrictEqual(yield* request(url, "/sessions", { token: bob }), { status: 200, body: { sessions: [] } })
  })

const acrossTwoRunners = (kind: "sqlite" | "pg", location: string) =>
  Effect.gen(function*() {
    const { urls } = yield* twoServers(kind, location)
    const held = yield* oneOnEach(urls.a)
    for (const [id, drop] of [[held.a, 3], [held.b, 9]] as const) {
      const { onA, onB, prompt, run, whoami } = yield* resumedOnB(urls, id, drop)
      // Numbered 1.. in the session, one after another; A's and B's streams make the run, once each.
      assert.deepStrictEqual([...whoami, ...run].map((frame) => frame.id), Array.from({ length: whoami.length + run.length }, (_, i) => i + 1))
      assert.deepStrictEqual([...onA, ...onB], run)
      assert.strictEqual(onA.length, drop)
      // The run, as the script makes it: its text, its events, its end.
      assert.deepStrictEqual(
        run.flatMap((frame) => (frame.event === "TextDelta" ? [frame.data.text] : [])),
        [...Script.deltas(prompt, "first"), ...Script.deltas(prompt, "last")]
      )
      assert.deepStrictEqual(run.filter((frame) => frame.event !== "TextDelta").map((frame) => frame.event), EVENTS)
      assert.deepStrictEqual(run.at(-1)!.data.outcome, "completed")
      // Once A's server read the run's stream to its end, the session holds this run's events and no more.
      const after = yield* idle(urls.a, id)
      assert.deepStrictEqual(yield* extra(urls.b, id, run.at(-1)!.id, after.lastEventId), [])
      const history = yield* request(urls.b, `/sessions/${id}/history`, { token: alice })
      assert.deepStrictEqual(history.body.map((message: { _tag: string }) => message._tag), [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage"
      ])
      yield* isolatedOnB(urls.b, id)

      const seed = Math.floor(Math.random() * 2 ** 32)
      const hopped = yield* hopping(urls, id, seed).pipe(Effect.onError(() => Effect.logError(`hopping between the runners with seed ${seed}`)))
      assert.deepStrictEqual(hopped.reads.flat(), hopped.run, `seed ${seed}: connections of ${hopped.reads.map((frames) => frames.length).join(", ")} events`)
      assert.isAbove(hopped.reads.length, 8, `seed ${seed}`)
      assert.deepStrictEqual(hopped.run.filter((frame) => frame.event !== "TextDelta").map((frame) => frame.event), EVENTS)
      assert.deepStrictEqual(hopped.run.map((frame) => frame.id), Array.from({ length: hopped.run.length }, (_, i) => run.at(-1)!.id + 1 + i))
    }
    yield* chatOnB(urls, held.b)
    // Alice's sessions, as B's server lists them: those she started through A.
    const listed = yield* request(urls.b, "/sessions", { token: alice })
    assert.includeMembers(listed.body.sessions.map((session: { id: string }) => session.id), [held.a, held.b])
  })

/**
 * Runner B, holding a session whose run A's server streams, is killed (`kill -9`) while the run
 * waits for approval and the client reads it on B's server: the client resumes on A's server after
 * its `Last-Event-ID` and answers there. The session moves to A, where the answer continues the
 * run; the stream A's server reads was the dead runner's, sent again to A, which cannot replay what
 * the run made since (ADR 0072): it ends with an `Error` and a failed `AgentEnd`, written once,
 * and the history holds the run's reply.
 */
const killedWhileWaiting = (kind: "sqlite" | "pg", location: string) =>
  Effect.gen(function*() {
    const { runners, urls } = yield* twoServers(kind, location)
    const id = (yield* oneOnEach(urls.a)).b
    const prompt = `deploy ${id}`
    const read = yield* Effect.scoped(Effect.gen(function*() {
      const first = yield* Effect.scoped(Effect.flatMap(open(urls.a, `/sessions/${id}/runs/stream`, { token: alice, body: { prompt } }), (stream) => Effect.all([stream.next, stream.next])))
      const onB = yield* open(urls.b, `/sessions/${id}/events`, { token: alice, lastEventId: String(first[1].id) })
      return [...first, ...(yield* until(onB, (frame) => frame.event === "ApprovalRequested"))]
    }))
    yield* runners.b.kill
    assert.match(yield* runners.b.next, /^exited null: /)
    const rest = yield* Effect.scoped(Effect.gen(function*() {
      const onA = yield* open(urls.a, `/sessions/${id}/events`, { token: alice, lastEventId: String(read.at(-1)!.id) })
      assert.strictEqual(onA.status, 200, onA.body)
      const answered = yield* request(urls.a, `/sessions/${id}/approvals/call_1`, { token: alice, body: { approved: true } })
      assert.strictEqual(answered.status, 204, JSON.stringify(answered.body))
      return yield* until(onA, isEnd)
    }))
    const run = [...read, ...rest]
    assert.deepStrictEqual(run.map((frame) => frame.id), Array.from({ length: run.length }, (_, i) => read[0]!.id + i))
    assert.deepStrictEqual(run.map((frame) => frame.event).filter((event) => event !== "TextDelta"), ["AgentStart", "TurnStart", "TurnEnd", "ToolCall", "ApprovalRequested", "Error", "AgentEnd"])
    assert.deepStrictEqual(rest.map((frame) => [frame.data.seq, frame.data.runId]), [[-1, read[0]!.data.runId], [-1, read[0]!.data.runId]])
    assert.strictEqual(rest[1]!.data.outcome, "failed")
    assert.deepStrictEqual((yield* idle(urls.a, id)).lastEventId, run.at(-1)!.id)
    const history = yield* request(urls.a, `/sessions/${id}/history`, { token: alice })
    assert.deepStrictEqual(history.body.slice(2).map((message: { _tag: string }) => message._tag), ["UserMessage", "AssistantMessage", "ToolResultMessage", "AssistantMessage"])
    assert.deepStrictEqual(history.body.at(-1).parts, [{ _tag: "Text", text: Script.deltas(prompt, "last").join("") }])
  })

/**
 * Runner A, whose server reads a run of a session runner B holds, is killed (`kill -9`) mid-run: no
 * server is left reading the run, which the cluster ends with its dead caller. B's server refuses
 * a new run while A's lease stands (409); once it lapsed, B's server, looking at the session,
 * closes the run left open with an `Error` and an `AgentEnd` of its own, before the next run's
 * events: a reader never takes the new run's end for the old one's.
 */
const readerKilled = (kind: "sqlite" | "pg", location: string) =>
  Effect.gen(function*() {
    const { runners, urls } = yield* twoServers(kind, location)
    const id = (yield* oneOnEach(urls.a)).b
    const read = yield* Effect.scoped(Effect.gen(function*() {
      const stream = yield* open(urls.a, `/sessions/${id}/runs/stream`, { token: alice, body: { prompt: `deploy ${id}` } })
      return yield* until(stream, (frame) => frame.event === "ApprovalRequested")
    }))
    yield* runners.a.kill
    assert.match(yield* runners.a.next, /^exited null: /)
    // A's lease still stands: B refuses a run beside the one A read.
    const beside = yield* request(urls.b, `/sessions/${id}/runs`, { token: alice, body: { prompt: "whoami" } })
    assert.strictEqual(beside.status, 409, JSON.stringify(beside.body))
    // Looked at once the lease lapsed, the session shows the run closed (no run needed for it).
    let state = yield* request(urls.b, `/sessions/${id}`, { token: alice })
    for (let i = 0; state.body.running === true && i < 100; i++) {
      yield* Effect.sleep("200 millis")
      state = yield* request(urls.b, `/sessions/${id}`, { token: alice })
    }
    assert.isFalse(state.body.running)
    const ran = yield* request(urls.b, `/sessions/${id}/runs`, { token: alice, body: { prompt: "whoami" } })
    assert.strictEqual(ran.status, 200, JSON.stringify(ran.body))
    const after = yield* Effect.scoped(Effect.gen(function*() {
      const onB = yield* open(urls.b, `/sessions/${id}/events`, { token: alice, lastEventId: String(read.at(-1)!.id) })
      return [...(yield* until(onB, isEnd)), ...(yield* until(onB, isEnd))]
    }))
    assert.deepStrictEqual(after.map((frame) => [frame.event, frame.data.seq === -1]).slice(0, 3), [["Error", true], ["AgentEnd", true], ["AgentStart", false]])
    assert.deepStrictEqual([after[0]!.data.runId, after[1]!.data.runId], [read[0]!.data.runId, read[0]!.data.runId])
    assert.deepStrictEqual([after.at(-1)!.event, after.at(-1)!.data.outcome, after.at(-1)!.data.runId], ["AgentEnd", "completed", ran.body.runId])
  })

/** The events of a `deploy` run but its text deltas, in order. */
const EVENTS = ["AgentStart", "TurnStart", "TurnEnd", "ToolCall", "ApprovalRequested", "ToolResult", "TurnStart", "TurnEnd", "AgentEnd"]

describe("Server in front of the cluster, two runners on one SQLite file", () => {
  it.live("the server reading a run killed with its runner: another server refuses a run beside it while its lease stands, then closes it (Error, AgentEnd) before the next run's events", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      yield* readerKilled("sqlite", path.join(dir, "cluster.db"))
    })), 120_000)

  it.live("a stream started on runner A, dropped, resumes on runner B after Last-Event-ID: every event after it once, the approval answered on B; one hopping between the runners reads its run once; another principal reads 404s on B", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      yield* acrossTwoRunners("sqlite", path.join(dir, "cluster.db"))
    })), 120_000)

  it.live("kill -9 of the runner holding a session waiting for approval, its client on that runner's server: resumed on the other's, every event after Last-Event-ID once and the run's end; answered there, the run completes in the history", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      yield* killedWhileWaiting("sqlite", path.join(dir, "cluster.db"))
    })), 120_000)
})

layer(embeddedPostgres, { excludeTestServices: true, timeout: "90 seconds" })("Server in front of the cluster, two runners on Postgres", (it) => {
  it.effect("a stream started on runner A, dropped, resumes on runner B after Last-Event-ID: every event after it once, the approval answered on B; one hopping between the runners reads its run once; another principal reads 404s on B", () =>
    Effect.scoped(Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      yield* acrossTwoRunners("pg", `${postgres.socketDir}:${database}`)
    })), { timeout: 120_000 })

  it.effect("kill -9 of the runner holding a session waiting for approval, its client on that runner's server: resumed on the other's, every event after Last-Event-ID once and the run's end; answered there, the run completes in the history", () =>
    Effect.scoped(Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      yield* killedWhileWaiting("pg", `${postgres.socketDir}:${database}`)
    })), { timeout: 120_000 })
})

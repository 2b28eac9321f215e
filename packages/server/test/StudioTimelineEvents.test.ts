/**
 * The timeline's events before any page draws them: the reducer (studio/src/timeline.ts: events →
 * runs → turns and calls, sub-agents nested by `parentCallId`, each SSE id taken once, bounded,
 * an event not shaped as its tag left out) and the page's events reader (studio/src/client.ts,
 * over a crafted stream on loopback: frames however the bytes are cut, a frame it cannot read
 * skipped, a drop resumed with `Last-Event-ID`, a refusal final). The page itself:
 * StudioTimeline.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import * as Client from "../studio/src/client.ts"
import * as Timeline from "../studio/src/timeline.ts"
import type { StreamedEvent } from "../studio/src/types.ts"

let nextId = 0
/** An event of session `s1` as the stream sends it, numbered in order. */
const ev = (event: Record<string, unknown>, at = 1000 + nextId): StreamedEvent =>
  ({ sessionId: "s1", runId: "r1", seq: nextId, ...event, id: ++nextId, at }) as unknown as StreamedEvent

/** A run of the main agent calling a researcher sub-agent (nested by `parentCallId`) and Bash, which fails. */
const script = (): StreamedEvent[] => {
  nextId = 0
  const sub = { sessionId: "s2", runId: "r9", agentPath: ["main", "researcher"], parentCallId: "c1" }
  return [
    ev({ _tag: "AgentStart", prompt: "Find and fix" }),
    ev({ _tag: "TurnStart", turn: 1 }),
    ev({ _tag: "ThinkingDelta", text: "Ask the " }),
    ev({ _tag: "ThinkingDelta", text: "researcher." }),
    ev({ _tag: "TextDelta", text: "Asking." }),
    ev({ _tag: "TurnEnd", turn: 1, usage: { inputTokens: 10, outputTokens: 5 } }),
    ev({ _tag: "ToolCall", callId: "c1", name: "researcher", input: { prompt: "look" } }),
    ev({ _tag: "ToolCall", callId: "c2", name: "Bash", input: { command: "false" } }),
    ev({ _tag: "ApprovalRequested", callId: "c2", tool: "Bash", input: { command: "false" } }),
    ev({ ...sub, _tag: "AgentStart", prompt: "look" }),
    ev({ ...sub, _tag: "TurnStart", turn: 1 }),
    ev({ ...sub, _tag: "TextDelta", text: "Found it." }),
    ev({ ...sub, _tag: "TurnEnd", turn: 1, usage: { inputTokens: 3, outputTokens: 2 } }),
    ev({ ...sub, _tag: "AgentEnd", outcome: "completed" }),
    ev({ _tag: "ToolResult", callId: "c1", name: "researcher", content: "Found it.", isError: false }),
    ev({ _tag: "ToolResult", callId: "c2", name: "Bash", content: "exit 1", isError: true }),
    ev({ _tag: "TurnStart", turn: 2 }),
    ev({ _tag: "Error", message: "model failed" }),
    ev({ _tag: "AgentEnd", outcome: "failed" })
  ]
}

const expected: Timeline.Timeline = {
  runs: [{
    key: "s1 r1",
    sessionId: "s1",
    runId: "r1",
    agentPath: [],
    prompt: "Find and fix",
    startedAt: 1000,
    endedAt: 1018,
    outcome: "failed",
    errors: [{ message: "model failed", at: 1017 }],
    notes: [],
    turns: [
      {
        turn: 1,
        startedAt: 1001,
        endedAt: 1005,
        text: "Asking.",
        thinking: "Ask the researcher.",
        usage: { inputTokens: 10, outputTokens: 5 },
        retries: 0,
        calls: [
          {
            callId: "c1",
            name: "researcher",
            input: { prompt: "look" },
            startedAt: 1006,
            endedAt: 1014,
            result: "Found it.",
            isError: false,
            secrets: [],
            agents: [{
              key: "s2 r9",
              sessionId: "s2",
              runId: "r9",
              agentPath: ["main", "researcher"],
              prompt: "look",
              startedAt: 1009,
              endedAt: 1013,
              outcome: "completed",
              errors: [],
              notes: [],
              turns: [{ turn: 1, startedAt: 1010, endedAt: 1012, text: "Found it.", thinking: "", usage: { inputTokens: 3, outputTokens: 2 }, retries: 0, calls: [] }]
            }]
          },
          {
            callId: "c2",
            name: "Bash",
            input: { command: "false" },
            startedAt: 1007,
            endedAt: 1015,
            result: "exit 1",
            isError: true,
            approval: { requestedAt: 1008 },
            secrets: [],
            agents: []
          }
        ]
      },
      { turn: 2, startedAt: 1016, endedAt: 1018, text: "", thinking: "", retries: 0, calls: [] }
    ]
  }],
  events: 19,
  lastId: 19,
  from: 1000,
  to: 1018,
  truncated: false
}

describe("the timeline of a session's events (studio/src/timeline.ts)", () => {
  it("nests turns, calls and a sub-agent's run under the call that started it, with input, result, approval and errors", () => {
    assert.deepStrictEqual(Timeline.build(script()), expected)
  })

  it("reads every event once however often it came, in whatever order (a reload, a resumed stream)", () => {
    const events = script()
    const twice = [...events.slice(5), ...events, ...events.slice(0, 9).reverse()]
    assert.deepStrictEqual(Timeline.build(twice), expected)
  })

  it("gives each call its state: running, waiting for an answer, done or failed", () => {
    const events = script()
    const [run] = Timeline.build(events.slice(0, 9)).runs
    assert.deepStrictEqual(run!.turns[0]!.calls.map(Timeline.callState), ["running", "waiting"])
    const [done] = Timeline.build(events).runs
    assert.deepStrictEqual(done!.turns[0]!.calls.map(Timeline.callState), ["ok", "error"])
  })

  it("notes a run still waiting for an answer, naming the calls", () => {
    const events = script().slice(0, 9)
    nextId = 9
    const { runs } = Timeline.build([...events, ev({ _tag: "StillWaiting", calls: [{ callId: "c2", tool: "Bash" }], waitedMs: 30_400 })])
    assert.deepStrictEqual(runs[0]!.notes, ["still waiting after 30 s for an answer to Bash (c2)"])
  })

  it("notes an MCP server stopped by the session, and one its supervisor gave up, apart", () => {
    const events = script().slice(0, 9)
    nextId = 9
    const { runs } = Timeline.build([
      ...events,
      ev({ _tag: "McpServerStopped", server: "docs" }),
      ev({ _tag: "McpServerStopped", server: "fx", reason: { _tag: "SupervisorGaveUp", server: "fx", maxRestarts: 3, periodMs: 5000 } })
    ])
    assert.deepStrictEqual(runs[0]!.notes, [
      "MCP server docs stopped",
      "MCP server fx stopped for good: fx was given up after 3 restarts within 5s"
    ])
  })

  it("ends what a run left open with the run: a turn cut short, a call without its result an error", () => {
    const events = script().slice(0, 9)
    nextId = 9
    const { runs } = Timeline.build([...events, ev({ _tag: "AgentEnd", outcome: "aborted" }, 2000)])
    const turn = runs[0]!.turns[0]!
    assert.deepStrictEqual(
      { outcome: runs[0]!.outcome, turn: turn.endedAt, calls: turn.calls.map((call) => [call.endedAt, Timeline.callState(call)]) },
      { outcome: "aborted", turn: 1005, calls: [[2000, "error"], [2000, "error"]] }
    )
  })

  it("keeps a sub-agent whose call is not in the stream apart, not lost", () => {
    nextId = 0
    const orphan = ev({ sessionId: "s3", runId: "r3", agentPath: ["main", "helper"], parentCallId: "gone", _tag: "AgentStart", prompt: "hi" })
    const { runs } = Timeline.build([orphan])
    assert.deepStrictEqual(runs.map((run) => [run.key, run.turns[0]!.calls[0]!.callId, run.turns[0]!.calls[0]!.agents.map((agent) => agent.key)]), [["orphans", "gone", ["s3 r3"]]])
  })

  it("leaves out an event not shaped as its tag says, and says something was left out", () => {
    const events = script()
    const broken = { ...events[4]!, _tag: "AgentStart" } as StreamedEvent // an AgentStart with no prompt
    const timeline = Timeline.build([...events.slice(0, 4), broken, ...events.slice(5)])
    assert.deepStrictEqual({ truncated: timeline.truncated, text: timeline.runs[0]!.turns[0]!.text }, { truncated: true, text: "" })
  })

  it("bounds a turn's text however much streams", () => {
    nextId = 0
    const chunk = "x".repeat(100_000)
    const events = [ev({ _tag: "TurnStart", turn: 1 }), ...Array.from({ length: 5 }, () => ev({ _tag: "TextDelta", text: chunk }))]
    assert.strictEqual(Timeline.build(events).runs[0]!.turns[0]!.text.length, Timeline.MAX_TEXT_CHARS)
  })
})

/**
 * A loopback server of one session's events: the first connection sends `first` (raw SSE bytes, in
 * the chunks given) and is cut; every later one sends `rest` and stays open. Each connection's
 * `Last-Event-ID` is recorded.
 */
const crafted = (first: ReadonlyArray<Uint8Array>, rest: string) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly asked: Array<string | null>; readonly server: http.Server }>((resume) => {
      const asked: Array<string | null> = []
      const server = http.createServer((req, res) => {
        const header = req.headers["last-event-id"]
        asked.push(typeof header === "string" ? header : null)
        if (req.headers.authorization !== "Bearer tok") return void res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ _tag: "Unauthorized", message: "who?" }))
        res.writeHead(200, { "content-type": "text/event-stream" })
        if (asked.length > 1) return void res.write(rest)
        let chain = Promise.resolve()
        for (const chunk of first) chain = chain.then(() => new Promise<void>((done) => res.write(chunk, () => setImmediate(done))))
        void chain.then(() => res.destroy())
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(Effect.succeed({ url: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`, asked, server }))
      })
    }),
    ({ server }) => Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )

const frame = (id: number, event: Record<string, unknown>) => `id: ${id}\nevent: ${String(event._tag)}\ndata: ${JSON.stringify({ sessionId: "s1", runId: "r1", seq: id, at: 5000 + id, ...event })}\n\n`

describe("the page's events reader (studio/src/client.ts)", () => {
  it.live("reads frames however the bytes are cut, skips what it cannot read, and resumes after a drop from the last event it handed on", () =>
    Effect.gen(function*() {
      const whole = [
        "retry: 1000\n\n: keep-alive\n\n",
        frame(1, { _tag: "AgentStart", prompt: "a\nb" }),
        "id: 2\r\nevent: TextDelta\r\ndata: not json\r\n\r\n",
        frame(3, { _tag: "TextDelta", text: "é" })
      ].join("")
      // Cut everywhere, the multi-byte é across two chunks included.
      const bytes = Buffer.from(whole)
      const chunks = Array.from({ length: Math.ceil(bytes.length / 7) }, (_, i) => bytes.subarray(i * 7, i * 7 + 7))
      const server = yield* crafted(chunks, frame(3, { _tag: "TextDelta", text: "again" }) + frame(4, { _tag: "AgentEnd", outcome: "completed" }))
      const seen: Array<StreamedEvent> = []
      const abort = new AbortController()
      const reading = Effect.promise(() => Client.make("tok", server.url).events("s1", 0, (event) => {
        seen.push(event)
        if (event._tag === "AgentEnd") abort.abort()
      }, abort.signal))
      yield* reading
      assert.deepStrictEqual(seen.map((event) => [event.id, event._tag, event.at, "text" in event ? event.text : "prompt" in event ? event.prompt : null]), [
        [1, "AgentStart", 5001, "a\nb"],
        [3, "TextDelta", 5003, "é"],
        [4, "AgentEnd", 5004, null]
      ])
      assert.deepStrictEqual(server.asked, [null, "3"])
    }), 30_000)

  it.live("stops with the server's refusal, not reading again", () =>
    Effect.gen(function*() {
      const server = yield* crafted([], "")
      const refused = yield* Effect.promise(() => Client.make("not-tok", server.url).events("s1", 0, () => {}, new AbortController().signal).then(() => undefined, (error: unknown) => error))
      assert.deepStrictEqual(refused instanceof Client.ApiError ? [refused.status, refused.tag, refused.message] : refused, [401, "Unauthorized", "who?"])
      assert.deepStrictEqual(server.asked, [null])
    }), 30_000)
})

/**
 * What an MCP server asks, answered through its session (ADR 0063): server-everything's
 * elicitation tool answered with `session.respond` (its values checked against the form), by a
 * handler given at start, refused when nobody can answer, cancelled by a timeout or the run's
 * abort; its sampling tool under `sampling: "ask"` approved and denied with `session.approve` /
 * `deny`, the sampled tokens counted in the run's usage. Over stdio and Streamable HTTP, with no
 * process or socket left.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Stream } from "effect"
import { Agent, Elicitation, Session, type SessionEvent } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { McpServer } from "../src/index.ts"
import { MAX_ASKING, MAX_ELICITATION_CHARS } from "../src/internal/clientHandlers.ts"
import { everything, everythingLeavesNothing, fixture, node, results } from "./support.ts"

const SAMPLING_TOOL = "everything.trigger-sampling-request"
const ELICITATION_TOOL = "everything.trigger-elicitation-request"

const ADA = { name: "Ada Lovelace", check: true }

const accepted = [
  "✅ User provided the requested information!",
  "User inputs:\n- Name: Ada Lovelace\n- Agreed to terms: true",
  `\nRaw result: ${JSON.stringify({ action: "accept", content: ADA }, null, 2)}`
].join("\n")

const sampledText = (text: string) =>
  `LLM sampling result: \n${JSON.stringify({ model: "test:scripted", stopReason: "endTurn", role: "assistant", content: { type: "text", text } }, null, 2)}`

/** The script: a turn calling both tools, the sampled answer, a last turn, a second run's sampling call, its answer, its last turn. */
const script = [
  TestModel.reply(TestModel.toolCall(ELICITATION_TOOL, {}), TestModel.toolCall(SAMPLING_TOOL, { prompt: "name a colour", maxTokens: 50 })),
  TestModel.text("teal"),
  TestModel.text("done"),
  TestModel.toolCall(SAMPLING_TOOL, { prompt: "name another", maxTokens: 50 }),
  TestModel.text("never")
]

/**
 * Two runs of a session with `declared`: the first answers the form wrongly, then rightly, through
 * `session.respond`, and approves the sampling; the second denies it.
 */
const answeredThroughTheSession = (declared: McpServer.McpServer) =>
  Effect.gen(function*() {
    const session = yield* Session.start(Agent.make({ name: "asked", model: "test:x", mcpServers: [declared] }))
    const misfits: Array<string> = []
    const answer = (event: SessionEvent.SessionEvent, approve: boolean) =>
      Effect.gen(function*() {
        if (event._tag === "ElicitationRequested") {
          const wrong = yield* Effect.flip(session.respond(event.id, Elicitation.accept({ check: true })))
          misfits.push(wrong._tag)
          yield* session.respond(event.id, Elicitation.accept(ADA))
        }
        if (event._tag === "ApprovalRequested") yield* approve ? session.approve(event.callId) : session.deny(event.callId, "not now")
      })
    const first = Array.from(yield* Stream.runCollect(session.stream("go").pipe(Stream.tap((event) => answer(event, true)))))
    const second = Array.from(yield* Stream.runCollect(session.stream("again").pipe(Stream.tap((event) => answer(event, false)))))
    return { session, first, second, misfits }
  }).pipe(Effect.provide(TestModel.layer(script)), Effect.provide(Condukt.layer))

const declaration = { name: "everything", sampling: "ask" } as const

const check = (run: Effect.Success<ReturnType<typeof answeredThroughTheSession>>) => {
  const asked = run.first.flatMap((e) => (e._tag === "ElicitationRequested" ? [{ server: e.server, message: e.message, required: e.schema.required }] : []))
  assert.deepStrictEqual(asked, [{ server: "everything", message: "Please provide inputs for the following fields:", required: ["name"] }])
  assert.deepStrictEqual(run.misfits, ["ElicitationInvalidAnswer"])
  const approvals = run.first.flatMap((e) => (e._tag === "ApprovalRequested" ? [{ tool: e.tool, input: e.input }] : []))
  assert.deepStrictEqual(approvals, [{
    tool: "sampling/createMessage",
    input: { server: "everything", systemPrompt: "You are a helpful test server.", messages: [{ role: "user", text: "Resource trigger-sampling-request context: name a colour" }], maxTokens: 50 }
  }])
  assert.deepStrictEqual(results(run.first), [
    { name: ELICITATION_TOOL, content: accepted, isError: false },
    { name: SAMPLING_TOOL, content: sampledText("teal"), isError: false }
  ])
  assert.deepStrictEqual(results(run.second), [
    { name: SAMPLING_TOOL, content: "Error: MCP error -1: Denied by the user: not now", isError: true }
  ])
}

describe("server requests answered through the session", () => {
  it.live("server-everything over stdio: its form answered with session.respond, its sampling under ask approved then denied; no process left", () =>
    everythingLeavesNothing("stdio", declaration, answeredThroughTheSession, check))

  it.live("server-everything over Streamable HTTP: the same answers; no socket left", () =>
    everythingLeavesNothing("streamableHttp", declaration, answeredThroughTheSession, check))
})

describe("questions", () => {
  const stdio = (options: Partial<McpServer.StdioOptions> = {}) => McpServer.stdio({ name: "everything", command: node, args: [everything, "stdio"], ...options })
  const start = (options: Session.StartOptions = {}, server = stdio()) =>
    Session.start(Agent.make({ name: "asked", model: "test:x", mcpServers: [server] }), options)
  const elicitOnce = [TestModel.toolCall(ELICITATION_TOOL, {}), TestModel.text("done")]

  it.live("a handler given at start answers every form; the run's usage counts what a server sampled", () =>
    Effect.gen(function*() {
      const seen: Array<Elicitation.Requested> = []
      const session = yield* start({
        elicitation: { handler: (request) => Effect.sync(() => seen.push(request)).pipe(Effect.as(Elicitation.accept(ADA))) }
      }, stdio({ sampling: "allow" }))
      const result = yield* session.run("go")
      assert.deepStrictEqual(result.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])), [accepted, sampledText("teal")])
      assert.deepStrictEqual(seen.map((r) => [r.server, r.message]), [["everything", "Please provide inputs for the following fields:"]])
      // Two turns and the request the server sampled, 10 in and 5 out each: the run's and the session's.
      assert.deepStrictEqual(result.usage, { inputTokens: 30, outputTokens: 15 })
      assert.deepStrictEqual(yield* session.usage, { inputTokens: 30, outputTokens: 15 })
    }).pipe(Effect.provide(TestModel.layer(script.slice(0, 3))), Effect.provide(Condukt.layer), Effect.scoped))

  it.live("with no handler and nobody reading the session's events, a form is refused with the reason", () =>
    Effect.gen(function*() {
      const session = yield* start()
      const result = yield* session.run("go")
      assert.deepStrictEqual(result.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])), [
        `Error: MCP error -1: ${Elicitation.NOBODY_TO_ASK}`
      ])
      assert.deepStrictEqual(yield* session.pending, [])
    }).pipe(Effect.provide(TestModel.layer(elicitOnce)), Effect.provide(Condukt.layer), Effect.scoped))

  it.live("a server asking more than MAX_ASKING questions at once is refused past them; a message too long is refused", () =>
    Effect.gen(function*() {
      // The handler holds every question it gets until MAX_ASKING are waiting, then answers them all.
      const held: Array<Deferred.Deferred<void>> = []
      const full = yield* Deferred.make<void>()
      const handler = () =>
        Effect.gen(function*() {
          const mine = yield* Deferred.make<void>()
          held.push(mine)
          if (held.length === MAX_ASKING) yield* Deferred.succeed(full, undefined)
          yield* Deferred.await(full)
          return Elicitation.accept({ name: "ada" })
        })
      const agent = Agent.make({ name: "asked", model: "test:x", mcpServers: [McpServer.stdio({ name: "fx", command: node, args: [fixture] })] })
      const session = yield* Session.start(agent, { elicitation: { handler } })
      const result = yield* session.run("go")
      const [many, long] = result.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))
      const refused = `MCP error -1: the client takes at most ${MAX_ASKING} of a server's sampling requests and questions at once`
      // Which of the questions come past the limit is the transport's timing, not their order in the array.
      assert.deepStrictEqual((JSON.parse(many!) as Array<string>).toSorted(), [...Array(MAX_ASKING).fill("accept"), ...Array(4).fill(refused)].toSorted())
      assert.strictEqual(held.length, MAX_ASKING)
      assert.deepStrictEqual(JSON.parse(long!), [
        `MCP error -32602: a question's message holds at most ${MAX_ELICITATION_CHARS} characters (this one ${MAX_ELICITATION_CHARS + 1})`
      ])
    }).pipe(
      Effect.provide(TestModel.layer([
        TestModel.toolCall("fx.ask", { count: MAX_ASKING + 4, message: "Your name?" }),
        TestModel.toolCall("fx.ask", { count: 1, message: "x".repeat(MAX_ELICITATION_CHARS + 1) }),
        TestModel.text("done")
      ])),
      Effect.provide(Condukt.layer),
      Effect.scoped
    ))

  it.live("a form nobody answers within the timeout is cancelled", () =>
    Effect.gen(function*() {
      const session = yield* start({ elicitation: { timeout: "100 millis" } })
      const events = Array.from(yield* Stream.runCollect(session.stream("go")))
      assert.deepStrictEqual(results(events), [{
        name: ELICITATION_TOOL,
        content: `⚠️ User cancelled the elicitation dialog.\n\nRaw result: ${JSON.stringify({ action: "cancel" }, null, 2)}`,
        isError: false
      }])
    }).pipe(Effect.provide(TestModel.layer(elicitOnce)), Effect.provide(Condukt.layer), Effect.scoped))

  it.live("an abort while a form waits ends it: the run is aborted and the question is no longer pending", () =>
    Effect.gen(function*() {
      const session = yield* start()
      const asked = yield* Deferred.make<string>()
      const reading = yield* Effect.forkChild(
        session.stream("go").pipe(
          Stream.tap((e) => (e._tag === "ElicitationRequested" ? Deferred.succeed(asked, e.id) : Effect.void)),
          Stream.runCollect
        ),
        { startImmediately: true }
      )
      const id = yield* Deferred.await(asked)
      yield* session.abort
      const events = Array.from(yield* Fiber.join(reading))
      const last = events.at(-1)
      assert.deepStrictEqual(last?._tag === "AgentEnd" ? last.outcome : last?._tag, "aborted")
      const late = yield* Effect.flip(session.respond(id, Elicitation.decline))
      assert.deepStrictEqual(late.message, `Session ${session.id}: no question ${id} is waiting for an answer (unknown, or already answered)`)
    }).pipe(Effect.provide(TestModel.layer(elicitOnce)), Effect.provide(Condukt.layer), Effect.scoped))
})

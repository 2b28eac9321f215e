/**
 * The UI message stream against the `ai` package's own client: a real session (a scripted model,
 * real tools, approvals answered) is encoded, served as Server-Sent Events on loopback and read by
 * `DefaultChatTransport` + `readUIMessageStream`, and by `AbstractChat` (what `useChat` drives)
 * answering the approvals itself; the message it builds equals `fromHistory` of the run's messages.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
  UI_MESSAGE_STREAM_HEADERS,
  type UIMessage,
  type UIMessageChunk
} from "ai"
import { Duration, Effect, Layer, Queue, Result, Schema, Stream } from "effect"
import * as http from "node:http"
import * as Agent from "@condukt/core/Agent"
import type * as Message from "@condukt/core/Message"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Session from "@condukt/core/Session"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import * as Tool from "@condukt/core/Tool"
import * as UiMessageStream from "../src/UiMessageStream.ts"
import { plainState, TestChat } from "./fixtures/chat.ts"

const Target = Schema.Struct({ target: Schema.String })
const Read = Tool.make("read", { description: "Reads", parameters: Target, call: ({ target }) => Effect.succeed(`contents of ${target}`) })
const Grep = Tool.make("grep", { description: "Searches", parameters: Target, call: ({ target }) => Effect.fail(`Invalid regex: ${target}`) })
const asking = (name: string, done: string) =>
  Tool.make(name, { description: name, parameters: Target, needsApproval: true, call: ({ target }) => Effect.succeed(`${done} ${target}`) })

const agent = Agent.make({ name: "ops", model: "test:x", tools: [Read, Grep, asking("rm", "removed"), asking("deploy", "deployed")] })

const thinkingAndText = [TestModel.thinking("Let me look around first."), TestModel.text("Checking the files.")]
const read = TestModel.toolCall("read", { target: "a.txt" }, "c_read")
const grep = TestModel.toolCall("grep", { target: "(" }, "c_grep")
const rm = TestModel.toolCall("rm", { target: "build" }, "c_rm")
const deploy = TestModel.toolCall("deploy", { target: "prod" }, "c_deploy")
const final = TestModel.text("Cleaned up; the deploy was refused.")
const env = (replies: ReadonlyArray<TestModel.Reply>) => Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop())

/** Thinking and text, then one parallel batch (two calls that run, two that ask); then the final text. */
const oneBatch = env([TestModel.reply(...thinkingAndText, read, grep, rm, deploy), final])

/**
 * The calls that run, then the two that ask, in a batch of their own: a batch's results are
 * published in call order once its calls finish, so a batch mixing both shows its finished calls'
 * outputs only after the answers, and `ai`'s `lastAssistantMessageIsCompleteWithApprovalResponses`
 * waits for every call of the step.
 */
const twoBatches = env([TestModel.reply(...thinkingAndText, read, grep), TestModel.reply(rm, deploy), final])

const answers: ReadonlyArray<UiMessageStream.Answer> = [{ callId: "c_rm", approved: true }, { callId: "c_deploy", approved: false, reason: "not on a Friday" }]

/** What the run added to the history: everything after its prompt. */
const runMessages = (history: ReadonlyArray<Message.Message>) => history.slice(history.findLastIndex((m) => m._tag === "UserMessage") + 1)

/** A value as it crosses the wire: what `readUIMessageStream` leaves `undefined` is no key at all. */
const json = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

/** A loopback server handing each POST (its body read) to the test's fiber through a queue. */
const loopback = Effect.gen(function*() {
  const posted = yield* Queue.unbounded<{ readonly body: string; readonly response: http.ServerResponse }>()
  const server = yield* Effect.acquireRelease(
    Effect.callback<http.Server>((resume) => {
      const server = http.createServer((request, response) => {
        let body = ""
        request.on("data", (data: Buffer) => (body += data.toString()))
        request.on("end", () => Queue.offerUnsafe(posted, { body, response }))
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
  const { port } = server.address() as { readonly port: number }
  return { url: `http://127.0.0.1:${port}/api/chat`, posted }
})

/** Writes chunks to a response as the stream's frames. */
const write = (response: http.ServerResponse, chunks: ReadonlyArray<UiMessageStream.Chunk>) =>
  Effect.sync(() => chunks.forEach((chunk) => response.write(UiMessageStream.frame(chunk))))

const open = (response: http.ServerResponse) => Effect.sync(() => response.writeHead(200, UiMessageStream.HEADERS))
const end = (response: http.ServerResponse) => Effect.sync(() => response.end(UiMessageStream.DONE))
const decodeRequest = (body: string) => Schema.decodeUnknownEffect(UiMessageStream.ChatRequest)(JSON.parse(body))

/** Every call of the turn's batch has its result or waits for an answer: the run waits on people. */
const waitsOnPeople = (all: ReadonlyArray<SessionEvent.SessionEvent>): boolean => {
  const events = all.slice(all.findLastIndex((e) => e._tag === "TurnStart"))
  const calls = new Set(events.flatMap((e) => (e._tag === "ToolCall" ? [e.callId] : [])))
  const settled = new Set(events.flatMap((e) => (e._tag === "ToolResult" || e._tag === "ApprovalRequested" ? [e.callId] : [])))
  return events.some((e) => e._tag === "ApprovalRequested") && [...calls].every((id) => settled.has(id))
}

let seq = 0
/** An event of run `r` of session `s` (the cast: a spread over the union of payloads is each member's). */
const event = (payload: SessionEvent.Payload, base: { readonly runId?: string; readonly agentPath?: ReadonlyArray<string> } = {}) =>
  ({ sessionId: "s", runId: "r", seq: ++seq, ...base, ...payload }) as SessionEvent.SessionEvent

/** The chunks of `events`, typed as `ai`'s own: every chunk the encoder makes is one `ai` reads (the compiler checks). */
const encode = (encoder: UiMessageStream.Encoder, events: ReadonlyArray<SessionEvent.SessionEvent>): ReadonlyArray<UIMessageChunk> =>
  events.flatMap((e) => encoder.push(e))

describe("UiMessageStream", () => {
  it.live("a run with reasoning, text, a parallel batch, a tool error, an approval and a denial reads back through ai's client as fromHistory of its messages", () =>
    Effect.gen(function*() {
      const { url, posted } = yield* loopback
      const session = yield* Session.start(agent)
      const events: Array<SessionEvent.SessionEvent> = []
      yield* Stream.runForEach(session.stream("clean up"), (event) => {
        events.push(event)
        if (event._tag !== "ApprovalRequested") return Effect.void
        const answer = answers.find((a) => a.callId === event.callId)!
        return Effect.asVoid(Effect.forkScoped(Effect.orDie(answer.approved ? session.approve(event.callId) : session.deny(event.callId, answer.reason))))
      })
      const encoder = UiMessageStream.make({ messageId: "m1" })
      const chunks = events.flatMap((event) => encoder.push(event))
      const serve = Effect.gen(function*() {
        const { response } = yield* Queue.take(posted)
        yield* open(response)
        yield* write(response, chunks)
        yield* end(response)
      })
      const read = Effect.promise(async () => {
        const transport = new DefaultChatTransport({ api: url })
        const stream = await transport.sendMessages({
          chatId: "chat-1",
          trigger: "submit-message",
          messageId: undefined,
          abortSignal: undefined,
          messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "clean up" }] }]
        })
        let last: UIMessage | undefined
        for await (const message of readUIMessageStream({ stream })) last = message
        return last
      })
      const [, message] = yield* Effect.all([serve, read], { concurrency: 2 })
      // The parts are `ai`'s own type: a server resuming a chat can hand them back as its message.
      const expected: UIMessage = { id: "m1", role: "assistant", parts: UiMessageStream.fromHistory(runMessages(yield* session.history), answers) }
      assert.deepStrictEqual(json(message), expected)
      // The approval flow as `ai` models it: requested, answered, then the output or the denial.
      const flow = (id: string) => chunks.filter((c) => "toolCallId" in c ? c.toolCallId === id : "approvalId" in c && c.approvalId === id).map((c) => c.type)
      assert.deepStrictEqual(flow("c_rm"), ["tool-input-start", "tool-input-available", "tool-approval-request", "tool-approval-response", "tool-output-available"])
      assert.deepStrictEqual(flow("c_deploy"), ["tool-input-start", "tool-input-available", "tool-approval-request", "tool-approval-response", "tool-output-denied"])
      assert.deepStrictEqual(chunks.at(-1), { type: "finish", finishReason: "stop" })
    }).pipe(Effect.scoped, Effect.provide(oneBatch)))

  it.live("useChat's own chat answers the approvals from the page: the message pauses, continues on the answers, and ends as fromHistory", () =>
    Effect.gen(function*() {
      const { url, posted } = yield* loopback
      const session = yield* Session.start(agent)
      const events = yield* Queue.unbounded<SessionEvent.SessionEvent>()
      const bodies: Array<UiMessageStream.ChatRequest> = []
      const server = Effect.gen(function*() {
        // The first POST: the prompt runs until it waits on people, then the message pauses.
        const first = yield* Queue.take(posted)
        const request = yield* decodeRequest(first.body)
        bodies.push(request)
        const prompt = yield* Result.match(UiMessageStream.promptOf(request), { onSuccess: Effect.succeed, onFailure: Effect.fail })
        yield* Effect.forkScoped(Stream.runForEach(session.stream(prompt), (event) => Queue.offer(events, event)))
        yield* open(first.response)
        const encoder = UiMessageStream.make({ messageId: "m1" })
        const seen: Array<SessionEvent.SessionEvent> = []
        while (!waitsOnPeople(seen)) {
          const event = yield* Queue.take(events)
          seen.push(event)
          yield* write(first.response, encoder.push(event))
        }
        yield* write(first.response, encoder.pause())
        yield* end(first.response)
        // The second POST carries the answers: the session takes them and the same message goes on.
        const second = yield* Queue.take(posted)
        const answered = yield* decodeRequest(second.body)
        bodies.push(answered)
        const given = UiMessageStream.answersOf(answered)
        yield* Effect.forEach(given, (a) => (a.approved ? session.approve(a.callId) : session.deny(a.callId, a.reason)), { discard: true })
        yield* open(second.response)
        const continued = UiMessageStream.make({ messageId: answered.messages.at(-1)!.id, continuing: true, answers: given })
        let event: SessionEvent.SessionEvent | undefined
        while (event?._tag !== "AgentEnd") {
          event = yield* Queue.take(events)
          yield* write(second.response, continued.push(event))
        }
        yield* end(second.response)
      })
      const client = Effect.promise(async () => {
        let finished: () => void = () => undefined
        let ids = 0
        const chat = new TestChat({
          id: "chat-1",
          generateId: () => `id-${++ids}`,
          transport: new DefaultChatTransport({ api: url }),
          state: plainState(),
          sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
          onFinish: () => finished()
        })
        await chat.sendMessage({ text: "clean up" })
        const paused = chat.json
        const done = new Promise<void>((resolve) => (finished = resolve))
        await chat.addToolApprovalResponse({ id: "c_rm", approved: true })
        await chat.addToolApprovalResponse({ id: "c_deploy", approved: false, reason: "not on a Friday" })
        await done
        return { paused, final: chat.json, status: chat.status }
      })
      const [, { final, paused, status }] = yield* Effect.all([server, client], { concurrency: 2 })
      const history = runMessages(yield* session.history)
      const parts = UiMessageStream.fromHistory(history, answers)
      assert.strictEqual(status, "ready")
      assert.deepStrictEqual(final, [{ id: "id-1", role: "user", parts: [{ type: "text", text: "clean up" }] }, { id: "m1", role: "assistant", parts }])
      // Paused: the calls that ran have their outputs, the two that ask wait for the page's answer.
      const asked = (part: UiMessageStream.UiPart) =>
        part.type === "tool-rm" || part.type === "tool-deploy"
          ? { type: part.type, toolCallId: part.toolCallId, input: part.input, state: "approval-requested", approval: { id: part.toolCallId } }
          : part
      assert.deepStrictEqual(paused[1], { id: "m1", role: "assistant", parts: parts.slice(0, 8).map(asked) })
      // What the transport really sent, decoded: the prompt, then the answers on the assistant message.
      assert.deepStrictEqual(bodies.map((b) => [b.id, b.trigger, b.messages.map((m) => m.role)]), [["chat-1", "submit-message", ["user"]], [
        "chat-1",
        "submit-message",
        ["user", "assistant"]
      ]])
      assert.deepStrictEqual(bodies.map((b) => Result.getOrUndefined(UiMessageStream.promptOf(b))), ["clean up", undefined])
      assert.deepStrictEqual(UiMessageStream.answersOf(bodies[1]!), answers)
    }).pipe(Effect.scoped, Effect.provide(twoBatches)))

  it("the headers are ai's own, each chunk is one data frame, and the stream ends with [DONE]", () => {
    assert.deepStrictEqual(UiMessageStream.HEADERS, UI_MESSAGE_STREAM_HEADERS)
    assert.strictEqual(UiMessageStream.frame({ type: "text-delta", id: "t", delta: "a\nb" }), `data: {"type":"text-delta","id":"t","delta":"a\\nb"}\n\n`)
    assert.strictEqual(UiMessageStream.DONE, "data: [DONE]\n\n")
  })

  it("a sub-agent's events, events between runs, and requests or results of calls the stream never announced add nothing", () => {
    const encoder = UiMessageStream.make({ messageId: "m" })
    assert.deepStrictEqual(encode(encoder, [event({ _tag: "AgentStart", prompt: "p" })]), [{ type: "start", messageId: "m" }])
    const sub = { agentPath: ["main", "researcher"] }
    const ignored = encode(encoder, [
      event({ _tag: "TurnStart", turn: 1 }, sub), event({ _tag: "TextDelta", text: "inner" }, sub), event({ _tag: "Compacted", before: 9, after: 2 }, { runId: "" }),
      event({ _tag: "ApprovalRequested", callId: "sampling-1", tool: "sampling/createMessage", input: {} }),
      event({ _tag: "ToolResult", callId: "restored", name: "rm", content: "removed", isError: false }),
      event({ _tag: "McpServerDown", server: "github", description: "exited" })
    ])
    assert.deepStrictEqual(ignored, [])
  })

  it("a run still waiting (StillWaiting) adds nothing to a message, and starts none in a stream that opens on it", () => {
    const encoder = UiMessageStream.make({ messageId: "m" })
    const asked = encode(encoder, [
      event({ _tag: "AgentStart", prompt: "p" }),
      event({ _tag: "TurnStart", turn: 1 }),
      event({ _tag: "TurnEnd", turn: 1, usage: { inputTokens: 1, outputTokens: 1 } }),
      event({ _tag: "ToolCall", callId: "c1", name: "Bash", input: { command: "ls" } }),
      event({ _tag: "ApprovalRequested", callId: "c1", tool: "Bash", input: { command: "ls" } })
    ])
    assert.strictEqual(asked.at(-1)!.type, "tool-approval-request")
    const still = event({ _tag: "StillWaiting", calls: [{ callId: "c1", tool: "Bash" }], waitedMs: 30_000 })
    assert.deepStrictEqual(encode(encoder, [still]), [])
    // A stream that opens on it (a resume while the run waits) starts no message for it.
    assert.deepStrictEqual(encode(UiMessageStream.make({ messageId: "m2" }), [still]), [])
  })

  it("a retried model request takes the failed attempt's parts off the step; a failure is an error then a finish; an abort closes what is open", () => {
    assert.deepStrictEqual(
      encode(UiMessageStream.make({ messageId: "m" }), [
        event({ _tag: "AgentStart", prompt: "p" }), event({ _tag: "TurnStart", turn: 1 }), event({ _tag: "TextDelta", text: "half" }),
        event({ _tag: "ModelRetry", attempt: 2, reason: "overloaded", delay: Duration.seconds(1) }), event({ _tag: "ThinkingDelta", text: "again" }),
        event({ _tag: "Error", message: "the model failed" }), event({ _tag: "AgentEnd", outcome: "failed" })
      ]),
      [
        { type: "start", messageId: "m" }, { type: "start-step" },
        { type: "text-start", id: "text-1-1" }, { type: "text-delta", id: "text-1-1", delta: "half" }, { type: "reset-step" },
        { type: "reasoning-start", id: "reasoning-1-1" }, { type: "reasoning-delta", id: "reasoning-1-1", delta: "again" },
        { type: "error", errorText: "the model failed" }, { type: "reasoning-end", id: "reasoning-1-1" }, { type: "finish-step" },
        { type: "finish", finishReason: "error" }
      ]
    )
    assert.deepStrictEqual(
      encode(UiMessageStream.make({ messageId: "m" }), [event({ _tag: "AgentStart", prompt: "p" }), event({ _tag: "TurnStart", turn: 1 }), event({ _tag: "TextDelta", text: "so" }), event({ _tag: "AgentEnd", outcome: "aborted" })]),
      [
        { type: "start", messageId: "m" }, { type: "start-step" },
        { type: "text-start", id: "text-1-1" }, { type: "text-delta", id: "text-1-1", delta: "so" }, { type: "text-end", id: "text-1-1" },
        { type: "finish-step" }, { type: "abort" }
      ]
    )
  })

  it("a continuation restarts the same message, repeats the answers, and places the results of calls announced before it", () => {
    assert.deepStrictEqual(
      encode(UiMessageStream.make({ messageId: "m1", continuing: true, answers }), [
        event({ _tag: "ToolResult", callId: "c_rm", name: "rm", content: "removed build", isError: false }),
        event({ _tag: "ToolResult", callId: "c_deploy", name: "deploy", content: "Denied by the user: not on a Friday", isError: true }),
        event({ _tag: "TurnStart", turn: 3 }), event({ _tag: "TextDelta", text: "ok" }),
        event({ _tag: "TurnEnd", turn: 3, usage: { inputTokens: 1, outputTokens: 1 } }), event({ _tag: "AgentEnd", outcome: "completed" })
      ]),
      [
        { type: "start", messageId: "m1" }, { type: "tool-approval-response", approvalId: "c_rm", approved: true },
        { type: "tool-approval-response", approvalId: "c_deploy", approved: false, reason: "not on a Friday" },
        { type: "tool-output-available", toolCallId: "c_rm", output: "removed build" }, { type: "tool-output-denied", toolCallId: "c_deploy" },
        { type: "start-step" },
        { type: "text-start", id: "text-3-1" }, { type: "text-delta", id: "text-3-1", delta: "ok" }, { type: "text-end", id: "text-3-1" },
        { type: "finish-step" }, { type: "finish", finishReason: "stop" }
      ]
    )
  })

  it("a denial before the call, while it runs (Tool.AskRefused), or by nobody answering in time is output-denied with its reason, in the stream and in fromHistory alike", () => {
    const expired = "Denied: nobody approved this call within 5000ms"
    const read = [["Denied by the user", undefined], ["Error: Denied by the user: not now", "not now"], [expired, expired]] as const
    const seen = read.map(([content]) => {
      const chunks = encode(UiMessageStream.make({ messageId: "m" }), [
        event({ _tag: "TurnStart", turn: 1 }), event({ _tag: "ToolCall", callId: "c", name: "rm", input: {} }),
        event({ _tag: "ApprovalRequested", callId: "c", tool: "rm", input: {} }), event({ _tag: "ToolResult", callId: "c", name: "rm", content, isError: true })
      ])
      const parts = UiMessageStream.fromHistory([
        { _tag: "AssistantMessage", parts: [{ _tag: "ToolCall", id: "c", name: "rm", input: {} }] },
        { _tag: "ToolResultMessage", callId: "c", name: "rm", content, isError: true }
      ])
      return { chunks: chunks.slice(-2), parts }
    })
    assert.deepStrictEqual(json(seen), read.map(([, reason]) => {
      const approval = reason === undefined ? { id: "c", approved: false } : { id: "c", approved: false, reason }
      return {
        chunks: [{ type: "tool-approval-response", approvalId: "c", approved: false, ...(reason === undefined ? {} : { reason }) }, { type: "tool-output-denied", toolCallId: "c" }],
        parts: [{ type: "step-start" }, { type: "tool-rm", toolCallId: "c", input: {}, state: "output-denied", approval }]
      }
    }))
  })

  describe("ChatRequest", () => {
    const user = (id: string, ...texts: ReadonlyArray<string>) => ({ id, role: "user" as const, parts: texts.map((text) => ({ type: "text", text })) })
    const decode = (value: unknown) => Effect.map(Effect.result(Schema.decodeUnknownEffect(UiMessageStream.ChatRequest)(value)), Result.isSuccess)

    it.effect("a request within bounds decodes; more messages, a longer string, a deeper part or a longer id than the bounds is refused", () =>
      Effect.gen(function*() {
        const ok = { id: "chat", messages: [user("u1", "hi")], trigger: "submit-message", extra: "an app's body field" }
        let deep: unknown = "x"
        for (let i = 0; i < 70; i++) deep = { nested: deep }
        const decoded = yield* Effect.forEach([
          ok,
          { ...ok, messages: Array.from({ length: UiMessageStream.MAX_MESSAGES + 1 }, (_, i) => user(`u${i}`, "hi")) },
          { ...ok, messages: [user("u1", "x".repeat(UiMessageStream.MAX_TEXT_CHARS + 1))] },
          { ...ok, messages: [{ id: "u1", role: "user", parts: [{ type: "data-x", data: deep }] }] },
          { ...ok, id: "c".repeat(UiMessageStream.MAX_ID_CHARS + 1) },
          { ...ok, messages: [] },
          { ...ok, trigger: "resume-stream" }
        ], decode)
        assert.deepStrictEqual(decoded, [true, false, false, false, false, false, false])
      }))

    it.effect("promptOf is the last user message's text; a request ending with the assistant's message has none", () =>
      Effect.gen(function*() {
        const messages = [user("u1", "first"), { id: "a1", role: "assistant", parts: [] }, user("u2", "clean up", "the build")]
        const request = yield* Schema.decodeUnknownEffect(UiMessageStream.ChatRequest)({ id: "chat", messages, trigger: "submit-message" })
        assert.deepStrictEqual(UiMessageStream.promptOf(request), Result.succeed("clean up\nthe build"))
        const refused = UiMessageStream.promptOf({ ...request, messages: request.messages.slice(0, 2) })
        const { _tag, message, reason } = Result.isFailure(refused) ? refused.failure : { _tag: "none", message: "", reason: "" }
        assert.deepStrictEqual({ _tag, message, reason }, {
          _tag: "ChatRequestError",
          message: "UiMessageStream: chat chat ends with no user message holding text to run",
          reason: "NoPrompt"
        })
      }))

    it.effect("answersOf takes the answered tool parts of the last assistant message, with their reasons, and nothing else", () =>
      Effect.gen(function*() {
        const request = yield* Schema.decodeUnknownEffect(UiMessageStream.ChatRequest)({
          id: "chat",
          trigger: "submit-message",
          messages: [user("u1", "go"), {
            id: "a1",
            role: "assistant",
            parts: [
              { type: "step-start" }, { type: "tool-read", toolCallId: "c1", state: "output-available", input: {}, output: "x" },
              { type: "tool-rm", toolCallId: "c2", state: "approval-responded", input: {}, approval: { id: "c2", approved: true } },
              { type: "tool-deploy", toolCallId: "c3", state: "approval-requested", input: {}, approval: { id: "c3" } },
              { type: "dynamic-tool", toolName: "x", toolCallId: "c4", state: "approval-responded", input: {}, approval: { id: "c4", approved: false, reason: "no" } },
              { type: "tool-bad", toolCallId: 5, state: "approval-responded", input: {}, approval: { id: "c5", approved: true } }
            ]
          }]
        })
        assert.deepStrictEqual(UiMessageStream.answersOf(request), [{ callId: "c2", approved: true }, { callId: "c4", approved: false, reason: "no" }])
        assert.deepStrictEqual(UiMessageStream.answersOf({ ...request, messages: [...request.messages, user("u2", "next")] }), [])
      }))
  })
})

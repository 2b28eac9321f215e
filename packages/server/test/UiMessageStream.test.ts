/**
 * The UI message stream against the `ai` package's own client: a real session (a scripted model,
 * real tools, approvals answered) is encoded, served as Server-Sent Events on loopback and read by
 * `DefaultChatTransport` + `readUIMessageStream`, and by `AbstractChat` (what `useChat` drives)
 * answering the approvals itself; the message it builds equals `fromHistory` of the run's messages.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import {
  AbstractChat,
  type ChatState,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
  UI_MESSAGE_STREAM_HEADERS,
  type UIMessage,
  type UIMessageChunk
} from "ai"
import { Effect, Layer, Queue, Result, Schema, Stream } from "effect"
import * as http from "node:http"
import * as Agent from "@condukt/core/Agent"
import type * as Message from "@condukt/core/Message"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Session from "@condukt/core/Session"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import * as Tool from "@condukt/core/Tool"
import * as UiMessageStream from "../src/UiMessageStream.ts"

// Every chunk the encoder makes is one `ai` reads (checked by the compiler).
const _chunk = (chunk: UiMessageStream.Chunk): UIMessageChunk => chunk

const Read = Tool.make("read", {
  description: "Reads a file",
  parameters: Schema.Struct({ path: Schema.String }),
  call: ({ path }) => Effect.succeed(`contents of ${path}`)
})
const Grep = Tool.make("grep", {
  description: "Searches",
  parameters: Schema.Struct({ pattern: Schema.String }),
  call: ({ pattern }) => Effect.fail(`Invalid regex: ${pattern}`)
})
const asking = (name: string, done: string) =>
  Tool.make(name, {
    description: `The ${name} command`,
    parameters: Schema.Struct({ target: Schema.String }),
    needsApproval: true,
    call: ({ target }) => Effect.succeed(`${done} ${target}`)
  })

const agent = Agent.make({ name: "ops", model: "test:x", tools: [Read, Grep, asking("rm", "removed"), asking("deploy", "deployed")] })

const thinkingAndText = [TestModel.thinking("Let me look around first."), TestModel.text("Checking the files.")]
const read = TestModel.toolCall("read", { path: "a.txt" }, "c_read")
const grep = TestModel.toolCall("grep", { pattern: "(" }, "c_grep")
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

const answers: ReadonlyArray<UiMessageStream.Answer> = [
  { callId: "c_rm", approved: true },
  { callId: "c_deploy", approved: false, reason: "not on a Friday" }
]

/** What the run added to the history: everything after its prompt. */
const runMessages = (history: ReadonlyArray<Message.Message>) => history.slice(history.findLastIndex((m) => m._tag === "UserMessage") + 1)

/** A value as it crosses the wire: what `readUIMessageStream` leaves `undefined` is no key at all. */
const json = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

interface Posted {
  readonly body: string
  readonly response: http.ServerResponse
}

/** A loopback server handing each POST (its body read) to the test's fiber through a queue. */
const loopback = Effect.gen(function*() {
  const posted = yield* Queue.unbounded<Posted>()
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
  Effect.sync(() => {
    for (const chunk of chunks) response.write(UiMessageStream.frame(chunk))
  })

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

/** A chat's state as plain fields: what `useChat` keeps in React state. */
const plainState = (): ChatState<UIMessage> => {
  const state: ChatState<UIMessage> = {
    status: "ready",
    error: undefined,
    messages: [],
    pushMessage: (message) => void (state.messages = [...state.messages, message]),
    popMessage: () => void (state.messages = state.messages.slice(0, -1)),
    replaceMessage: (index, message) => void (state.messages = state.messages.map((m, i) => (i === index ? message : m))),
    snapshot: (thing) => structuredClone(thing)
  }
  return state
}

class TestChat extends AbstractChat<UIMessage> {
  get snapshot(): ReadonlyArray<UIMessage> {
    return json(this.state.messages) as ReadonlyArray<UIMessage>
  }
}

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
      const history = runMessages(yield* session.history)
      assert.deepStrictEqual(json(message), { id: "m1", role: "assistant", parts: UiMessageStream.fromHistory(history, answers) })
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
        for (const answer of given) {
          yield* answer.approved ? session.approve(answer.callId) : session.deny(answer.callId, answer.reason)
        }
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
        const chat = new TestChat({
          id: "chat-1",
          generateId: (() => {
            let n = 0
            return () => `id-${++n}`
          })(),
          transport: new DefaultChatTransport({ api: url }),
          state: plainState(),
          sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
          onFinish: () => finished()
        })
        await chat.sendMessage({ text: "clean up" })
        const paused = chat.snapshot
        const done = new Promise<void>((resolve) => (finished = resolve))
        await chat.addToolApprovalResponse({ id: "c_rm", approved: true })
        await chat.addToolApprovalResponse({ id: "c_deploy", approved: false, reason: "not on a Friday" })
        await done
        return { paused, final: chat.snapshot, status: chat.status }
      })
      const [, { final, paused, status }] = yield* Effect.all([server, client], { concurrency: 2 })
      const history = runMessages(yield* session.history)
      const parts = UiMessageStream.fromHistory(history, answers)
      assert.strictEqual(status, "ready")
      assert.deepStrictEqual(final, [
        { id: "id-1", role: "user", parts: [{ type: "text", text: "clean up" }] },
        { id: "m1", role: "assistant", parts }
      ])
      // Paused: the calls that ran have their outputs, the two that ask wait for the page's answer.
      const asked = (part: UiMessageStream.UiPart) =>
        part.type === "tool-rm" || part.type === "tool-deploy"
          ? { type: part.type, toolCallId: part.toolCallId, input: part.input, state: "approval-requested", approval: { id: part.toolCallId } }
          : part
      assert.deepStrictEqual(paused[1], { id: "m1", role: "assistant", parts: parts.slice(0, 8).map(asked) })
      // What the transport really sent, decoded: the prompt, then the answers on the assistant message.
      assert.deepStrictEqual(bodies.map((b) => [b.id, b.trigger, b.messages.map((m) => m.role)]), [
        ["chat-1", "submit-message", ["user"]],
        ["chat-1", "submit-message", ["user", "assistant"]]
      ])
      assert.deepStrictEqual(bodies.map((b) => Result.getOrUndefined(UiMessageStream.promptOf(b))), ["clean up", undefined])
      assert.deepStrictEqual(UiMessageStream.answersOf(bodies[1]!), answers)
    }).pipe(Effect.scoped, Effect.provide(twoBatches)))
})

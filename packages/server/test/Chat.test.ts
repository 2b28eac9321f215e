/**
 * `POST /chat` as `useChat` drives it: the `ai` package's own `AbstractChat` (what `useChat` wraps)
 * with `DefaultChatTransport` against a real server on loopback. A scripted run streams thinking
 * and text and one parallel batch: a call that runs, a call that fails, two calls that ask for
 * approval (the message pauses with the first two's outputs, so the chat's own
 * `lastAssistantMessageIsCompleteWithApprovalResponses` can send the answers); the chat answers them (one approved, one denied with a reason), POSTs
 * again by itself, and the run finishes in the same assistant message. The message the client
 * holds equals the session's history as `fromHistory` reads it; the principal answered; a resume
 * while the run waits reads the same message again, and with nothing running is a 204.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, readUIMessageStream, type UIMessage } from "ai"
import { Effect, Layer, Schema } from "effect"
import * as Agent from "@condukt/core/Agent"
import type * as Message from "@condukt/core/Message"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Tool from "@condukt/core/Tool"
import { Auth, Server, UiMessageStream } from "../src/index.ts"
import { plainState, TestChat } from "./fixtures/chat.ts"

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

const ops = Agent.make({ name: "ops", model: "test:x", tools: [Read, Grep, asking("rm", "removed"), asking("deploy", "deployed")] })

const env = Layer.mergeAll(
  TestModel.layer([
    TestModel.reply(
      TestModel.thinking("Let me look around first."),
      TestModel.text("Checking the files."),
      TestModel.toolCall("read", { path: "a.txt" }, "c_read"),
      TestModel.toolCall("grep", { pattern: "(" }, "c_grep"),
      TestModel.toolCall("rm", { target: "build" }, "c_rm"),
      TestModel.toolCall("deploy", { target: "prod" }, "c_deploy")
    ),
    TestModel.text("Cleaned up; the deploy was refused.")
  ]),
  Sandbox.layerNoop()
)

const answers: ReadonlyArray<UiMessageStream.Answer> = [{ callId: "c_rm", approved: true }, { callId: "c_deploy", approved: false, reason: "not on a Friday" }]

/** What the run added to the history: everything after its prompt. */
const runMessages = (history: ReadonlyArray<Message.Message>) => history.slice(history.findLastIndex((m) => m._tag === "UserMessage") + 1)

describe("POST /chat", () => {
  it.live("is what useChat needs: streamed parts, approvals answered from the chat, the final message equal to the session's history", () =>
    Effect.gen(function*() {
      const { url } = yield* Server.listen(Server.layer({ agents: { ops }, auth: Auth.bearer({ "tok-ada": "ada", "tok-bob": "bob" }), defaultAgent: "ops" }))
      const headers = { authorization: "Bearer tok-ada" }
      const { final, paused, status } = yield* Effect.promise(async () => {
        let finished: () => void = () => undefined
        let ids = 0
        const chat = new TestChat({
          id: "chat-1",
          generateId: () => `id-${++ids}`,
          transport: new DefaultChatTransport({ api: `${url}/chat`, headers }),
          state: plainState(),
          sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
          onFinish: () => finished()
        })
        await chat.sendMessage({ text: "clean up" })
        const paused = chat.json
        // A page reloaded while the run waits: the transport's resume reads the running message again.
        const transport = new DefaultChatTransport({ api: `${url}/chat`, headers })
        const again = await transport.reconnectToStream({ chatId: "chat-1" })
        let resumed: UIMessage | undefined
        for await (const message of readUIMessageStream({ stream: again! })) resumed = message
        assert.deepStrictEqual(JSON.parse(JSON.stringify(resumed)), paused[1])
        const done = new Promise<void>((resolve) => (finished = resolve))
        await chat.addToolApprovalResponse({ id: "c_rm", approved: true })
        await chat.addToolApprovalResponse({ id: "c_deploy", approved: false, reason: "not on a Friday" })
        await done
        return { paused, final: chat.json, status: chat.status }
      })
      const history = yield* Effect.promise(() => fetch(`${url}/sessions/chat-1/history`, { headers }).then((r) => r.json() as Promise<Array<Message.Message>>))
      const parts = UiMessageStream.fromHistory(runMessages(history), answers)
      assert.strictEqual(status, "ready")
      const assistant = final[1] as { id: string; role: string; parts: unknown }
      assert.deepStrictEqual(final, [{ id: "id-1", role: "user", parts: [{ type: "text", text: "clean up" }] }, { id: assistant.id, role: "assistant", parts }])
      // Paused: the calls that ran have their outputs, the two that ask wait for the chat's answer.
      const states = (paused[1] as { parts: ReadonlyArray<{ type: string; state?: string }> }).parts.flatMap((part) => part.type.startsWith("tool-") ? [[part.type, part.state]] : [])
      assert.deepStrictEqual(states, [["tool-read", "output-available"], ["tool-grep", "output-error"], ["tool-rm", "approval-requested"], ["tool-deploy", "approval-requested"]])
      // The principal answered: the denial's reason reached the model as the person gave it.
      assert.isTrue(history.some((m) => m._tag === "ToolResultMessage" && m.content.includes("not on a Friday")))
      // Nothing runs any more: a resume answers 204, as useChat expects.
      const resumed = yield* Effect.promise(() => fetch(`${url}/chat/chat-1/stream`, { headers }))
      assert.strictEqual(resumed.status, 204)
      // The chat is ada's: to another principal it does not exist.
      const theirs = yield* Effect.promise(() => fetch(`${url}/chat/chat-1/stream`, { headers: { authorization: "Bearer tok-bob" } }))
      assert.strictEqual(theirs.status, 404)
    }).pipe(Effect.scoped, Effect.provide(env)))

  it.live("two rounds of approvals in one message: the second POST carries the first round's answers too, and only the waiting call is answered", () =>
    Effect.gen(function*() {
      const { url } = yield* Server.listen(Server.layer({ agents: { ops }, auth: Auth.bearer({ "tok-ada": "ada" }), defaultAgent: "ops" }))
      const headers = { authorization: "Bearer tok-ada" }
      const { final, rounds } = yield* Effect.promise(async () => {
        let ids = 0
        let finished: () => void = () => undefined
        let rounds = 0
        const chat = new TestChat({
          id: "chat-2",
          generateId: () => `id-${++ids}`,
          transport: new DefaultChatTransport({ api: `${url}/chat`, headers }),
          state: plainState(),
          sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
          onFinish: ({ message }) => {
            const asking = message.parts.find((part) => "state" in part && part.state === "approval-requested")
            if (asking === undefined) return finished()
            rounds++
            const id = (asking as { approval: { id: string } }).approval.id
            // A person answers later than the stream's end: after the chat is ready again.
            setTimeout(() => void chat.addToolApprovalResponse({ id, approved: true }), 0)
          }
        })
        const done = new Promise<void>((resolve) => (finished = resolve))
        await chat.sendMessage({ text: "clean up, then deploy" })
        await done
        return { final: chat.json, rounds }
      })
      assert.strictEqual(rounds, 2)
      const history = yield* Effect.promise(() => fetch(`${url}/sessions/chat-2/history`, { headers }).then((r) => r.json() as Promise<Array<Message.Message>>))
      const parts = UiMessageStream.fromHistory(runMessages(history), [{ callId: "c_rm", approved: true }, { callId: "c_deploy", approved: true }])
      assert.deepStrictEqual((final[1] as { parts: unknown }).parts, parts)
      assert.deepStrictEqual(history.filter((m) => m._tag === "ToolResultMessage").map((m) => m._tag === "ToolResultMessage" && m.content), ["removed build", "deployed prod"])
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(
        TestModel.layer([
          TestModel.toolCall("rm", { target: "build" }, "c_rm"),
          TestModel.toolCall("deploy", { target: "prod" }, "c_deploy"),
          TestModel.text("Both done.")
        ]),
        Sandbox.layerNoop()
      ))
    ))
})

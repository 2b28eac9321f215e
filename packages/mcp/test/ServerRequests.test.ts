import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Agent, Secret, Session, ToolSource } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { McpServer } from "../src/index.ts"
import { everything, everythingLeavesNothing, fixture, node, results } from "./support.ts"

const SAMPLING_TOOL = "everything.trigger-sampling-request"
const ELICITATION_TOOL = "everything.trigger-elicitation-request"
const ROOTS_TOOL = "everything.get-roots-list"

const answered = (declared: McpServer.McpServer) =>
  Effect.gen(function*() {
    const agent = Agent.make({ name: "asked", model: "test:x", mcpServers: [declared] })
    const session = yield* Session.start(agent)
    const events = Array.from(yield* Stream.runCollect(session.stream("go")))
    const recorded = yield* TestModel.TestModel
    const requests = yield* recorded.requests
    const usage = yield* session.usage
    const listed = events.find((e) => e._tag === "McpServerStarted")
    return { events, requests, usage, listed, session }
  }).pipe(
    Effect.provide(TestModel.layer([
      TestModel.reply(
        TestModel.toolCall(SAMPLING_TOOL, { prompt: "name a colour", maxTokens: 50 }),
        TestModel.toolCall(ELICITATION_TOOL, {}),
        TestModel.toolCall(ROOTS_TOOL, {})
      ),
      TestModel.text("teal"),
      TestModel.text("done")
    ])),
    Effect.provide(Condukt.layer)
  )

const declaration = {
  name: "everything",
  sampling: "allow",
  elicitation: (request: McpServer.ElicitationRequest) =>
    Effect.succeed<McpServer.ElicitationAnswer>(
      request.message === "Please provide inputs for the following fields:" && request.server === "everything"
        ? { action: "accept", content: { name: "Ada Lovelace", check: true } }
        : { action: "cancel" }
    )
} as const

const ROOTS_NOTE = "Note: This server demonstrates the roots protocol capability but doesn't actually access files. " +
  "The roots are provided by the MCP client and can be used by servers that need file system access."

/** What each of server-everything's three tools answered, checked whole. */
const check = (run: Effect.Success<ReturnType<typeof answered>>) => {
  const [sampled, elicited, roots] = results(run.events)
  assert.deepStrictEqual(sampled, {
    name: SAMPLING_TOOL,
    content: `LLM sampling result: \n${
      JSON.stringify({ model: "test:scripted", stopReason: "endTurn", role: "assistant", content: { type: "text", text: "teal" } }, null, 2)
    }`,
    isError: false
  })
  assert.deepStrictEqual(elicited, {
    name: ELICITATION_TOOL,
    content: [
      "✅ User provided the requested information!",
      "User inputs:\n- Name: Ada Lovelace\n- Agreed to terms: true",
      `\nRaw result: ${JSON.stringify({ action: "accept", content: { name: "Ada Lovelace", check: true } }, null, 2)}`
    ].join("\n"),
    isError: false
  })
  assert.deepStrictEqual(roots, {
    name: ROOTS_TOOL,
    content: `Current MCP Roots (1 total):\n\n1. cwd\n   URI: ${ToolSource.fileUri(process.cwd())}\n\n${ROOTS_NOTE}`,
    isError: false
  })
  // The server's request reached the session's model as asked, bounded by the declaration's default.
  const asked = run.requests[1]!
  assert.strictEqual(asked.system, "You are a helpful test server.")
  assert.deepStrictEqual(asked.tools, [])
  assert.deepStrictEqual(asked.options, { maxTokens: 50, temperature: 0.7 })
  // Three model requests (two turns and the sampled one), each 10 in / 5 out: all in the session's usage.
  assert.deepStrictEqual(run.usage, { inputTokens: 30, outputTokens: 15 })
}

describe("server requests", () => {
  it.live("server-everything over stdio: sampled by the session's model, elicited through the handler, roots listed; no process left", () =>
    everythingLeavesNothing("stdio", declaration, answered, check))

  it.live("server-everything over Streamable HTTP: the same answers; no socket left", () =>
    everythingLeavesNothing("streamableHttp", declaration, answered, check))

  it.live("by default sampling is not offered, elicitation is (the session answers it): server-everything lists two tools of the three", () =>
    Effect.gen(function*() {
      const server = McpServer.stdio({ name: "everything", command: node, args: [everything, "stdio"] })
      const session = yield* Session.start(Agent.make({ name: "asked", model: "test:x", mcpServers: [server] }))
      yield* session.run("go")
      const [request] = yield* (yield* TestModel.TestModel).requests
      const names = request!.tools.map((tool) => tool.name)
      assert.isTrue(names.includes("everything.echo"))
      assert.deepStrictEqual(names.filter((name) => [SAMPLING_TOOL, ELICITATION_TOOL, ROOTS_TOOL].includes(name)), [ROOTS_TOOL, ELICITATION_TOOL])
    }).pipe(Effect.provide(TestModel.layer([TestModel.text("done")])), Effect.provide(Condukt.layer), Effect.scoped))
})

describe("roots", () => {
  it.live("a local sandbox's roots are its cwd and its allowed paths", () =>
    Effect.gen(function*() {
      const cwd = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-roots-cwd-")))
      const allowed = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-roots-allowed-")))
      yield* Effect.addFinalizer(() => Effect.sync(() => [cwd, allowed].forEach((dir) => fs.rmSync(dir, { recursive: true, force: true }))))
      const server = McpServer.stdio({ name: "everything", command: node, args: [everything, "stdio"] })
      const session = yield* Session.start(Agent.make({ name: "rooted", model: "test:x", mcpServers: [server] }), {
        sandbox: LocalSandbox.layer({ cwd, allowedPaths: [allowed] })
      })
      const events = Array.from(yield* Stream.runCollect(session.stream("go")))
      assert.deepStrictEqual(results(events), [{
        name: ROOTS_TOOL,
        content: `Current MCP Roots (2 total):\n\n1. cwd\n   URI: file://${cwd}\n\n2. ${allowed}\n   URI: file://${allowed}\n\n${ROOTS_NOTE}`,
        isError: false
      }])
    }).pipe(Effect.provide(TestModel.layer([TestModel.toolCall(ROOTS_TOOL, {}), TestModel.text("done")])), Effect.provide(Condukt.layer), Effect.scoped))
})

describe("sampling", () => {
  const sampled = (calls: ReadonlyArray<TestModel.Reply>, answers: ReadonlyArray<TestModel.Reply>) =>
    Effect.gen(function*() {
      const server = McpServer.stdio({ name: "fx", command: node, args: [fixture], sampling: "allow", maxSamplingTokens: 100 })
      const session = yield* Session.start(Agent.make({ name: "sampler", model: "test:x", mcpServers: [server] }), {
        secrets: { FX_TOKEN: Secret.static("tok-5b1e2c") }
      })
      const events = Array.from(yield* Stream.runCollect(session.stream("go")))
      return { results: results(events), requests: yield* (yield* TestModel.TestModel).requests }
    }).pipe(Effect.provide(TestModel.layer([TestModel.reply(...calls), ...answers, TestModel.text("done")])), Effect.provide(Condukt.layer), Effect.scoped)

  it.live("a request past the bounds is refused before the model sees it; the tokens asked are capped", () =>
    Effect.gen(function*() {
      const { requests, results: [many, long, capped] } = yield* sampled([
        TestModel.toolCall("fx.sample", { count: 51, text: "hi", maxTokens: 10 }),
        TestModel.toolCall("fx.sample", { count: 2, text: "x".repeat(50_001), maxTokens: 10 }),
        TestModel.toolCall("fx.sample", { count: 1, text: "hi", maxTokens: 100_000 })
      ], [TestModel.text("fine")])
      assert.deepStrictEqual(many, { name: "fx.sample", content: "Error: MCP error -32602: a sampling request holds at most 50 messages (this one 51)", isError: true })
      assert.deepStrictEqual(long, {
        name: "fx.sample",
        content: "Error: MCP error -32602: a sampling request holds at most 100000 characters of text (this one 100002)",
        isError: true
      })
      assert.deepStrictEqual(capped, { name: "fx.sample", content: JSON.stringify({ type: "text", text: "fine" }), isError: false })
      // The turn, the one sampled request, the last turn.
      assert.strictEqual(requests.length, 3)
      assert.deepStrictEqual(requests[1]!.options, { maxTokens: 100 })
    }))

  it.live("what goes back to the server is redacted with the session's secrets", () =>
    Effect.gen(function*() {
      const { results: [answer] } = yield* sampled([TestModel.toolCall("fx.sample", { count: 1, text: "the token?", maxTokens: 10 })], [
        TestModel.text("it is tok-5b1e2c")
      ])
      assert.deepStrictEqual(answer, { name: "fx.sample", content: JSON.stringify({ type: "text", text: "it is [REDACTED:FX_TOKEN]" }), isError: false })
    }))
})

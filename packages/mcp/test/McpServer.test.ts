import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Agent, Message, Session } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { McpServer } from "../src/index.ts"
import { cutOff } from "../../core/test/fixtures/cutOff.ts"
import { everything, everythingHttp, fixture, freePort, node, results, runWith } from "./support.ts"

const TINY_IMAGE_TEXT_PARTS = 3

describe("McpServer", () => {
  describe("server-everything, driven by an agent on TestModel", () => {
    const drive = (server: McpServer.McpServer) =>
      Effect.gen(function*() {
        const { events, session } = yield* runWith([server], [
          TestModel.reply(
            TestModel.toolCall("everything.echo", { message: "hello" }),
            TestModel.toolCall("everything.get-sum", { a: 2, b: 3 }),
            TestModel.toolCall("everything.get-tiny-image", {}),
            TestModel.toolCall("everything.get-sum", { a: "two", b: 3 })
          ),
          TestModel.text("done")
        ])
        const started = events.find((e) => e._tag === "McpServerStarted")
        assert.isDefined(started)
        const [echo, sum, image, invalid] = results(events)
        assert.deepStrictEqual(echo, { name: "everything.echo", content: "Echo: hello", isError: false })
        assert.deepStrictEqual(sum, { name: "everything.get-sum", content: "The sum of 2 and 3 is 5.", isError: false })
        // Text parts joined, the image named on its line and sent to the model as an image.
        const parts = image!.content.split("\n")
        assert.strictEqual(parts.length, TINY_IMAGE_TEXT_PARTS)
        assert.match(parts[1]!, /^Image \(image\/png, \d+ bytes\)$/)
        const answered = (yield* session.history).find((m) => m._tag === "ToolResultMessage" && m.name === "everything.get-tiny-image")
        assert.strictEqual(answered?._tag === "ToolResultMessage" ? answered.images?.length : undefined, 1)
        const sent = answered?._tag === "ToolResultMessage" ? answered.images![0]! : undefined
        assert.strictEqual(sent?.mediaType, "image/png")
        assert.match(sent?.data ?? "", /^iVBORw0KGgo/)
        assert.deepStrictEqual(invalid, {
          name: "everything.get-sum",
          content: "Error: MCP error -32602: Input validation error: Invalid arguments for tool get-sum: Invalid input: expected number, received string at a",
          isError: true
        })
      })

    it.live("over stdio", () =>
      drive(McpServer.stdio({ name: "everything", command: node, args: [everything, "stdio"] })).pipe(Effect.scoped))

    it.live("over legacy HTTP+SSE", () =>
      Effect.gen(function*() {
        const port = yield* everythingHttp("sse")
        yield* drive(McpServer.sse({ name: "everything", url: `http://127.0.0.1:${port}/sse` }))
      }).pipe(Effect.scoped))

    it.live("over Streamable HTTP", () =>
      Effect.gen(function*() {
        const port = yield* everythingHttp("streamableHttp")
        yield* drive(McpServer.http({ name: "everything", url: `http://127.0.0.1:${port}/mcp` }))
      }).pipe(Effect.scoped))
  })

  describe("tools", () => {
    it.live("are named <prefix>.<tool>, bare with an empty prefix; isError is an error result", () =>
      Effect.gen(function*() {
        const { events } = yield* runWith([
          McpServer.stdio({ name: "fx", command: node, args: [fixture] }),
          McpServer.stdio({ name: "bare", prefix: "", command: node, args: [fixture] }),
        ].slice(0, 1).concat([McpServer.stdio({ name: "other", prefix: "o-2", command: node, args: [fixture] })]), [
          TestModel.reply(
            TestModel.toolCall("fx.echo", { text: "hi" }),
            TestModel.toolCall("o-2.fail", {}),
            TestModel.toolCall("fx.echo", {})
          ),
          TestModel.text("done")
        ])
        assert.deepStrictEqual(results(events), [
          { name: "fx.echo", content: "hi", isError: false },
          { name: "o-2.fail", content: "Error: it went wrong", isError: true },
          { name: "fx.echo", content: "Invalid arguments for tool fx.echo: text: Missing key", isError: true }
        ])
      }).pipe(Effect.scoped))
  })

  describe("retrySafe (a call cut off by a dead process runs again on resume)", () => {
    /** A session resumed with `fx.echo` and `fx.fail` started and cut off: the contents the model then reads. */
    const resumed = (server: McpServer.McpServer) =>
      Effect.gen(function*() {
        const store = yield* cutOff({
          id: "s1",
          agent: "mcp",
          prompt: "go",
          calls: [
            Message.toolCallPart({ id: "c1", name: "fx.echo", input: { text: "again" } }),
            Message.toolCallPart({ id: "c2", name: "fx.fail", input: {} })
          ],
          batch: { waiting: [], results: [], started: ["c1", "c2"] }
        })
        const session = yield* Session.start(Agent.make({ name: "mcp", model: "test:x", mcpServers: [server] }), { id: "s1", store })
        yield* session.run("next")
        const history = Option.getOrThrow(yield* store.load("s1")).messages
        return history.flatMap((m) => (m._tag === "ToolResultMessage" ? [`${m.callId}: ${m.content}`] : []))
      }).pipe(Effect.provide(TestModel.layer([TestModel.text("ok"), TestModel.text("next done")])), Effect.provide(Condukt.layer), Effect.scoped)

    it.live("a tool the server annotates idempotentHint runs once more; one without annotations reads that it was interrupted", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* resumed(McpServer.stdio({ name: "fx", command: node, args: [fixture] })), [
          "c1: again",
          `c2: ${Session.INTERRUPTED_RESULT}`
        ])
      }))

    it.live("the declaration's retrySafe wins over the annotations: false, or a list of the server's tool names", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* resumed(McpServer.stdio({ name: "fx", command: node, args: [fixture], retrySafe: false })), [
          `c1: ${Session.INTERRUPTED_RESULT}`,
          `c2: ${Session.INTERRUPTED_RESULT}`
        ])
        assert.deepStrictEqual(yield* resumed(McpServer.stdio({ name: "fx", command: node, args: [fixture], retrySafe: ["fail"] })), [
          `c1: ${Session.INTERRUPTED_RESULT}`,
          "c2: Error: it went wrong"
        ])
      }))
  })

  describe("the map form (McpServer.fromConfig)", () => {
    it("keeps auth, request_timeout and every option, in snake case or camel case", () => {
      const declared = (timeout: Record<string, number>) =>
        McpServer.fromConfig({
          name: "t",
          transport: "streamable_http",
          url: "http://127.0.0.1:1/mcp",
          headers: { "x-team": "core" },
          auth: { type: "bearer", static: "tok" },
          max_result_chars: 500,
          ...timeout
        })
      const expected: McpServer.Declaration = {
        name: "t",
        url: "http://127.0.0.1:1/mcp",
        headers: { "x-team": "core" },
        maxResultChars: 500,
        requestTimeout: 5000,
        transport: "http",
        auth: { _tag: "Bearer", token: "tok" }
      }
      assert.deepStrictEqual(declared({ request_timeout: 5000 }).declaration, expected)
      assert.deepStrictEqual(declared({ requestTimeout: 5000 }).declaration, expected)
      assert.isUndefined(declared({ requestTimeout: 5000 }).invalid)
    })

    it("takes sampling (allow, ask, deny) and max_sampling_tokens", () => {
      const server = McpServer.fromConfig({ name: "s", transport: "stdio", command: "srv", sampling: "allow", max_sampling_tokens: 200 })
      assert.deepStrictEqual(server.declaration, { name: "s", command: "srv", sampling: "allow", maxSamplingTokens: 200, transport: "stdio" })
      assert.deepStrictEqual(McpServer.fromConfig({ name: "s", transport: "stdio", command: "srv", sampling: "ask" }).declaration, {
        name: "s",
        command: "srv",
        sampling: "ask",
        transport: "stdio"
      })
      assert.strictEqual(McpServer.fromConfig({ name: "s", transport: "stdio", command: "srv", sampling: "always" }).invalid, "sampling has the wrong type (timeouts are milliseconds, sizes positive integers)")
    })

    it.live("auth on a stdio server is accepted unused, with a warning, and the server starts", () =>
      Effect.gen(function*() {
        const server = McpServer.fromConfig({ name: "fx", transport: "stdio", command: node, args: [fixture], auth: { type: "bearer", env: "FX_TOKEN" } })
        assert.deepStrictEqual(server.warnings, ["auth is unused on a stdio server (only http servers send it); pass a stdio server its token with env"])
        const { events } = yield* runWith([server], [TestModel.toolCall("fx.echo", { text: "hi" }), TestModel.text("done")])
        assert.deepStrictEqual(results(events), [{ name: "fx.echo", content: "hi", isError: false }])
      }).pipe(Effect.scoped))
  })

  describe("bad input: a typed error naming the server, nothing left running", () => {
    const startFails = (server: McpServer.McpServer, reason: string) =>
      Effect.gen(function*() {
        const agent = Agent.make({ name: "bad", model: "test:x", mcpServers: [server] })
        const error = yield* Effect.flip(Effect.scoped(Session.start(agent, { id: "s" })))
        assert.deepStrictEqual(error, new Session.SessionError({ sessionId: "s", reason: new Session.McpStartFailed({ server: server.name, description: reason }) }))
      }).pipe(Effect.provide(TestModel.layer([])), Effect.provide(Condukt.layer))

    it.live("an unknown transport", () =>
      startFails(
        McpServer.fromConfig({ name: "ws", transport: "websocket", url: "ws://localhost" }),
        "unknown transport \"websocket\": use stdio, sse or http"
      ))

    it.live("the map form keeps init_timeout, in snake case or camel case: a server that never answers fails at it", () =>
      Effect.gen(function*() {
        for (const key of ["init_timeout", "initTimeout"]) {
          yield* startFails(
            McpServer.fromConfig({ name: "mute", transport: "stdio", command: node, args: [fixture, "silent"], [key]: 1000 }),
            "no answer to initialize within 1000ms"
          )
        }
      }))

    it.live("the map form refuses an unknown key, a key given in both cases and a value of the wrong type", () =>
      Effect.gen(function*() {
        yield* startFails(
          McpServer.fromConfig({ name: "u", transport: "stdio", command: node, initTimeoutMs: 5000, bogus: true }),
          "unknown keys bogus, initTimeoutMs; a server takes name, transport, command, args, cwd, env, url, headers, auth, prefix, initTimeout, requestTimeout, listTimeout, restart, elicitation, sampling, approval, maxSamplingTokens, maxMessageBytes, maxResultChars, maxToolPages, maxTools, retrySafe (or their snake_case forms)"
        )
        yield* startFails(
          McpServer.fromConfig({ name: "u", transport: "stdio", command: node, init_timeout: 1000, initTimeout: 2000 }),
          "initTimeout is given twice (in camel case and in snake case); keep one"
        )
        yield* startFails(
          McpServer.fromConfig({ name: "u", transport: "stdio", command: node, request_timeout: "soon" }),
          "requestTimeout has the wrong type (timeouts are milliseconds, sizes positive integers)"
        )
        yield* startFails(
          McpServer.fromConfig({ name: "u", transport: "http", url: "http://127.0.0.1:1/mcp", auth: { type: "bearer", env: "T", audience: "x" } }),
          "unknown bearer auth keys audience; it takes type, env, static, op"
        )
      }))

    it.live("an invalid name", () =>
      startFails(
        McpServer.stdio({ name: "9lives", command: node, args: [fixture] }),
        "the name must start with a letter and hold only letters, digits, _ and -"
      ))

    it.live("a command that does not exist", () =>
      startFails(McpServer.stdio({ name: "nope", command: "condukt-no-such-server" }), "command not found"))

    it.live("a server that prints garbage on stdout", () =>
      startFails(
        McpServer.stdio({ name: "noisy", command: node, args: [fixture, "garbage"] }),
        "the server wrote something that is not JSON-RPC on stdout (Unexpected token 'S', \"Starting s\"... is not valid JSON)"
      ))

    it.live("a server that writes a line longer than the limit on stdout", () =>
      startFails(
        McpServer.stdio({ name: "flood", command: node, args: [fixture, "flood"] }),
        "the server wrote a line longer than 10485760 bytes on stdout (maxMessageBytes)"
      ))

    it.live("an unreachable URL (a loopback port nobody listens on), over either HTTP transport", () =>
      Effect.gen(function*() {
        const port = yield* freePort
        const url = `http://127.0.0.1:${port}/mcp`
        yield* startFails(McpServer.http({ name: "gone", url }), `could not reach ${url}: connection refused (ECONNREFUSED)`)
        yield* startFails(McpServer.sse({ name: "gone", url }), `could not reach ${url}: connection refused (ECONNREFUSED)`)
      }))

    it.live("a server that never answers initialize", () =>
      startFails(
        McpServer.stdio({ name: "mute", command: node, args: [fixture, "silent"], initTimeout: "1 second" }),
        "no answer to initialize within 1000ms"
      ))
  })
})

/**
 * Servers that try to crash the host, hang it, flood it or leak a secret through it (issue 20):
 * each a real process or loopback server.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Queue, Scope, Stream } from "effect"
import * as http from "node:http"
import * as path from "node:path"
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/client"
import { Agent, Secret, Session, type SessionEvent } from "@condukt/core"
import { Condukt, NodeProcessRunner } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { McpAuth, McpClient, McpServer } from "../src/index.ts"
import { loopbackServerWith } from "./fixtures/httpServer.ts"
import { hostile, node, results, runNode, runWith } from "./support.ts"

const victim = path.resolve(import.meta.dirname, "fixtures/endlessPages.ts")

const downReasons = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((e) => (e._tag === "McpServerDown" ? [e.description] : []))

/** Starting a session (id "s") with `server` (and `secrets`) fails: its SessionError. */
const startFailure = (server: McpServer.McpServer, secrets: Secret.Secrets<never> = {}) =>
  Effect.gen(function*() {
    const agent = Agent.make({ name: "bad", model: "test:x", mcpServers: [server], secrets })
    return yield* Effect.flip(Effect.scoped(Session.start(agent, { id: "s" })))
  }).pipe(Effect.provide(TestModel.layer([])), Effect.provide(Condukt.layer))

const startFailed = (server: string, description: string) =>
  new Session.SessionError({ sessionId: "s", reason: new Session.McpStartFailed({ server, description }) })

/** A loopback HTTP server answering every request with `status` and a body echoing its credentials. */
const echoingAuthorization = (status: number) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly server: http.Server }>((resume) => {
      const server = http.createServer((req, res) => {
        const sent = req.headers.authorization ?? req.headers["x-api-key"] ?? "none"
        res.writeHead(status, { "content-type": "text/plain" }).end(`invalid credentials: ${String(sent)}`)
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address() as { port: number }
        resume(Effect.succeed({ url: `http://127.0.0.1:${address.port}/mcp`, server }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

describe("hostile servers", () => {
  describe("tools/list", () => {
    it.live("pages that never end fail the start naming maxToolPages, within a 512 MB heap", () =>
      Effect.gen(function*() {
        const run = yield* runNode(["--max-old-space-size=512", victim, "start"])
        assert.deepStrictEqual({ code: run.code, stdout: run.stdout }, {
          code: 0,
          stdout: `${JSON.stringify({ start: "MCP server endless could not be started: tools/list did not end after 100 pages (maxToolPages)" })}\n`
        })
      }).pipe(Effect.scoped))

    it.live("pages that never end after list_changed: the tools are kept, the session goes on, within a 512 MB heap", () =>
      Effect.gen(function*() {
        const run = yield* runNode(["--max-old-space-size=512", victim, "refresh"])
        assert.deepStrictEqual({ code: run.code, stdout: run.stdout }, {
          code: 0,
          stdout: `${
            JSON.stringify({
              log: "MCP server endless: its tools could not be listed again (tools/list did not end after 100 pages (maxToolPages)); the previous tools are kept",
              echo: ["still here"]
            })
          }\n`
        })
      }).pipe(Effect.scoped))

    it.live("10,000 list_changed cost at most two more listings, and a call sent meanwhile answers", () =>
      Effect.gen(function*() {
        const declaration = McpServer.stdio({ name: "fx", command: node, args: [hostile, "flood"] }).declaration
        const listed = yield* Queue.unbounded<number>()
        const connection = yield* McpClient.connect(declaration, {}, (tools) => Effect.asVoid(Queue.offer(listed, tools.length)))
        const call = (tool: string, args: Record<string, unknown> = {}) => McpClient.caller(declaration, tool)(connection, args)
        assert.strictEqual(yield* call("flood"), "flooded")
        assert.strictEqual(yield* call("echo", { text: "in the middle" }), "in the middle")
        assert.strictEqual(yield* Queue.take(listed), connection.descriptors.length)
        // The first listing, the one the flood's first notification started, and one more at most.
        assert.isAtMost(Number(yield* call("listings")), 3)
      }).pipe(Effect.scoped, Effect.provide(NodeProcessRunner.layer)))
  })

  describe("results", () => {
    it.live("a stdio answer over maxMessageBytes fails that call only; the server stays up", () =>
      Effect.gen(function*() {
        const { events } = yield* runWith([McpServer.stdio({ name: "fx", command: node, args: [hostile, "big"] })], [
          TestModel.toolCall("fx.big", { bytes: 11 * 1024 * 1024 }),
          TestModel.toolCall("fx.echo", { text: "still up" }),
          TestModel.text("done")
        ])
        assert.deepStrictEqual(results(events), [
          {
            name: "fx.big",
            content: "Error: MCP server fx answered big with more than 10485760 bytes (its maxMessageBytes); the answer was dropped",
            isError: true
          },
          { name: "fx.echo", content: "still up", isError: false }
        ])
        assert.deepStrictEqual(downReasons(events), [])
      }).pipe(Effect.scoped))

    for (const json of [false, true]) {
      it.live(`an HTTP answer (${json ? "JSON" : "event stream"}) over maxMessageBytes fails that call only; the server stays up`, () =>
        Effect.gen(function*() {
          const server = yield* loopbackServerWith({ json })
          const { events } = yield* runWith([McpServer.http({ name: "lb", url: server.url, maxMessageBytes: 65_536 })], [
            TestModel.toolCall("lb.big", { bytes: 100_000 }),
            TestModel.toolCall("lb.echo", { text: "still up" }),
            TestModel.text("done")
          ])
          assert.deepStrictEqual(results(events), [
            {
              name: "lb.big",
              content: "Error: MCP server lb answered big with more than 65536 bytes (its maxMessageBytes); the answer was dropped",
              isError: true
            },
            { name: "lb.echo", content: "still up", isError: false }
          ])
          assert.deepStrictEqual(downReasons(events), [])
        }).pipe(Effect.scoped))
    }

    it.live("the text the model reads is cut visibly at maxResultChars: 100,000 by default, or the server's own", () =>
      Effect.gen(function*() {
        const { events } = yield* runWith([
          McpServer.stdio({ name: "fx", command: node, args: [hostile, "big"] }),
          McpServer.stdio({ name: "small", command: node, args: [hostile, "big"], maxResultChars: 10 })
        ], [
          TestModel.reply(TestModel.toolCall("fx.big", { bytes: 100_001 }), TestModel.toolCall("small.big", { bytes: 20 })),
          TestModel.text("done")
        ])
        assert.deepStrictEqual(results(events), [
          {
            name: "fx.big",
            content: `${"x".repeat(80_000)}\n\n[truncated 100001 -> 100000 chars]\n\n${"x".repeat(20_000)}`,
            isError: false
          },
          { name: "small.big", content: "xxxxxxxx\n\n[truncated 20 -> 10 chars]\n\nxx", isError: false }
        ])
      }).pipe(Effect.scoped))
  })

  it.live("an initialize answer with a wrong id and 9 MB: McpStartFailed says so in one short line", () =>
    Effect.gen(function*() {
      const error = yield* startFailure(McpServer.stdio({ name: "liar", command: node, args: [hostile, "wrong-id"] }))
      const head = `Received a response for an unknown message ID: {"jsonrpc":"2.0","id":4242,"result":{"protocolVersion":"${LATEST_PROTOCOL_VERSION}",` +
        `"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"hostile","version":"1.0.0"},"padding":"`
      assert.deepStrictEqual(error, startFailed("liar", `${head}${"p".repeat(999 - head.length)}…`))
    }))

  describe("secrets", () => {
    const declared = { API_TOKEN: Secret.static("declared-token-1234") }

    it.live("a declared secret a stdio server prints as it dies at start is redacted in McpStartFailed", () =>
      Effect.gen(function*() {
        const error = yield* startFailure(
          McpServer.stdio({ name: "fx", command: node, args: [hostile, "die-printing"], env: ["API_TOKEN"] }),
          declared
        )
        // The session passes its start errors through its redaction, which copies them: compared by fields.
        assert.deepStrictEqual({ tag: error._tag === "SessionError" ? error.reason._tag : error._tag, message: error.message }, {
          tag: "McpStartFailed",
          message: "MCP server fx could not be started: the server exited during initialize: fatal: could not log in with [REDACTED:API_TOKEN]"
        })
      }))

    it.live("a declared secret a stdio server prints as it crashes later is redacted in McpServerDown and what the model reads", () =>
      Effect.gen(function*() {
        const agent = Agent.make({
          name: "leak",
          model: "test:x",
          secrets: declared,
          mcpServers: [McpServer.stdio({ name: "fx", command: node, args: [hostile, "env-echo"], env: ["API_TOKEN"] })]
        })
        const session = yield* Session.start(agent)
        const events = Array.from(yield* Stream.runCollect(session.stream("crash")))
        const reason = "the server exited: panic: lost [REDACTED:API_TOKEN]"
        assert.deepStrictEqual(results(events), [{
          name: "fx.crash",
          content: `Error: MCP server fx is down (${reason}); its tools cannot be called until it is back`,
          isError: true
        }])
        assert.deepStrictEqual(downReasons(events), [reason])
      }).pipe(
        Effect.scoped,
        Effect.provide(TestModel.layer([TestModel.toolCall("fx.crash", {}), TestModel.text("it died")])),
        Effect.provide(Condukt.layer)
      ))

    for (const status of [401, 500]) {
      it.live(`an HTTP ${status} body echoing the bearer token (not a session secret) is redacted in McpStartFailed`, () =>
        Effect.gen(function*() {
          const server = yield* echoingAuthorization(status)
          const error = yield* startFailure(McpServer.http({ name: "p", url: server.url, auth: McpAuth.bearer("undeclared-bearer-9876") }))
          assert.deepStrictEqual(
            error,
            startFailed("p", `${server.url} answered HTTP ${status}: invalid credentials: Bearer [REDACTED:p.bearer_token]`)
          )
        }).pipe(Effect.scoped))
    }

    it.live("an API key given as a header (not a session secret) and echoed in an error body is redacted in McpStartFailed", () =>
      Effect.gen(function*() {
        const server = yield* echoingAuthorization(403)
        const error = yield* startFailure(McpServer.http({ name: "p", url: server.url, headers: { "X-Api-Key": "header-key-4321" } }))
        assert.deepStrictEqual(
          error,
          startFailed("p", `${server.url} answered HTTP 403: invalid credentials: [REDACTED:p.X-Api-Key]`)
        )
      }).pipe(Effect.scoped))

    it.live("a credential given through env, not a session secret, is redacted in results, errors and events; a plain literal is not", () =>
      Effect.gen(function*() {
        const server = McpServer.stdio({
          name: "fx",
          command: node,
          args: [hostile, "env-echo"],
          env: { API_TOKEN: "literal-token-5678", LOG_LEVEL: "debug" }
        })
        const { events } = yield* runWith([server], [
          TestModel.reply(
            TestModel.toolCall("fx.token", {}),
            TestModel.toolCall("fx.token-error", {}),
            TestModel.toolCall("fx.token-refused", {}),
            TestModel.toolCall("fx.echo", { text: "debug" })
          ),
          TestModel.toolCall("fx.crash", {}),
          TestModel.text("done")
        ])
        const reason = "the server exited: panic: lost [REDACTED:fx.API_TOKEN]"
        assert.deepStrictEqual(results(events), [
          { name: "fx.token", content: "the token is [REDACTED:fx.API_TOKEN]", isError: false },
          { name: "fx.token-error", content: "Error: login failed for [REDACTED:fx.API_TOKEN]", isError: true },
          {
            name: "fx.token-refused",
            content: "Error: MCP server fx refused token-refused: refused: [REDACTED:fx.API_TOKEN] is not allowed",
            isError: true
          },
          { name: "fx.echo", content: "debug", isError: false },
          { name: "fx.crash", content: `Error: MCP server fx is down (${reason}); its tools cannot be called until it is back`, isError: true }
        ])
        assert.deepStrictEqual(downReasons(events), [reason])
      }).pipe(Effect.scoped))
  })

  it.live("an HTTP 500 on one tools/call fails that call, not the server; the next call works", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServerWith({})
      const s = yield* Session.start(Agent.make({ name: "http", model: "test:x", mcpServers: [McpServer.http({ name: "lb", url: server.url })] }))
      server.failNext(500, "database exploded")
      const events = Array.from(yield* Stream.runCollect(s.stream("first")))
      const next = Array.from(yield* Stream.runCollect(s.stream("second")))
      assert.deepStrictEqual(results(events), [{ name: "lb.echo", content: "Error: MCP server lb failed echo: HTTP 500 database exploded", isError: true }])
      assert.deepStrictEqual(results(next), [{ name: "lb.echo", content: "again", isError: false }])
      assert.deepStrictEqual(downReasons([...events, ...next]), [])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestModel.layer([
        TestModel.toolCall("lb.echo", { text: "once" }),
        TestModel.text("failed"),
        TestModel.toolCall("lb.echo", { text: "again" }),
        TestModel.text("done")
      ])),
      Effect.provide(Condukt.layer)
    ))

  it.live("an HTTP server gone mid-session: the call names its URL and says the connection was refused", () =>
    Effect.gen(function*() {
      const serverScope = yield* Scope.make()
      const server = yield* loopbackServerWith({}).pipe(Scope.provide(serverScope))
      const s = yield* Session.start(Agent.make({ name: "http", model: "test:x", mcpServers: [McpServer.http({ name: "lb", url: server.url })] }))
      yield* Scope.close(serverScope, Exit.void)
      const events = Array.from(yield* Stream.runCollect(s.stream("go")))
      assert.deepStrictEqual(results(events), [{
        name: "lb.echo",
        content: `Error: MCP server lb is down (could not reach ${server.url}: connection refused (ECONNREFUSED)); its tools cannot be called until it is back`,
        isError: true
      }])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestModel.layer([TestModel.toolCall("lb.echo", { text: "anyone?" }), TestModel.text("gone")])),
      Effect.provide(Condukt.layer)
    ))
})

/**
 * No Node warnings from our code under load (issue 24, item 4): a thousand concurrent MCP tool
 * calls over each transport and a few hundred sessions streaming from one provider at once make
 * Node warn about nothing (a `MaxListenersExceededWarning` is what a stream waited on by one
 * 'drain' listener per write gives, or a signal shared by every request), and the MCP benchmark,
 * whose baselines run the SDK's own stdio transport, prints nothing on stderr.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as path from "node:path"
import { Agent, Session, Tools } from "@condukt/core"
import { McpServer } from "@condukt/mcp"
import { Condukt, NodeProcessRunner } from "@condukt/node"
import { Anthropic } from "@condukt/providers"
import { NodeHttpClient } from "@effect/platform-node"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { ToolCall } from "@condukt/testing"
import { everything, everythingHttp, node } from "../packages/mcp/test/support.ts"
import * as Loopback from "../packages/providers/test/loopback.ts"
import { execIn, root } from "./support/exec.ts"

const CALLS = 1_000

/** The warnings this process emits while `effect` runs. */
const warningsDuring = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const warnings: Array<string> = []
    const record = (warning: Error) => void warnings.push(`${warning.name}: ${warning.message}`)
    yield* Effect.acquireRelease(
      Effect.sync(() => process.on("warning", record)),
      () => Effect.sync(() => process.off("warning", record))
    )
    // A listener warning is emitted on the tick after the send that added it: long before the
    // answers, which come through I/O, so every one is in by the time `effect` ends.
    yield* effect
    return warnings
  })

/** `CALLS` concurrent calls of server-everything's echo through the tool a session would get. */
const concurrentEchoes = (server: McpServer.McpServer) =>
  Effect.gen(function*() {
    const tools = yield* Effect.flatten(McpServer.startAll([server]))
    const echo = tools.find((tool) => tool.name === "everything.echo")!
    const context = ToolCall.context(yield* VirtualSandbox.make())
    // Long enough messages that a burst fills the pipe to the server: writes meet backpressure.
    const echoes = yield* Effect.forEach(
      Array.from({ length: CALLS }, (_, i) => i),
      (i) => echo.call({ message: `${i}:${"x".repeat(200)}` }, context),
      { concurrency: "unbounded" }
    )
    assert.strictEqual(echoes.length, CALLS)
    assert.strictEqual(echoes[CALLS - 1], `Echo: ${CALLS - 1}:${"x".repeat(200)}`)
  }).pipe(Effect.provide(NodeProcessRunner.layer))

describe("no Node warnings under load", () => {
  it.live(`${CALLS} concurrent MCP calls over stdio`, () =>
    Effect.gen(function*() {
      const server = McpServer.stdio({ name: "everything", command: node, args: [everything, "stdio"] })
      assert.deepStrictEqual(yield* warningsDuring(concurrentEchoes(server)), [])
    }).pipe(Effect.scoped), 120_000)

  it.live(`${CALLS} concurrent MCP calls over Streamable HTTP and legacy HTTP+SSE`, () =>
    Effect.gen(function*() {
      const http = yield* everythingHttp("streamableHttp")
      const sse = yield* everythingHttp("sse")
      const warnings = yield* warningsDuring(Effect.andThen(
        concurrentEchoes(McpServer.http({ name: "everything", url: `http://127.0.0.1:${http}/mcp` })),
        concurrentEchoes(McpServer.sse({ name: "everything", url: `http://127.0.0.1:${sse}/sse` }))
      ))
      assert.deepStrictEqual(warnings, [])
    }).pipe(Effect.scoped), 120_000)

  it.live("200 sessions streaming from one provider at once", () =>
    Effect.gen(function*() {
      const sessions = 200
      const server = yield* Loopback.start(Array.from({ length: sessions }, () => Loopback.sse(Loopback.fixture("anthropic-text.sse"))))
      const anthropic = Anthropic.layer({ apiKey: Redacted.make("sk-ant-test"), baseUrl: server.url }).pipe(Layer.provide(NodeHttpClient.layerUndici))
      const agent = Agent.make({ name: "greeter", model: "anthropic:claude-sonnet-4-6", tools: Tools.readOnly })
      const oneRun = Effect.scoped(Effect.flatMap(Session.start(agent), (session) => session.run("Say hello")))
      const warnings = yield* warningsDuring(
        Effect.forEach(Array.from({ length: sessions }), () => oneRun, { concurrency: "unbounded" }).pipe(
          Effect.map((results) => assert.deepStrictEqual(new Set(results.map((result) => result.text)), new Set(["Hello, world."]))),
          Effect.provide(anthropic)
        )
      )
      assert.deepStrictEqual(warnings, [])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)), 120_000)

  it.live("the MCP benchmark's concurrent calls print nothing on stderr", () =>
    Effect.gen(function*() {
      // One measured round after the warm-up ones: 1,000 concurrent calls by each client, our
      // transport and the SDK's.
      const { exitCode, stderr } = yield* execIn(root, path.join(root, "node_modules/.bin/node"), ["bench/mcp.ts", "1", "concurrent"], {
        PATH: process.env.PATH
      })
      assert.strictEqual(stderr, "")
      assert.strictEqual(exitCode, 0)
    }), 120_000)
})

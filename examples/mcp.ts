/**
 * An agent with an MCP server: the session starts server-everything over stdio in its own scope,
 * the model (scripted here) calls two of its tools by their `<prefix>.<tool>` names, and stopping
 * the session ends the server's whole process group. docs/mcp.md
 */
import { Agent, Session } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { McpServer } from "@condukt/mcp"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, Stream } from "effect"
import { createRequire } from "node:module"

// The server is an npm package of this project (`npm install @modelcontextprotocol/server-everything`),
// found the way Node finds it and run on this Node.
const everything = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js")

const Assistant = Agent.make({
  name: "assistant",
  model: "anthropic:claude-sonnet-4-6",
  mcpServers: [McpServer.stdio({ name: "everything", command: process.execPath, args: [everything, "stdio"] })]
})

const program = Effect.gen(function*() {
  const session = yield* Session.start(Assistant)
  const lines: Array<string> = []
  yield* session.stream("Add 2 and 3, then echo hi").pipe(
    Stream.runForEach((event) =>
      Effect.sync(() => {
        if (event._tag === "McpServerStarted") lines.push(`started ${event.server} (${event.transport})`)
        if (event._tag === "ToolResult") lines.push(`${event.name} -> ${event.content}`)
      })
    )
  )
  yield* Console.log(lines.join("\n"))
}).pipe(
  Effect.scoped,
  Effect.provide(TestModel.layer([
    TestModel.reply(TestModel.toolCall("everything.get-sum", { a: 2, b: 3 }), TestModel.toolCall("everything.echo", { message: "hi" })),
    TestModel.text("5, and hi.")
  ])),
  Effect.provide(Condukt.layer)
)

NodeRuntime.runMain(program)

/**
 * A run as any OpenTelemetry backend reads it (the GenAI semantic conventions,
 * docs/observability.md): `invoke_agent <agent>` holding a `chat <model>` per model request and an
 * `execute_tool <tool>` per call, an MCP call's own request span under its tool's, a sub-agent's
 * `invoke_agent` under the `execute_tool` of the call that started it, with the conventions'
 * attributes and nothing of the prompt, the replies, the arguments or the results (so no secret)
 * in any span. A real MCP server process, a custom tool, a sub-agent, a scripted model.
 */
import { Agent, Secret, Session, Tool } from "@condukt/core"
import { McpServer } from "@condukt/mcp"
import { Condukt } from "@condukt/node"
import { Spans, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted, Schema, Tracer } from "effect"
import * as path from "node:path"
import { root } from "./support/exec.ts"

const SECRET = "tok-7c1e9f04b2"
const PROMPT = "Look up the release notes"

const server = McpServer.stdio({ name: "fx", command: process.execPath, args: [path.join(root, "packages/mcp/test/fixtures/server.ts")] })

/** A custom tool whose result quotes the session's secret (the model reads it redacted). */
const notes = Tool.make("release_notes", {
  description: "The release notes",
  parameters: Schema.Struct({ version: Schema.String }),
  call: ({ version }, { secrets }) => Effect.succeed(`notes of ${version}, fetched with ${Redacted.value(secrets["NOTES_TOKEN"]!)}`)
})

/** A sub-agent; the provided scripted model serves it too (its replies come in turn). */
const summariser = Agent.make({ name: "summariser", model: "anthropic:claude-sonnet-4-6" })

const agent = Agent.make({
  name: "releaser",
  model: "anthropic:claude-sonnet-4-6",
  tools: [notes, Agent.asTool(summariser, { description: "Summarises" })],
  mcpServers: [server],
  secrets: { NOTES_TOKEN: Secret.static(SECRET) }
})

/** A reply that also read 40 tokens from the prompt cache and wrote 8 to it. */
const cached = (reply: TestModel.Reply): TestModel.Reply => ({
  ...reply,
  parts: [...reply.parts, { _tag: "Usage", inputTokens: 0, outputTokens: 0, cacheReadTokens: 40, cacheWriteTokens: 8 }]
})

const replies = [
  TestModel.toolCall("fx.echo", { text: `say ${SECRET}` }, "call_mcp"),
  cached(TestModel.toolCall("release_notes", { version: "1.2.0" }, "call_notes")),
  TestModel.toolCall("summariser", { prompt: "Summarise the notes" }, "call_sub"),
  TestModel.text("The summary"),
  TestModel.text(`Done with ${SECRET}`)
]

const chat = (extra: Record<string, unknown>) => ({
  "gen_ai.operation.name": "chat",
  "gen_ai.provider.name": "anthropic",
  "gen_ai.request.model": "claude-sonnet-4-6",
  ...extra
})

describe("GenAI spans", () => {
  it.live("a run with an MCP call, a custom tool and a sub-agent is invoke_agent > chat, execute_tool (> McpClient.tools/call, > invoke_agent > chat), with the conventions' attributes and no secret", () =>
    Effect.gen(function*() {
      const recorder = yield* Spans.make
      const session = yield* Session.start(agent, { projectInstructions: false }).pipe(Effect.provideService(Tracer.Tracer, recorder.tracer))
      yield* session.run(PROMPT).pipe(Effect.provideService(Tracer.Tracer, recorder.tracer))
      const run = recorder.spans.find((span) => span.name === "invoke_agent releaser")!
      const child = recorder.spans.find((span) => span.name === "invoke_agent summariser")!
      // How far below the run a span is: 1 for its children, undefined for a span outside it.
      const depth = (span: Tracer.AnySpan): number | undefined => {
        if (span.spanId === run.spanId) return 0
        const parent = span._tag === "Span" ? Option.getOrUndefined(span.parent) : undefined
        const above = parent === undefined ? undefined : depth(parent)
        return above === undefined ? undefined : above + 1
      }
      const tree = recorder.spans.filter((span) => depth(span) !== undefined).map((span) => ({
        depth: depth(span),
        name: span.name,
        kind: span.kind,
        attributes: Object.fromEntries(span.attributes),
        ended: span.status._tag === "Ended"
      }))
      const tokens = { "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5 }
      assert.deepStrictEqual(tree, [
        {
          depth: 0,
          name: "invoke_agent releaser",
          kind: "internal",
          attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "releaser", "gen_ai.conversation.id": session.id, sessionId: session.id, runId: run.attributes.get("runId") },
          ended: true
        },
        { depth: 1, name: "chat claude-sonnet-4-6", kind: "client", attributes: chat({ "gen_ai.conversation.id": session.id, "gen_ai.response.finish_reasons": ["tool-calls"], ...tokens }), ended: true },
        {
          depth: 1,
          name: "execute_tool fx.echo",
          kind: "internal",
          attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fx.echo", "gen_ai.tool.call.id": "call_mcp", "gen_ai.tool.type": "function" },
          ended: true
        },
        { depth: 2, name: "McpClient.tools/call", kind: "internal", attributes: { server: "fx", tool: "echo" }, ended: true },
        {
          depth: 1,
          name: "chat claude-sonnet-4-6",
          kind: "client",
          attributes: chat({
            "gen_ai.conversation.id": session.id,
            "gen_ai.response.finish_reasons": ["tool-calls"],
            // The conventions count cached input inside input_tokens, and apart.
            "gen_ai.usage.input_tokens": 58,
            "gen_ai.usage.output_tokens": 5,
            "gen_ai.usage.cache_read.input_tokens": 40,
            "gen_ai.usage.cache_creation.input_tokens": 8
          }),
          ended: true
        },
        {
          depth: 1,
          name: "execute_tool release_notes",
          kind: "internal",
          attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "release_notes", "gen_ai.tool.call.id": "call_notes", "gen_ai.tool.type": "function" },
          ended: true
        },
        { depth: 1, name: "chat claude-sonnet-4-6", kind: "client", attributes: chat({ "gen_ai.conversation.id": session.id, "gen_ai.response.finish_reasons": ["tool-calls"], ...tokens }), ended: true },
        {
          depth: 1,
          name: "execute_tool summariser",
          kind: "internal",
          attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "summariser", "gen_ai.tool.call.id": "call_sub", "gen_ai.tool.type": "function" },
          ended: true
        },
        {
          depth: 2,
          name: "invoke_agent summariser",
          kind: "internal",
          attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "summariser", "gen_ai.conversation.id": child.attributes.get("sessionId"), sessionId: child.attributes.get("sessionId"), runId: child.attributes.get("runId") },
          ended: true
        },
        { depth: 3, name: "chat claude-sonnet-4-6", kind: "client", attributes: chat({ "gen_ai.conversation.id": child.attributes.get("sessionId"), "gen_ai.response.finish_reasons": ["stop"], ...tokens }), ended: true },
        { depth: 1, name: "chat claude-sonnet-4-6", kind: "client", attributes: chat({ "gen_ai.conversation.id": session.id, "gen_ai.response.finish_reasons": ["stop"], ...tokens }), ended: true }
      ])
      assert.notStrictEqual(child.attributes.get("sessionId"), session.id)
      const traced = Spans.text(recorder)
      assert.notInclude(traced, SECRET)
      assert.notInclude(traced, PROMPT)
      assert.notInclude(traced, "1.2.0")
      assert.notInclude(traced, "notes of")
      assert.notInclude(traced, "Summarise")
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(TestModel.layer(replies, { name: "anthropic:claude-sonnet-4-6" }), Condukt.layer))
    ))
})

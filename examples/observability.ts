/**
 * Observability: a run exported to an OpenTelemetry collector with Effect's own OTLP tracer, as
 * the GenAI semantic conventions name it (`invoke_agent`, `chat`, `execute_tool`), and its usage
 * priced by the program's table. A small OTLP/HTTP receiver on loopback stands in for the
 * collector (Jaeger, Tempo, an OTel Collector…) and prints the trace it received; a scripted
 * TestModel plays the model. docs/observability.md
 */
import { Agent, Session, Tool, Usage } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, Layer, Schema } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

interface OtlpSpan {
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly startTimeUnixNano: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

// What the collector received: every span of every POST /v1/traces.
const received: Array<OtlpSpan> = []
const collector = Effect.acquireRelease(
  Effect.callback<http.Server>((resume) => {
    const server = http.createServer((request, response) => {
      let body = ""
      request.on("data", (part) => (body += part))
      request.on("end", () => {
        for (const resource of JSON.parse(body).resourceSpans) {
          for (const scope of resource.scopeSpans) received.push(...scope.spans)
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
)

// The few lines a program adds to export its traces (point `url` at your collector).
const tracing = (url: string) =>
  OtlpTracer.layer({ url, resource: { serviceName: "release-bot" } }).pipe(
    Layer.provide([OtlpSerialization.layerJson, FetchHttpClient.layer])
  )

const ReleaseNotes = Tool.make("release_notes", {
  description: "The notes of a release",
  parameters: Schema.Struct({ version: Schema.String }),
  call: ({ version }) => Effect.succeed(`${version}: faster starts, fewer retries`)
})

const agent = Agent.make({ name: "release-bot", model: "anthropic:claude-sonnet-4-6", tools: [ReleaseNotes] })

// The program's prices, per million tokens (none is built in).
const prices = Layer.succeed(Usage.Prices, {
  "anthropic:claude-sonnet-4-6": { inputPerMillion: 3, outputPerMillion: 15 }
})

const run = Effect.gen(function*() {
  const session = yield* Session.start(agent, { projectInstructions: false })
  const result = yield* session.run("What changed in 1.2.0?")
  yield* Console.log(`${result.text}`)
  yield* Console.log(`usage: ${result.usage.inputTokens} in, ${result.usage.outputTokens} out; cost $${result.cost?.toFixed(6)}`)
}).pipe(
  Effect.scoped,
  Effect.provide(Layer.mergeAll(
    TestModel.layer([TestModel.toolCall("release_notes", { version: "1.2.0" }), TestModel.text("1.2.0 starts faster.")], {
      name: "anthropic:claude-sonnet-4-6"
    }),
    prices
  ))
)

// An OTLP attribute value: `{ stringValue: "chat" }`, `{ intValue: 10 }`, `{ arrayValue: { values: […] } }`.
const shown = (value: Record<string, unknown>): string => {
  const [kind, inner] = Object.entries(value)[0]!
  return kind === "arrayValue" ? `[${(inner as { values: Array<Record<string, unknown>> }).values.map(shown).join(", ")}]` : JSON.stringify(inner)
}

/** A span and its GenAI attributes (the session's id left out: it changes each run), then its children. */
const tree = (span: OtlpSpan, depth = 0): Array<string> => {
  const attributes = span.attributes
    .filter(({ key }) => key.startsWith("gen_ai.") && key !== "gen_ai.conversation.id")
    .map(({ key, value }) => `${key}=${shown(value)}`)
  const children = received.filter((s) => s.parentSpanId === span.spanId).sort((a, b) => a.startTimeUnixNano.localeCompare(b.startTimeUnixNano))
  return [`${"  ".repeat(depth)}${span.name}`, ...attributes.map((a) => `${"  ".repeat(depth)}  · ${a}`), ...children.flatMap((c) => tree(c, depth + 1))]
}

const program = Effect.gen(function*() {
  const server = yield* collector
  // The tracer's layer flushes what it holds when it closes, at the end of `run`.
  yield* run.pipe(Effect.provide(tracing(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`)))
  const root = received.find((span) => span.name.startsWith("invoke_agent"))!
  yield* Console.log(`The collector received:\n${tree(root).join("\n")}`)
}).pipe(Effect.scoped, Effect.provide(Condukt.layer))

NodeRuntime.runMain(program)

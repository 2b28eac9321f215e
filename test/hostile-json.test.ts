/**
 * Hostile JSON from outside (issue 37, item 5): the corpus of test/support/hostileJson.ts fed
 * through every place that parses JSON a program did not write — a model's tool-call arguments
 * (scripted, and streamed by a loopback provider), typed answers, spans with content on, every
 * session store, an MCP server's results and requests, workflow inputs (the CLI's too) and http
 * step bodies. Nothing crashes, no save is lost, each refusal is a typed error naming its bound;
 * what is accepted (lone surrogates, `__proto__` keys) round-trips and pollutes no prototype.
 */
import { Agent, JsonLimits, Message, Sandbox, Session, Snapshot, SessionStore, Tool, TraceContent } from "@condukt/core"
import { Condukt, DiskSessionStore, SqliteSessionStore } from "@condukt/node"
import * as SqliteClient from "@condukt/node/SqliteClient"
import { SqlSessionStore } from "@condukt/cluster"
import { Spans, TempDir, TestModel } from "@condukt/testing"
import * as Workflow from "../packages/workflows/src/Workflow.ts"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema, type Scope, Tracer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { McpServer } from "@condukt/mcp"
import * as OpenAi from "../packages/providers/src/OpenAi.ts"
import * as Anthropic from "../packages/providers/src/Anthropic.ts"
import * as Runs from "../packages/providers/test/agentRuns.ts"
import * as Loopback from "../packages/providers/test/loopback.ts"
import { hostile, node, results, runWith } from "../packages/mcp/test/support.ts"
import { execIn, root } from "./support/exec.ts"
import { serve } from "../packages/workflows/test/support.ts"
import * as Hostile from "./support/hostileJson.ts"

const tempDir = TempDir.make("condukt-hostile-json-")

/** What the model reads for a call whose arguments broke `bound`. */
const refusedCall = (tool: string, bound: string) =>
  `Invalid arguments for tool ${tool}: the arguments hold ${bound}, past what a tool takes; call ${tool} again with flatter, smaller arguments`

const TOO_DEEP = `more than ${JsonLimits.MAX_DEPTH} levels of nesting`

/** A tool taking any object: it answers how deep its arguments nest. */
const Depth = Tool.make("depth", {
  description: "Measures its arguments",
  parameters: { type: "object", properties: {} },
  call: (input) => Effect.succeed(`depth ${Hostile.depthOf(input)}`)
})

const measurer = Agent.make({ name: "measurer", model: "test:x", tools: [Depth] })

const toolResults = (messages: ReadonlyArray<Message.Message>) =>
  messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [[m.isError, m.content] as const] : []))

describe("a model's tool-call arguments", () => {
  it.live("nested 100,000 deep, one level past the bound, or holding a 100 MB string: the model reads the bound, the session goes on, and restarted from the disk store it has its whole history", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const replies = [
        TestModel.toolCall("depth", Hostile.nested(Hostile.DEEP), "c1"),
        TestModel.text("one done"),
        TestModel.toolCall("depth", Hostile.nested(Hostile.JUST_UNDER), "c2"),
        TestModel.text("two done"),
        TestModel.toolCall("depth", Hostile.nested(Hostile.JUST_OVER), "c3"),
        TestModel.text("three done"),
        TestModel.toolCall("depth", { text: Hostile.hugeString() }, "c4"),
        TestModel.text("four done")
      ]
      const history = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* DiskSessionStore.make({ dir })
        const session = yield* Session.start(measurer, { id: "s1", store, sandbox: Sandbox.layerNoop() })
        for (const prompt of ["one", "two", "three", "four"]) assert.strictEqual((yield* session.run(prompt)).text, `${prompt} done`)
        return yield* session.history
      })).pipe(Effect.provide(TestModel.layer(replies)))
      const expected: ReadonlyArray<readonly [boolean, string]> = [
        [true, refusedCall("depth", TOO_DEEP)],
        [false, `depth ${Hostile.JUST_UNDER}`],
        [true, refusedCall("depth", TOO_DEEP)],
        [true, refusedCall("depth", `a string of more than ${JsonLimits.MAX_STRING_CHARS} characters`)]
      ]
      assert.deepStrictEqual(toolResults(history), expected)
      // The refused arguments are kept as their stand-in: small, and saying why.
      const calls = history.flatMap((m) => (m._tag === "AssistantMessage" ? m.parts.flatMap((p) => (p._tag === "ToolCall" ? [p.input] : [])) : []))
      assert.deepStrictEqual(calls.map((input) => JsonLimits.refusal(input) ?? Hostile.depthOf(input)), [
        TOO_DEEP,
        Hostile.JUST_UNDER,
        TOO_DEEP,
        `a string of more than ${JsonLimits.MAX_STRING_CHARS} characters`
      ])
      // Another process's view: a new store on the same directory resumes the whole history.
      const resumed = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* DiskSessionStore.make({ dir })
        const session = yield* Session.start(measurer, { id: "s1", store, sandbox: Sandbox.layerNoop() })
        const before = yield* session.history
        assert.strictEqual((yield* session.run("five")).text, "five done")
        return before
      })).pipe(Effect.provide(TestModel.layer([TestModel.text("five done")])))
      assert.deepStrictEqual(resumed, history)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("with content on in spans, 100,000-deep arguments end in an error result and a stand-in in the span; the next run works", () =>
    Effect.gen(function*() {
      const recorder = yield* Spans.make
      const traced = Effect.provideService(Tracer.Tracer, recorder.tracer)
      const session = yield* Session.start(measurer, { sandbox: Sandbox.layerNoop() }).pipe(traced)
      const first = yield* session.run("one").pipe(traced)
      assert.deepStrictEqual(toolResults(first.messages), [[true, refusedCall("depth", TOO_DEEP)]])
      assert.strictEqual((yield* session.run("two").pipe(traced)).text, "two done")
      const span = recorder.spans.find((s) => s.name === "execute_tool depth")
      assert.strictEqual(span?.attributes.get("gen_ai.tool.call.arguments"), JSON.stringify(`[refused JSON: the value holds ${TOO_DEEP}]`))
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(
        TestModel.layer([TestModel.toolCall("depth", Hostile.nested(Hostile.DEEP), "c1"), TestModel.text("one done"), TestModel.text("two done")]),
        TraceContent.layer
      ))
    ))
})

describe("a typed answer", () => {
  const Answer = Schema.Struct({ answer: Schema.String })
  const correction = `Your answer does not match the required schema:\nThe answer holds ${TOO_DEEP}, past what an answer may be: answer with flatter, smaller JSON.\nAnswer again.`

  it.live("submitted 100,000 deep: the model reads the correction, its next answer is the run's; saved and resumed from the disk store", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = yield* DiskSessionStore.make({ dir })
      const session = yield* Session.start(measurer, { id: "s1", store, sandbox: Sandbox.layerNoop() })
      const result = yield* session.run("answer", { output: Answer })
      assert.deepStrictEqual(result.value, { answer: "flat" })
      assert.deepStrictEqual(toolResults(result.messages), [[true, correction], [false, "Answer received."]])
      assert.strictEqual((yield* session.run("again")).text, "again done")
      const saved = Option.getOrThrow(yield* (yield* DiskSessionStore.make({ dir })).load("s1"))
      assert.deepStrictEqual(saved.messages, yield* session.history)
    }).pipe(
      Effect.scoped,
      Effect.provide(NodeServices.layer),
      Effect.provide(TestModel.layer([
        TestModel.toolCall("submit", Hostile.nested(Hostile.DEEP), "a1"),
        TestModel.toolCall("submit", { answer: "flat" }, "a2"),
        TestModel.text("again done")
      ]))
    ))

  it.live("written 100,000 deep as a native answer's text: the model reads the correction", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(measurer, { sandbox: Sandbox.layerNoop() })
      const result = yield* session.run("answer", { output: Answer })
      assert.deepStrictEqual(result.value, { answer: "flat" })
      const corrections = result.messages.flatMap((m) => (m._tag === "UserMessage" ? [m.content] : []))
      assert.deepStrictEqual(corrections, [correction])
    }).pipe(
      Effect.scoped,
      Effect.provide(TestModel.layer([TestModel.text(Hostile.nestedText(Hostile.DEEP)), TestModel.text(`{"answer":"flat"}`)], { nativeOutput: true }))
    ))
})

/** Every store, each made in `dir`; the cluster's SQL store on SQLite. */
const stores: ReadonlyArray<readonly [string, (dir: string) => Effect.Effect<SessionStore.Service, unknown, Scope.Scope>]> = [
  ["memory", () => Effect.sync(SessionStore.makeMemory)],
  ["disk", (dir) => DiskSessionStore.make({ dir }).pipe(Effect.provide(NodeServices.layer))],
  ["sqlite", (dir) => SqliteSessionStore.make({ file: path.join(dir, "sessions.db") })],
  [
    "sql (cluster)",
    (dir) =>
      Effect.flatMap(Layer.build(SqliteClient.layer({ file: path.join(dir, "cluster.db") })), (context) =>
        SqlSessionStore.make({ location: path.join(dir, "cluster.db") }).pipe(Effect.provide(context)))
  ]
]

const snapshot = (fields: Partial<Snapshot.Snapshot>): Snapshot.Snapshot =>
  Snapshot.make({ id: "s1", agent: "a", model: "test:x", messages: [Message.user("hi")], assigns: {}, createdAt: 1, updatedAt: 1, ...fields })

describe.each(stores)("the %s store", (_name, open) => {
  it.live("a save JSON cannot hold, or past what a load reads back, fails typed and leaves the save before it; lone surrogates and __proto__ keys round-trip", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = yield* open(dir)
      const good = snapshot({
        messages: [Message.user(Hostile.loneSurrogates.join(" ")), Message.assistant([Message.toolCallPart({ id: "c1", name: "depth", input: Hostile.protoKeys() })])],
        assigns: { surrogates: Hostile.loneSurrogates, proto: Hostile.protoKeys(), under: Hostile.nested(JsonLimits.stored.maxDepth - 2) }
      })
      yield* store.save(good)
      const refusals: Array<string> = []
      const refused = (bad: Snapshot.Snapshot, appended?: number) =>
        Effect.flip(store.save(bad, { appended })).pipe(Effect.map((error) => {
          assert.strictEqual(error.reason._tag, "Corrupt")
          refusals.push(error.reason.message)
        }))
      yield* refused({ ...good, assigns: { deep: Hostile.nested(Hostile.DEEP) } })
      yield* refused({ ...good, assigns: { over: Hostile.nested(JsonLimits.stored.maxDepth) } })
      const deepCall = Message.assistant([Message.toolCallPart({ id: "c2", name: "depth", input: Hostile.nested(Hostile.DEEP) })])
      yield* refused({ ...good, messages: [...good.messages, deepCall] }, 1)
      const cycle: Record<string, unknown> = {}
      cycle["self"] = cycle
      yield* refused({ ...good, assigns: { cycle } })
      const deepText = `not a session snapshot (it cannot be written as JSON: it holds more than ${JsonLimits.stored.maxDepth} levels of nesting)`
      assert.deepStrictEqual(refusals.slice(0, 3), [deepText, deepText, deepText])
      const loaded = Option.getOrThrow(yield* store.load("s1"))
      assert.deepStrictEqual(loaded, good)
      const proto = loaded.assigns["proto"] as Record<string, unknown>
      assert.deepStrictEqual([Object.keys(proto), Object.getPrototypeOf(proto) === Object.prototype, Hostile.polluted()], [["__proto__", "constructor", "x"], true, false])
      // The store goes on: the next save is written.
      const next = { ...good, messages: [...good.messages, Message.user("next")] }
      yield* store.save(next, { appended: 1 })
      assert.deepStrictEqual(Option.getOrThrow(yield* store.load("s1")).messages, next.messages)
    }).pipe(Effect.scoped))
})

describe("a stored snapshot nested 100,000 deep", () => {
  it.live("fails the disk store's load as Corrupt, naming the file; the file is left as it was", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "s1.json")
      const text = `{"generation":"g","snapshot":${Hostile.nestedText(Hostile.DEEP)}}`
      fs.writeFileSync(file, text)
      const store = yield* DiskSessionStore.make({ dir })
      const error = yield* Effect.flip(store.load("s1"))
      assert.strictEqual(error.message, `SessionStore.load: session s1 at ${file}: not a session snapshot (it holds more than ${JsonLimits.stored.maxDepth} levels of nesting)`)
      assert.strictEqual(fs.readFileSync(file, "utf8"), text)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("a provider streaming tool-call arguments", () => {
  /** The first call's arguments (reading a.txt) with a key nested 100,000 deep in front, as the wire escapes them. */
  const deepKey = `{\\"deep\\": ${Hostile.nestedArrayText(Hostile.DEEP)}, \\"pa`
  const provider = (make: typeof OpenAi.layer | typeof Anthropic.layer, key: string) => Loopback.provider(make, key)

  const cases = [
    {
      name: "OpenAI's Chat Completions",
      model: "openai:gpt-4.1-mini",
      provider: provider(OpenAi.layer, "sk-test-openai"),
      tools: Loopback.fixture("openai-tools.sse").replace(`"arguments":"{\\"pa"`, `"arguments":"${deepKey}"`),
      final: Loopback.fixture("openai-final.sse")
    },
    {
      name: "Anthropic's Messages",
      model: "anthropic:claude-sonnet-4-6",
      provider: provider(Anthropic.layer, "sk-ant-test"),
      tools: Loopback.fixture("anthropic-tools.sse").replace(`"partial_json":"{\\"pa"`, `"partial_json":"${deepKey}"`),
      final: Loopback.fixture("anthropic-final.sse")
    }
  ]

  for (const wire of cases) {
    it.live(`over ${wire.name}: arguments nested 100,000 deep reach the model as the bound; its other call runs, the run goes on`, () =>
      Effect.gen(function*() {
        assert.notStrictEqual(wire.tools.indexOf(Hostile.nestedArrayText(64)), -1)
        const { result } = yield* Runs.run(Runs.reader(wire.model), wire.provider, [Loopback.sse(wire.tools), Loopback.sse(wire.final)], "Read them")
        assert.deepStrictEqual(toolResults(result.messages), [
          [true, refusedCall("Read", TOO_DEEP)],
          [false, "beta\n"]
        ])
        assert.strictEqual(result.text, "a.txt says alpha; b.txt says beta.")
      }).pipe(Effect.provide(Condukt.layer)))
  }
})

describe("an MCP server", () => {
  const server = (maxMessageBytes?: number) =>
    McpServer.stdio({ name: "fx", command: node, args: [hostile, "big"], ...(maxMessageBytes === undefined ? {} : { maxMessageBytes }) })
  const raw = (json: string) => TestModel.toolCall("fx.raw", { json })

  it.live("a result nested 100,000 deep, or with a million keys, fails that call naming the bound; one with __proto__ keys and lone surrogates reads as sent", () =>
    Effect.gen(function*() {
      const text = (value: string) => `{"content":[{"type":"text","text":${JSON.stringify(value)}}]}`
      const { events } = yield* runWith([server(64 * 1024 * 1024)], [
        TestModel.reply(
          raw(`{"content":[],"structuredContent":${Hostile.nestedText(Hostile.DEEP)}}`),
          TestModel.toolCall("fx.wide", { keys: Hostile.MANY_KEYS }),
          raw(`{"content":[{"type":"text","text":"kept"}],"structuredContent":${Hostile.protoKeysText}}`),
          raw(text(Hostile.loneSurrogates.join(" ")))
        ),
        TestModel.text("done")
      ])
      const refused = (tool: string, bound: string) =>
        `Error: MCP server fx answered ${tool} with JSON that holds ${bound}, past what Condukt takes from a server; the answer was dropped`
      assert.deepStrictEqual(results(events), [
        { name: "fx.raw", content: refused("raw", TOO_DEEP), isError: true },
        { name: "fx.wide", content: refused("wide", `an object of more than ${JsonLimits.MAX_KEYS} keys`), isError: true },
        { name: "fx.raw", content: "kept", isError: false },
        // What reaches the model is text: each lone surrogate reads as U+FFFD, the rest as sent.
        { name: "fx.raw", content: "\ufffd a\ufffdb \ufffd\ufffd", isError: false }
      ])
      assert.isFalse(Hostile.polluted())
    }).pipe(Effect.scoped))

  it.live("an elicitation request whose form nests 100,000 deep is answered with an error naming the bound; the session goes on", () =>
    Effect.gen(function*() {
      const params = `{"message":"fill it","requestedSchema":{"type":"object","properties":{"x":${Hostile.nestedText(Hostile.DEEP)}}}}`
      const { events } = yield* runWith([server()], [TestModel.toolCall("fx.elicit", { json: params }), TestModel.text("done")])
      assert.deepStrictEqual(results(events), [{
        name: "fx.elicit",
        content: JSON.stringify({
          jsonrpc: "2.0",
          id: "elicit-1",
          error: { code: -32602, message: `the params hold ${TOO_DEEP}, past what this client takes` }
        }),
        isError: false
      }])
    }).pipe(Effect.scoped))
})

describe("workflow inputs and http bodies", () => {
  const WORKFLOW = `workflow "configure" {
  input "config" {
    type = "object"
  }
  input "url" {
    type = "string"
    default = "http://127.0.0.1:1"
  }
  http "get" {
    method = "GET"
    url = input.url
    max_body_bytes = 33554432
  }
  output = task.get.body
}
`
  const run = (inputs: Readonly<Record<string, unknown>>) =>
    Effect.flatMap(Workflow.parse(WORKFLOW, "configure.hcl"), (document) => Workflow.run(document, { inputs }))

  it.live("an input nested 100,000 deep, or past the bound by one, fails the run before its first step, naming the input", () =>
    Effect.gen(function*() {
      for (const depth of [Hostile.DEEP, Hostile.JUST_OVER]) {
        const error = yield* Effect.flip(run({ config: Hostile.nested(depth) }))
        assert.deepStrictEqual([error.reason, error.message], [
          "InvalidInputs",
          `input config holds ${TOO_DEEP}, past what an input may be; pass a smaller value`
        ])
      }
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("a JSON body nested 100,000 deep, or with a million keys, fails the http step naming the bound; __proto__ keys and lone surrogates come through as sent", () =>
    Effect.gen(function*() {
      const bodies = [
        Hostile.nestedText(Hostile.DEEP),
        Hostile.manyKeysText(),
        `{"proto":${Hostile.protoKeysText},"text":${JSON.stringify(Hostile.loneSurrogates)}}`
      ]
      let n = 0
      const server = yield* serve((_, response) => {
        response.writeHead(200, { "content-type": "application/json" })
        response.end(bodies[n++])
      })
      const bound = (what: string) =>
        ["OutputTooLarge", `step get: GET ${server.url} answered with JSON that holds ${what}, past what a step takes; ask the server for less, or for text`]
      const failed = (error: { readonly reason: string; readonly message: string }) => [error.reason, error.message]
      assert.deepStrictEqual(failed(yield* Effect.flip(run({ config: {}, url: server.url }))), bound(TOO_DEEP))
      assert.deepStrictEqual(failed(yield* Effect.flip(run({ config: {}, url: server.url }))), bound(`an object of more than ${JsonLimits.MAX_KEYS} keys`))
      const output = (yield* run({ config: Hostile.protoKeys(), url: server.url })).output as Record<string, unknown>
      assert.deepStrictEqual(output, { proto: Hostile.protoKeys(), text: Hostile.loneSurrogates })
      assert.deepStrictEqual([Object.keys(output["proto"] as object), Hostile.polluted()], [["__proto__", "constructor", "x"], false])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("the CLI: --input holding JSON nested 30,000 deep (argv holds at most 128 KiB) exits 2 naming the input, in either form", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      fs.writeFileSync(path.join(dir, "configure.hcl"), WORKFLOW)
      const condukt = path.join(root, "node_modules/.bin/condukt")
      const env = { PATH: `${path.join(root, "node_modules/.bin")}:/usr/bin:/bin`, HOME: os.tmpdir() }
      const deep = Hostile.nestedArrayText(30_000)
      const pair = yield* execIn(dir, condukt, ["run", "configure.hcl", "--quiet", "--input", `config=${deep}`], env)
      const object = yield* execIn(dir, condukt, ["run", "configure.hcl", "--quiet", "--input", `{"config":${deep}}`], env)
      const expected = {
        stdout: "",
        stderr: `--input config: the value holds ${TOO_DEEP}, past what an input may be; pass a smaller value\n`,
        exitCode: 2
      }
      assert.deepStrictEqual([pair, object], [expected, expected])
    }).pipe(Effect.scoped))
})

describe("a program's own store that throws while it encodes", () => {
  it.live("fails that save, logged; the session goes on and keeps its history", () =>
    Effect.gen(function*() {
      const memory = SessionStore.makeMemory()
      const throwing: SessionStore.Service = {
        ...memory,
        save: (snapshot, options) =>
          Effect.flatMap(Effect.sync(() => JSON.stringify({ snapshot, deep: Hostile.nested(Hostile.DEEP) })), () => memory.save(snapshot, options))
      }
      const session = yield* Session.start(measurer, { id: "s1", store: throwing, sandbox: Sandbox.layerNoop() })
      assert.strictEqual((yield* session.run("one")).text, "one done")
      assert.strictEqual((yield* session.run("two")).text, "two done")
      assert.deepStrictEqual((yield* session.history).length, 4)
      assert.isTrue(Option.isNone(yield* memory.load("s1")))
    }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.text("one done"), TestModel.text("two done")]))))
})

/**
 * The secret leak hunt (issue 20): one value planted in every text a server controls — a provider
 * gateway's error bodies, stream error event and reply text, an MCP server's results, errors,
 * refusals and dying words over stdio and HTTP, a tool's defect, a command's output, the assigns a
 * store writes, an `http` step's answer, a sub-agent call's prompt — and looked for in every
 * channel a reader has: events, errors, log lines, spans, the disk and SQLite stores' files, the
 * `condukt` binary's stdout, stderr and `--json`, and the requests of the models a value must not
 * reach. Every scenario must show the value's name at least once (the value really reached a
 * channel) and the value nowhere.
 */
import { Agent, Model, Sandbox, Secret, Session, Tool, Tools, TraceContent } from "@condukt/core"
import { Condukt, DiskSessionStore, LocalSandbox, SqliteSessionStore } from "@condukt/node"
import { Anthropic } from "@condukt/providers"
import { McpAuth, McpServer } from "@condukt/mcp"
import { Spans, TempDir, TestModel } from "@condukt/testing"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Formatter, Layer, Logger, Schema, Stream, Tracer } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import * as Loopback from "../packages/providers/test/loopback.ts"
import { execIn, root } from "./support/exec.ts"

const SECRET = "hunt-7e3a91c4d2b8f0"
const node = process.execPath
const hostile = path.join(root, "packages/mcp/test/fixtures/hostile.ts")
const condukt = path.join(root, "node_modules/.bin/condukt")

/**
 * Runs `effect` under a recording tracer and logger; gives everything it returned, every span and
 * every log line as one text.
 */
const channels = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const recorder = yield* Spans.make
    const logs: Array<string> = []
    const logger = Logger.make((options) => {
      logs.push(`${Formatter.format(options.message)} ${Cause.pretty(options.cause)}`)
    })
    const exit = yield* Effect.exit(effect.pipe(Effect.provideService(Tracer.Tracer, recorder.tracer), Effect.provide(Logger.layer([logger]))))
    const returned = exit._tag === "Success" ? JSON.stringify(exit.value) : Cause.pretty(exit.cause)
    return `${returned}\n${Spans.text(recorder)}\n${logs.join("\n")}`
  })

/** The value is nowhere in `seen`, and `names` each stand for it at least once. */
const clean = (seen: string, names: ReadonlyArray<string>) => {
  assert.notInclude(seen, SECRET)
  for (const name of names) assert.include(seen, `[REDACTED:${name}]`)
}

/** Every event, the run's error where it failed, and the history, of each prompt in turn. */
const runs = (session: Session.Session, prompts: ReadonlyArray<string>) =>
  Effect.forEach(prompts, (prompt) =>
    Effect.gen(function*() {
      const events = Array.from(yield* Stream.runCollect(session.stream(prompt)))
      return { events, history: yield* session.history }
    }))

/** A loopback HTTP server answering every request with `status` and a body echoing its Authorization header. */
const echoing = (status: number) =>
  Effect.acquireRelease(
    Effect.callback<http.Server>((resume) => {
      const server = http.createServer((req, res) => {
        req.resume()
        res.writeHead(status, { "content-type": "text/plain" }).end(`refused: ${req.headers.authorization ?? "none"}`)
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as { port: number }).port}`))

const tempDir = TempDir.make("condukt-hunt-")

/** Every byte of every file under `dir`, as text. */
const filesUnder = (dir: string): string =>
  fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => fs.readFileSync(path.join(entry.parentPath, entry.name)).toString("latin1"))
    .join("\n")

describe("secret leak hunt", () => {
  it.live("a provider gateway echoing the key in a 401, a 500, a stream error event and the reply text", () =>
    Effect.gen(function*() {
      const error = (type: string) => JSON.stringify({ type: "error", error: { type, message: `bad key ${SECRET}` } })
      const text = Loopback.fixture("anthropic-text.sse")
        .replace(`"text":"Hello"`, `"text":"the key is ${SECRET.slice(0, 7)}"`)
        .replace(`"text":", world."`, `"text":"${SECRET.slice(7)}, as you sent it"`)
      const server = yield* Loopback.start([
        Loopback.body(401, error("authentication_error")),
        Loopback.body(500, error("api_error")),
        Loopback.sse(`event: error\ndata: ${error("api_error")}\n\n`),
        Loopback.sse(text)
      ])
      const provider = Loopback.provider(Anthropic.layer, SECRET)(server, { retry: false })
      const seen = yield* channels(Effect.gen(function*() {
        const session = yield* Session.start(Agent.make({ name: "a", model: "anthropic:claude-sonnet-4-6" }), { sandbox: Sandbox.layerNoop() })
        const refused = yield* Effect.flip(session.run("first"))
        return { refused, message: refused.message, rest: yield* runs(session, ["second", "third", "fourth"]) }
      }).pipe(Effect.scoped, Effect.provide(provider)))
      assert.strictEqual(server.requests[0]!.headers["x-api-key"], SECRET)
      assert.include(seen, "the key is [REDACTED:ANTHROPIC_API_KEY], as you sent it")
      clean(seen, ["ANTHROPIC_API_KEY"])
    }).pipe(Effect.scoped))

  it.live("MCP servers over stdio echoing a credential in results, error results, refusals and dying words", () =>
    Effect.gen(function*() {
      const calls = ["token", "token-error", "token-refused", "crash"]
      const script = (server: string) => [
        ...calls.map((name) => TestModel.toolCall(`${server}.${name}`, {})),
        TestModel.text("done")
      ]
      const agent = Agent.make({
        name: "a",
        model: "test:x",
        secrets: { API_TOKEN: Secret.static(SECRET) },
        mcpServers: [McpServer.stdio({ name: "declared", command: node, args: [hostile, "env-echo"], env: ["API_TOKEN"] })]
      })
      // The same server given the value as a literal: a credential by its name, never declared.
      const literal = Agent.make({
        name: "b",
        model: "test:x",
        mcpServers: [McpServer.stdio({ name: "literal", command: node, args: [hostile, "env-echo"], env: { API_TOKEN: SECRET } })]
      })
      const declared = yield* channels(Effect.gen(function*() {
        const session = yield* Session.start(agent, { sandbox: Sandbox.layerNoop() })
        return yield* runs(session, ["go"])
      }).pipe(Effect.scoped, Effect.provide(TestModel.layer(script("declared")))))
      const given = yield* channels(Effect.gen(function*() {
        const session = yield* Session.start(literal, { sandbox: Sandbox.layerNoop() })
        return yield* runs(session, ["go"])
      }).pipe(Effect.scoped, Effect.provide(TestModel.layer(script("literal")))))
      assert.include(declared, "McpServerDown")
      clean(declared, ["API_TOKEN"])
      clean(given, ["literal.API_TOKEN"])
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("MCP servers that fail the start echoing a credential: a stdio server dying, an HTTP server's 401", () =>
    Effect.gen(function*() {
      const url = yield* echoing(401)
      const start = <R>(agent: Agent.Agent<R>) => channels(Effect.flip(Effect.scoped(Session.start(agent, { sandbox: Sandbox.layerNoop() }))))
      const dying = yield* start(Agent.make({
        name: "a",
        model: "test:x",
        secrets: { API_TOKEN: Secret.static(SECRET) },
        mcpServers: [McpServer.stdio({ name: "dying", command: node, args: [hostile, "die-printing"], env: ["API_TOKEN"] })]
      }))
      const refusing = yield* start(Agent.make({
        name: "b",
        model: "test:x",
        mcpServers: [McpServer.http({ name: "remote", url: `${url}/mcp`, auth: McpAuth.bearer(Secret.static(SECRET)) })]
      }))
      assert.include(dying, "McpStartFailed")
      assert.include(refusing, "McpStartFailed")
      clean(dying, ["API_TOKEN"])
      clean(refusing, ["remote.bearer_token"])
    }).pipe(Effect.provide(Layer.merge(TestModel.layer([]), Condukt.layer))))

  it.live("a command's output, a tool's defect and assigns holding the value, saved by the disk and SQLite stores", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const Dies = Tool.make("dies", {
        description: "dies",
        parameters: Schema.Struct({}),
        call: () => Effect.die(new Error(`lost the connection holding ${SECRET}`))
      })
      const Remember = Tool.make("remember", {
        description: "keeps the value in assigns",
        parameters: Schema.Struct({}),
        call: () => Effect.succeed(Tool.assign("kept", { token: SECRET, [SECRET]: ["nested", { deep: SECRET }] }))
      })
      const agent = Agent.make({ name: "a", model: "test:x", tools: [...Tools.coding, Dies, Remember], secrets: { DB_PASSWORD: Secret.static(SECRET) } })
      const script = [
        TestModel.toolCall("Bash", { command: "echo \"connecting with $DB_PASSWORD\"" }),
        TestModel.toolCall("dies", {}),
        TestModel.toolCall("remember", {}),
        TestModel.text("done")
      ]
      const stores = [
        DiskSessionStore.layer({ dir: path.join(dir, "disk") }).pipe(Layer.provide(NodeServices.layer)),
        SqliteSessionStore.layer({ file: path.join(dir, "sessions.db") })
      ]
      for (const store of stores) {
        const seen = yield* channels(Effect.gen(function*() {
          const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd: dir }) })
          // `session.assigns` is the tools' own state, in memory: it keeps the value (a later
          // call may need it); what a store writes of it is a channel, and is looked at below.
          return yield* runs(session, ["go"])
        }).pipe(Effect.scoped, Effect.provide(Layer.merge(TestModel.layer(script), store))))
        clean(seen, ["DB_PASSWORD"])
        assert.include(seen, "lost the connection holding [REDACTED:DB_PASSWORD]")
      }
      clean(filesUnder(dir), ["DB_PASSWORD"])
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("a parent's secret written into a sub-agent's prompt, and by the sub-agent into its own's: no model request, event, span or history after the parent's holds it", () =>
    Effect.gen(function*() {
      // main (holds DEPLOY_TOKEN) > middle > leaf, neither below declaring it. Each model writes
      // the value into its call (a gateway could): the children must redact with their ancestors'
      // secrets, and each caller's next request must hold its call's arguments redacted.
      const leaf = Agent.make({ name: "leaf", model: "leaf:x" })
      const middle = Agent.make({ name: "middle", model: "middle:x", tools: [Agent.asTool(leaf, { description: "Leaf" })] })
      const main = Agent.make({
        name: "main",
        model: "main:x",
        tools: [Agent.asTool(middle, { description: "Middle" })],
        secrets: { DEPLOY_TOKEN: Secret.static(SECRET) }
      })
      const models = yield* Effect.forEach(
        [
          [TestModel.toolCall("middle", { prompt: `deploy with ${SECRET}` }), TestModel.text("all done")],
          [TestModel.toolCall("leaf", { prompt: `the token is ${SECRET}` }), TestModel.text(`middle used ${SECRET}`)],
          [TestModel.text(`leaf says ${SECRET}`)]
        ],
        (script, i) => TestModel.make(script, { name: `${["main", "middle", "leaf"][i]}:x` })
      )
      const [parent, child, grandchild] = models
      const providers = Model.layerProviders({
        main: () => Effect.succeed(parent!.model),
        middle: () => Effect.succeed(child!.model),
        leaf: () => Effect.succeed(grandchild!.model)
      })
      const seen = yield* channels(Effect.gen(function*() {
        const session = yield* Session.start(main, { sandbox: Sandbox.layerNoop(), projectInstructions: false })
        return yield* runs(session, ["go"])
      }).pipe(Effect.scoped, Effect.provide(Layer.merge(providers, TraceContent.layer))))
      const [sent, childSent, grandchildSent] = yield* Effect.forEach(models, ({ recorder }) => recorder.requests)
      const text = (messages: ReadonlyArray<unknown>) => JSON.stringify(messages)
      // The child's and the grandchild's first requests: the prompt, the value's name in it.
      assert.strictEqual(text(childSent![0]!.messages), text([{ _tag: "UserMessage", content: "deploy with [REDACTED:DEPLOY_TOKEN]" }]))
      assert.strictEqual(text(grandchildSent![0]!.messages), text([{ _tag: "UserMessage", content: "the token is [REDACTED:DEPLOY_TOKEN]" }]))
      // Each caller's next request: its call's arguments hold the name.
      const call = (messages: ReadonlyArray<unknown>) => (messages[1] as { parts: ReadonlyArray<unknown> }).parts[0]
      assert.deepStrictEqual(call(sent![1]!.messages), { _tag: "ToolCall", id: "call_1", name: "middle", input: { prompt: "deploy with [REDACTED:DEPLOY_TOKEN]" } })
      assert.deepStrictEqual(call(childSent![1]!.messages), { _tag: "ToolCall", id: "call_1", name: "leaf", input: { prompt: "the token is [REDACTED:DEPLOY_TOKEN]" } })
      assert.include(seen, "leaf says [REDACTED:DEPLOY_TOKEN]")
      assert.include(seen, "middle used [REDACTED:DEPLOY_TOKEN]")
      // The spans held content (TraceContent): the grandchild's own chat span among them.
      assert.include(seen, "gen_ai.input.messages")
      clean(`${seen}\n${JSON.stringify([sent!.slice(1), childSent, grandchildSent])}`, ["DEPLOY_TOKEN"])
    }))

  it.live("the condukt binary: an MCP server and an http step echoing their credentials, on stdout, stderr and --json", () =>
    Effect.gen(function*() {
      const url = yield* echoing(500)
      const dir = yield* tempDir
      const workflow = (name: string, body: string) => fs.writeFileSync(path.join(dir, `${name}.hcl`), `workflow "${name}" {\n${body}\n}\n`)
      workflow("server", `  mcp_server "tracker" {\n    transport = "http"\n    url = "${url}/mcp"\n    auth = { type = "bearer", env = "TRACKER_TOKEN" }\n  }\n  tool "me" {\n    id = "tracker.whoami"\n  }\n  output = task.me`)
      workflow("hook", `  http "call" {\n    method = "GET"\n    url = "${url}/hook"\n    headers = { authorization = "Bearer ${SECRET}" }\n    expect_status = [500]\n  }\n  output = task.call.body`)
      const env = { PATH: `${path.join(root, "node_modules/.bin")}:/usr/bin:/bin`, HOME: dir, TRACKER_TOKEN: SECRET }
      const outputs = yield* Effect.forEach(
        [["run", "server.hcl"], ["run", "server.hcl", "--json"], ["run", "hook.hcl"], ["run", "hook.hcl", "--json"], ["check", "hook.hcl"]],
        (args) => execIn(dir, condukt, args, env)
      )
      const seen = JSON.stringify(outputs)
      assert.deepStrictEqual(outputs.map((o) => o.exitCode), [1, 1, 0, 0, 0])
      clean(seen, ["tracker.bearer_token", "HTTP_CALL_AUTHORIZATION"])
    }).pipe(Effect.scoped))
})

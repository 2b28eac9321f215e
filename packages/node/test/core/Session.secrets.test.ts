/**
 * Secrets in a running session: values reach the processes, never the model. Real Bash on a
 * LocalSandbox, a scripted model recording every request.
 */
import { Spans, TempDir, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Deferred, Effect, Formatter, Layer, Logger, Redacted, Schema, Stream, Tracer } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as Condukt from "../../src/Condukt.ts"
import * as Model from "@condukt/core/Model"
import * as ModelError from "@condukt/core/ModelError"
import * as Redactor from "@condukt/core/Redactor"
import * as Sandbox from "@condukt/core/Sandbox"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import * as Secret from "@condukt/core/Secret"
import * as Session from "@condukt/core/Session"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import * as Tool from "@condukt/core/Tool"
import type * as ToolSource from "@condukt/core/ToolSource"
import * as Tools from "@condukt/core/Tools"

const TOKEN = "tok-4f9a2c81e7"

const tempDir = TempDir.make("condukt-secrets-")

/**
 * Writes the secret in two writes that always reach the reader as two chunks: the first 5 bytes,
 * then, once the pipe is empty (FIONREAD on Linux, 0x541B: the sandbox has read them), the rest;
 * then a line saying so. Perl, as on every Debian (`perl-base` is essential). A wait on the pipe,
 * not on time: under load the halves still arrive apart.
 */
const SPLIT_WRITER = `perl -e '
  my $token = $ENV{API_TOKEN};
  syswrite STDOUT, substr($token, 0, 5);
  my $left = pack("i", -1);
  until (unpack("i", $left) == 0) { select(undef, undef, undef, 0.001); ioctl(STDOUT, 0x541B, $left) or die "FIONREAD: $!" }
  syswrite STDOUT, substr($token, 5) . "\\n";
  print "the first 5 bytes were read before the rest was written\\n"'`

/** Runs `command` through Bash in a session holding TOKEN; returns what the session produced. */
const runBash = (command: string, prompt = "show it") =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const agent = Agent.make({ name: "leaky", model: "test:x", tools: Tools.coding, secrets: { API_TOKEN: Secret.env("UPSTREAM_TOKEN") } })
    const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd: dir }) })
    const events = yield* Stream.runCollect(session.stream(prompt))
    const history = yield* session.history
    const requests = yield* (yield* TestModel.TestModel).requests
    const result = history.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))[0]!
    return { events, history, requests, result }
  }).pipe(
    Effect.scoped,
    Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.toolCall("Bash", { command }), TestModel.text("done")]),
      Condukt.layer,
      ConfigProvider.layer(ConfigProvider.fromUnknown({ UPSTREAM_TOKEN: TOKEN }))
    ))
  )

describe("Session secrets", () => {
  it.live("a tool that prints a secret: requests, events, history and every byte produced hold only its name", () =>
    Effect.gen(function*() {
      const { events, history, requests, result } = yield* runBash(`echo "token is $API_TOKEN"`, `my token is ${TOKEN}, use it`)
      assert.strictEqual(result, "token is [REDACTED:API_TOKEN]\n")
      assert.deepStrictEqual(requests[1]!.messages.at(-1), {
        _tag: "ToolResultMessage",
        callId: "call_1",
        name: "Bash",
        content: "token is [REDACTED:API_TOKEN]\n",
        isError: false
      })
      assert.deepStrictEqual(history[0], { _tag: "UserMessage", content: "my token is [REDACTED:API_TOKEN], use it" })
      const everything = JSON.stringify({ events, history, requests })
      assert.notInclude(everything, TOKEN)
      assert.include(everything, "[REDACTED:API_TOKEN]")
    }))

  it.live("a secret split across two output chunks is redacted whole", () =>
    Effect.gen(function*() {
      const { result } = yield* runBash(SPLIT_WRITER)
      assert.strictEqual(result, "[REDACTED:API_TOKEN]\nthe first 5 bytes were read before the rest was written\n")
    }))

  it.live("a secret embedded in a longer token is replaced inside it", () =>
    Effect.gen(function*() {
      const { result } = yield* runBash(`echo "Bearer-x$API_TOKEN-y"`)
      assert.strictEqual(result, "Bearer-x[REDACTED:API_TOKEN]-y\n")
    }))

  it.live("a secret printed one character per line is not recognised (exact match only, as documented)", () =>
    Effect.gen(function*() {
      const { result } = yield* runBash(`echo "$API_TOKEN" | fold -w1 | head -3`)
      assert.strictEqual(result, "t\no\nk\n")
    }))

  it.live("a secret straddling the output limit's cut leaves nothing of itself", () =>
    Effect.gen(function*() {
      // 51,195 bytes then the token: the 50 KiB cut falls inside it.
      const { result } = yield* runBash(`head -c 51195 /dev/zero | tr '\\0' a; echo "$API_TOKEN"`)
      assert.notInclude(result, TOKEN.slice(0, 4))
      assert.include(result, "(output truncated)")
    }))

  it.live("each call of a tool that hands secrets to a process is audited by name, after its ToolCall", () =>
    Effect.gen(function*() {
      const { events } = yield* runBash("true")
      const tags = events.map((e: SessionEvent.SessionEvent) => e._tag)
      assert.deepStrictEqual(tags.slice(tags.indexOf("ToolCall"), tags.indexOf("ToolResult") + 1), ["ToolCall", "SecretsUsed", "ToolResult"])
      const audit = events.find((e) => e._tag === "SecretsUsed")
      assert.deepStrictEqual(audit?._tag === "SecretsUsed" && [audit.callId, audit.name, audit.secrets], ["call_1", "Bash", ["API_TOKEN"]])
    }))

  it.live("the program's Redactor runs after the session's secrets", () =>
    Effect.gen(function*() {
      const { result } = yield* runBash(`echo "$API_TOKEN ada@example.com"`).pipe(Effect.provide(Redactor.layerRegex()))
      assert.strictEqual(result, "[REDACTED:API_TOKEN] [REDACTED:EMAIL]\n")
    }))

  it.effect("start options add secrets and replace the agent's of the same name", () =>
    Effect.gen(function*() {
      const seen = yield* Deferred.make<Readonly<Record<string, string>>>()
      const sandbox = Sandbox.layerNoop({
        exec: (_command, options) =>
          Effect.as(Deferred.succeed(seen, options?.env ?? {}), { output: "", exitCode: 0, truncated: false })
      })
      const agent = Agent.make({ name: "a", model: "test:x", tools: Tools.coding, secrets: { A: Secret.static("agent-a"), B: Secret.static("agent-b") } })
      const session = yield* Session.start(agent, { sandbox, secrets: { B: Secret.static(Redacted.make("start-b")), C: Secret.static("start-c") } })
      yield* session.run("go")
      assert.deepStrictEqual(yield* Deferred.await(seen), { A: "agent-a", B: "start-b", C: "start-c" })
    }).pipe(Effect.provide(TestModel.layer([TestModel.toolCall("Bash", { command: "env" }), TestModel.text("ok")]))))

  it.effect("a missing secret stops the start with SecretError (SecretsInitFailed) naming it; nothing was built", () =>
    Effect.gen(function*() {
      let built = 0
      const sandbox = Layer.effect(Sandbox.Sandbox, Effect.sync(() => (built++, Sandbox.makeNoop())))
      const agent = Agent.make({ name: "a", model: "test:x", secrets: { GH: Secret.env("GITHUB_TOKEN_THAT_IS_NOT_SET") } })
      const error = yield* Effect.flip(Session.start(agent, { sandbox }))
      assert.strictEqual(error._tag, "SecretError")
      assert.strictEqual(error._tag === "SecretError" && error.reason._tag, "SecretsInitFailed")
      assert.strictEqual(error.message, "Secret GH could not be resolved: environment variable GITHUB_TOKEN_THAT_IS_NOT_SET is not set")
      assert.strictEqual(built, 0)
    }).pipe(Effect.provide(Layer.merge(TestModel.layer([]), ConfigProvider.layer(ConfigProvider.fromUnknown({}))))))

  describe("what leaves the runtime", () => {
    /**
     * Runs `effect` under a recording tracer and logger: what it returned, and every text the
     * spans and log lines hold.
     */
    const observed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        const recorder = yield* Spans.make
        const logs: Array<string> = []
        const logger = Logger.make((options) => {
          logs.push(`${Formatter.format(options.message)} ${Cause.pretty(options.cause)}`)
        })
        const value = yield* effect.pipe(Effect.provideService(Tracer.Tracer, recorder.tracer), Effect.provide(Logger.layer([logger])))
        return { value, traced: `${Spans.text(recorder)}\n${logs.join("\n")}` }
      })

    const runOnce = (session: Session.Session) =>
      Effect.gen(function*() {
        const events = Array.from(yield* Stream.runCollect(session.stream("go")))
        const error = yield* Effect.flip(session.run("again"))
        return { events, error, history: yield* session.history }
      })

    const KEY = "sk-gateway-echo-8c41d2"

    it.live("a key the model's gateway echoes in its error reaches no event, run error, span or log line", () =>
      Effect.gen(function*() {
        // The key is the model's own (`Model.secrets`), not a secret the session declared.
        const model: Model.Service = {
          name: "acme:m",
          secrets: { ACME_API_KEY: Redacted.make(KEY) },
          stream: () =>
            Stream.fail(new ModelError.ModelError({
              model: "acme:m",
              reason: new ModelError.Unauthorized({ provider: "acme", status: 401, description: `invalid key ${KEY}` })
            }))
        }
        const { traced, value } = yield* observed(Effect.gen(function*() {
          const session = yield* Session.start(Agent.make({ name: "a", model: "acme:m" }), { sandbox: Sandbox.layerNoop() })
          return yield* runOnce(session)
        }).pipe(Effect.scoped, Effect.provideService(Model.Model, model)))
        assert.strictEqual(value.error.message, "acme: the API key was refused (HTTP 401): invalid key [REDACTED:ACME_API_KEY]")
        assert.strictEqual(value.error._tag, "ModelError")
        const error = value.events.find((e) => e._tag === "Error")
        assert.strictEqual(error?._tag === "Error" ? error.message : undefined, value.error.message)
        assert.include(traced, "invoke_agent a")
        assert.include(traced, "chat m")
        assert.include(traced, "[REDACTED:ACME_API_KEY]")
        assert.notInclude(JSON.stringify(value) + traced, KEY)
      }))

    it.live("a tool that dies with a secret in its defect: the model's copy and the log line hold only its name", () =>
      Effect.gen(function*() {
        const Dies = Tool.make("dies", {
          description: "dies",
          parameters: Schema.Struct({}),
          call: (_, { secrets }) => Effect.die(new Error(`cannot reach db with ${Redacted.value(secrets.DB_PASSWORD!)}`))
        })
        const agent = Agent.make({ name: "a", model: "test:x", tools: [Dies], secrets: { DB_PASSWORD: Secret.static(TOKEN) } })
        const { traced, value } = yield* observed(Effect.gen(function*() {
          const session = yield* Session.start(agent, { sandbox: Sandbox.layerNoop() })
          yield* session.run("go")
          return yield* session.history
        }).pipe(Effect.scoped))
        const result = value.find((m) => m._tag === "ToolResultMessage")
        assert.strictEqual(result?.content, "Tool dies crashed: cannot reach db with [REDACTED:DB_PASSWORD]")
        assert.include(traced, "Tool dies crashed")
        assert.include(traced, "Error: cannot reach db with [REDACTED:DB_PASSWORD]")
        assert.notInclude(traced, TOKEN)
      }).pipe(Effect.provide(TestModel.layer([TestModel.toolCall("dies", {}), TestModel.text("ok")]))))

    it.live("an MCP server's own credential is redacted from its events and its tools' results", () =>
      Effect.gen(function*() {
        // A source that resolved a credential for itself and says so (`Running.secrets`), then
        // repeats it: in why it went down, and in what its tool returns.
        const source: ToolSource.ToolSource = {
          _tag: "ToolSource",
          name: "srv",
          start: (context) =>
            Effect.succeed({
              secrets: { SRV_TOKEN: Redacted.make(KEY) },
              tools: Effect.as(
                context.emit({ _tag: "McpServerDown", server: "srv", description: `401 for Bearer ${KEY}` }),
                [Tool.make("srv.echo", { description: "echo", parameters: Schema.Struct({}), call: () => Effect.succeed(`token=${KEY}`) })]
              )
            })
        }
        const session = yield* Session.start(Agent.make({ name: "a", model: "test:x", mcpServers: [source] }), { sandbox: Sandbox.layerNoop() })
        const events = Array.from(yield* Stream.runCollect(session.stream("go")))
        const down = events.find((e) => e._tag === "McpServerDown")
        assert.strictEqual(down?._tag === "McpServerDown" ? down.description : undefined, "401 for Bearer [REDACTED:SRV_TOKEN]")
        const result = events.find((e) => e._tag === "ToolResult")
        assert.strictEqual(result?._tag === "ToolResult" ? result.content : undefined, "token=[REDACTED:SRV_TOKEN]")
        assert.notInclude(JSON.stringify(events), KEY)
      }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.toolCall("srv.echo", {}), TestModel.text("ok")]))))

    it.live("an end held back as a possible secret is let out before the reply's tool call, and the call runs", () =>
      Effect.gen(function*() {
        const Noop = Tool.make("noop", { description: "noop", parameters: Schema.Struct({}), call: () => Effect.succeed("ok") })
        const agent = Agent.make({ name: "a", model: "test:x", tools: [Noop], secrets: { API_TOKEN: Secret.static(TOKEN) } })
        const session = yield* Session.start(agent, { sandbox: Sandbox.layerNoop() })
        const events = Array.from(yield* Stream.runCollect(session.stream("go")))
        const tags = events.map((e) => e._tag)
        const deltas = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))
        // "tok-4f" could begin the token: held until the tool call shows it does not.
        assert.deepStrictEqual(deltas.join(""), "checking tok-4fdone")
        assert.isBelow(tags.indexOf("TextDelta"), tags.indexOf("ToolCall"))
        const history = yield* session.history
        assert.deepStrictEqual(history[1], {
          _tag: "AssistantMessage",
          parts: [{ _tag: "Text", text: "checking tok-4f" }, { _tag: "ToolCall", id: "call_1", name: "noop", input: {} }]
        })
      }).pipe(
        Effect.scoped,
        Effect.provide(TestModel.layer([
          TestModel.reply(TestModel.text("checking tok-4f", { chunkSize: 4 }), TestModel.toolCall("noop", {})),
          TestModel.text("done")
        ]))
      ))

    it.live("a reply failing mid-stream shows no piece of a secret it was spelling out, nor the failure's copy of it", () =>
      Effect.gen(function*() {
        const agent = Agent.make({ name: "a", model: "test:x", secrets: { API_TOKEN: Secret.static(TOKEN) } })
        const session = yield* Session.start(agent, { sandbox: Sandbox.layerNoop() })
        const events = Array.from(yield* Stream.runCollect(session.stream("go")))
        const deltas = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))
        assert.strictEqual(deltas.join(""), "the token is ")
        const error = events.find((e) => e._tag === "Error")
        assert.strictEqual(error?._tag === "Error" ? error.message : undefined, "gateway lost [REDACTED:API_TOKEN]")
        assert.notInclude(JSON.stringify(events), "tok-4f")
      }).pipe(
        Effect.scoped,
        Effect.provide(TestModel.layer([
          TestModel.error(`gateway lost ${TOKEN}`, { before: TestModel.text(`the token is ${TOKEN.slice(0, 8)}`, { chunkSize: 3 }) })
        ]))
      ))

    it.live("a secret in the model's streamed reply is redacted in every delta, the reply and the history, split or not", () =>
      Effect.gen(function*() {
        const agent = Agent.make({ name: "a", model: "test:x", secrets: { API_TOKEN: Secret.static(TOKEN) } })
        const session = yield* Session.start(agent, { sandbox: Sandbox.layerNoop() })
        const events = Array.from(yield* Stream.runCollect(session.stream("go")))
        const deltas = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))
        assert.strictEqual(deltas.join(""), `the gateway says ${"[REDACTED:API_TOKEN]"} and tok-4f again`)
        // No delta shows a piece of the value: the start of one waits for the rest.
        assert.isTrue(deltas.every((delta) => !delta.includes("tok-4f9")))
        const history = yield* session.history
        assert.deepStrictEqual(history.at(-1), {
          _tag: "AssistantMessage",
          parts: [{ _tag: "Text", text: "the gateway says [REDACTED:API_TOKEN] and tok-4f again" }]
        })
      }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.text(`the gateway says ${TOKEN} and tok-4f again`, { chunkSize: 3 })]))))
  })
})

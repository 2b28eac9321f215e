import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Ref, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Agent from "@condukt/core/Agent"
import * as Condukt from "../src/Condukt.ts"
import * as LocalSandbox from "../src/sandbox/Local.ts"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Session from "@condukt/core/Session"
import * as Tool from "@condukt/core/Tool"
import * as Tools from "@condukt/core/Tools"

const Shout = Tool.make("shout", {
  description: "Upper-cases text",
  parameters: Schema.Struct({ text: Schema.String }),
  call: ({ text }) => Effect.succeed(text.toUpperCase())
})

/** A sandbox layer that counts how often it is built and released. */
const counting = (built: Ref.Ref<number>, released: Ref.Ref<number>) =>
  Layer.unwrap(Effect.acquireRelease(
    Ref.update(built, (n) => n + 1).pipe(Effect.as(Sandbox.layerNoop())),
    () => Ref.update(released, (n) => n + 1)
  ))

describe("Condukt", () => {
  it.effect("run answers one prompt on a transient session and releases it", () =>
    Effect.gen(function*() {
      const built = yield* Ref.make(0)
      const released = yield* Ref.make(0)
      const answer = yield* Condukt.run("shout hi", {
        model: "test:x",
        tools: [Shout],
        system: "Shout.",
        sandbox: counting(built, released)
      })
      assert.strictEqual(answer.text, "HI!")
      assert.deepStrictEqual([yield* Ref.get(built), yield* Ref.get(released)], [1, 1])
      const [request] = yield* (yield* TestModel.TestModel).requests
      assert.strictEqual(request!.system, "Shout.")
    }).pipe(Effect.provide(TestModel.layer([TestModel.toolCall("shout", { text: "hi" }), TestModel.text("HI!")]))))

  it.effect("run with an output Schema gives the decoded answer as value, typed", () =>
    Effect.gen(function*() {
      const answer = yield* Condukt.run("shout hi", {
        model: "test:x",
        tools: [Shout],
        sandbox: Sandbox.layerNoop(),
        output: Schema.Struct({ shouted: Schema.String })
      })
      const shouted: string = answer.value.shouted
      assert.strictEqual(shouted, "HI!")
    }).pipe(Effect.provide(TestModel.layer([TestModel.toolCall("shout", { text: "hi" }), TestModel.toolCall("submit", { shouted: "HI!" })]))))

  it.effect("run with onEvent hands over every event of the run before its result, a failed run's too", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const onEvent = (event: { readonly _tag: string }) => Effect.sync(() => void seen.push(event._tag))
      const answer = yield* Condukt.run("shout hi", { model: "test:x", tools: [Shout], sandbox: Sandbox.layerNoop(), onEvent })
      assert.strictEqual(answer.text, "HI!")
      assert.deepStrictEqual(seen, ["AgentStart", "TurnStart", "TurnEnd", "ToolCall", "ToolResult", "TurnStart", "TextDelta", "TurnEnd", "AgentEnd"])
      seen.length = 0
      const error = yield* Effect.flip(Condukt.run("again", { model: "test:x", sandbox: Sandbox.layerNoop(), onEvent }))
      assert.strictEqual(error._tag, "ModelError")
      assert.deepStrictEqual(seen, ["AgentStart", "TurnStart", "Error", "AgentEnd"])
    }).pipe(Effect.provide(TestModel.layer([TestModel.toolCall("shout", { text: "hi" }), TestModel.text("HI!"), TestModel.error("the model is down")]))))

  it.effect("run without a model fails with a typed ModelError asking for one, before anything is built", () =>
    Effect.gen(function*() {
      const built = yield* Ref.make(0)
      const released = yield* Ref.make(0)
      // Options read from JSON (or written in JavaScript) can lack what the type requires.
      const fromJson: Condukt.RunOptions<never> = JSON.parse('{"system": "Be brief."}')
      const error = yield* Effect.flip(Condukt.run("hi", { ...fromJson, sandbox: counting(built, released) }))
      assert.strictEqual(error._tag, "ModelError")
      assert.strictEqual(
        error.message,
        `No model given: name one as "provider:model" (registered providers: anthropic, deepseek, google, groq, lmstudio, mistral, ollama, openai, openai-responses, openrouter, together, vllm, xai)`
      )
      assert.deepStrictEqual([yield* Ref.get(built), yield* Ref.get(released)], [0, 0])
    }).pipe(Effect.provide(Condukt.layer)))

  it.effect("stream yields the run's events and ends the session with the stream", () =>
    Effect.gen(function*() {
      const built = yield* Ref.make(0)
      const released = yield* Ref.make(0)
      const events = yield* Stream.runCollect(
        Condukt.stream("hello", { model: "test:x", name: "greeter", tools: [Shout], sandbox: counting(built, released) })
      )
      assert.deepStrictEqual(events.map((e) => e._tag), [
        "AgentStart",
        "TurnStart",
        "TurnEnd",
        "ToolCall",
        "ToolResult",
        "TurnStart",
        "TextDelta",
        "TurnEnd",
        "AgentEnd"
      ])
      assert.deepStrictEqual([yield* Ref.get(built), yield* Ref.get(released)], [1, 1])
    }).pipe(Effect.provide(TestModel.layer([TestModel.toolCall("shout", { text: "hi" }), TestModel.text("hi there")]))))

  it.effect("a session builds its sandbox for its first run (the project's instructions are read through it), not before", () =>
    Effect.gen(function*() {
      const built = yield* Ref.make(0)
      const released = yield* Ref.make(0)
      const agent = Agent.make({ name: "greeter", model: "test:x", sandbox: counting(built, released) })
      const idle = yield* Session.start(agent)
      assert.deepStrictEqual([yield* Ref.get(built), yield* Ref.get(released)], [0, 0])
      yield* idle.run("hello")
      assert.deepStrictEqual([yield* Ref.get(built), yield* Ref.get(released)], [1, 0])
      // Without project instructions, only a tool call builds it.
      const plain = yield* Session.start(agent, { projectInstructions: false })
      assert.strictEqual((yield* plain.run("hello")).text, "hi again")
      assert.deepStrictEqual([yield* Ref.get(built), yield* Ref.get(released)], [1, 0])
      yield* Effect.all([idle.stop, plain.stop])
      assert.deepStrictEqual([yield* Ref.get(built), yield* Ref.get(released)], [1, 1])
    }).pipe(Effect.provide(TestModel.layer([TestModel.text("hi there"), TestModel.text("hi again")]))))

  it.live("layer gives sessions without a sandbox a LocalSandbox at the process's working directory", () =>
    Effect.gen(function*() {
      const answer = yield* Condukt.run("where am I?", { model: "test:x", tools: Tools.readOnly })
      assert.strictEqual(answer.text, "done")
      const requests = yield* (yield* TestModel.TestModel).requests
      const result = requests[1]!.messages.at(-1)
      assert.deepStrictEqual(result?._tag === "ToolResultMessage" && result.content, `${process.cwd()}\n`)
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.toolCall("Bash", { command: "pwd" }), TestModel.text("done")]),
      Condukt.layer
    ))))

  it.live("run takes a LocalSandbox layer as its sandbox; Condukt.layer provides what it needs", () =>
    Effect.gen(function*() {
      const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-run-")))
      const answer = yield* Condukt.run("where am I?", {
        model: "test:x",
        tools: Tools.readOnly,
        sandbox: LocalSandbox.layer({ cwd: dir }),
        modelOptions: { maxTokens: 64 }
      }).pipe(Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))))
      assert.strictEqual(answer.text, "done")
      const requests = yield* (yield* TestModel.TestModel).requests
      const result = requests[1]!.messages.at(-1)
      assert.deepStrictEqual(result?._tag === "ToolResultMessage" && result.content, `${dir}\n`)
      assert.deepStrictEqual(requests.map((r) => r.options), [{ maxTokens: 64 }, { maxTokens: 64 }])
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.toolCall("Bash", { command: "pwd" }), TestModel.text("done")]),
      Condukt.layer
    ))))
})

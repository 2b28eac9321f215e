/**
 * A user's TypeScript module, typechecked (strict, NodeNext) against the installed tarballs'
 * declarations by test/pack.test.ts; the workspace's own typecheck reads it against the sources.
 */
import { Agent, type Message, type Sandbox, Session, Tool, Tools } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { TestModel } from "@condukt/testing"
import { Effect, type Layer, Schema } from "effect"

const Shout = Tool.make("shout", {
  description: "Upper-cases a text",
  parameters: Schema.Struct({ text: Schema.String }),
  call: ({ text }) => Effect.succeed(text.toUpperCase())
})

const agent = Agent.make({ name: "reader", model: "test:scripted", tools: [...Tools.coding, Shout] })

const toolOutputs = (history: ReadonlyArray<Message.Message>): Array<string> =>
  history.flatMap((message) => (message._tag === "ToolResultMessage" ? [message.content] : []))

export const readHello = <RIn>(sandbox: Layer.Layer<Sandbox.Sandbox, unknown, RIn>) =>
  Effect.gen(function*() {
    const session = yield* Session.start(agent, { sandbox })
    const result: Session.RunResult = yield* session.run("What does hello.txt say?")
    return `${toolOutputs(yield* session.history).join(" ")} -> ${result.text}`
  }).pipe(
    Effect.scoped,
    Effect.provide(TestModel.layer([TestModel.toolCall("Bash", { command: "cat hello.txt" }), TestModel.text("It says hello.")]))
  )

export const both = Effect.all([
  readHello(LocalSandbox.layer({ cwd: "/tmp" })),
  readHello(VirtualSandbox.layer({ files: { "hello.txt": "hello" } }))
]).pipe(Effect.provide(Condukt.layer))

// Declarations that degraded to `any` would accept these; the real ones refuse them.
// @ts-expect-error a tool's parameters are a Schema
Tool.make("broken", { description: "", parameters: 42, call: () => Effect.succeed("") })
// @ts-expect-error a virtual file's content is text
VirtualSandbox.layer({ files: { "a.txt": 1 } })

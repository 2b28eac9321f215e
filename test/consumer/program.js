// A user's program, run with plain Node from a project that installed the packed tarballs
// (test/pack.test.ts): one agent, one session on a LocalSandbox and one on a VirtualSandbox.
import { Agent, Session, Tools } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { TestModel } from "@condukt/testing"
import { Effect } from "effect"

const agent = Agent.make({ name: "reader", model: "test:scripted", tools: Tools.coding })

const readHello = (sandbox) =>
  Effect.gen(function*() {
    const session = yield* Session.start(agent, { sandbox })
    const result = yield* session.run("What does hello.txt say?")
    const seen = (yield* session.history).flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content.trim()] : []))
    return `${seen.join(" ")} -> ${result.text}`
  }).pipe(
    Effect.scoped,
    Effect.provide(TestModel.layer([TestModel.toolCall("Bash", { command: "cat hello.txt" }), TestModel.text("It says hello.")]))
  )

const program = Effect.gen(function*() {
  console.log(`local: ${yield* readHello(LocalSandbox.layer({ cwd: process.argv[2] }))}`)
  console.log(`virtual: ${yield* readHello(VirtualSandbox.layer({ files: { "hello.txt": "hello from memory\n" } }))}`)
})

Effect.runPromise(Effect.provide(program, Condukt.layer)).catch((error) => {
  console.error(error)
  process.exitCode = 1
})

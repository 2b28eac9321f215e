/**
 * The demo: an agent with the coding tools tidies a notes file in a temporary directory and
 * streams its events to the terminal. No provider is wired in yet, so a scripted TestModel plays
 * the model; the tools, the sandbox and the processes are real.
 *
 * Run it with `npx -y pnpm@10.34.9 demo`.
 */
import { Agent, Condukt, LocalSandbox, Session, type SessionEvent, Tools } from "@condukt/core"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, FileSystem, Layer, Stream } from "effect"
import { NodeServices } from "@effect/platform-node"

const script = [
  TestModel.reply(
    TestModel.text("I'll write the notes, then look at them."),
    TestModel.toolCall("Write", { path: "notes.md", content: "# Notes\n\n- TODO: buy milk\n- call Ada\n" })
  ),
  TestModel.reply(
    TestModel.toolCall("Bash", { command: "wc -l notes.md && grep -n TODO notes.md" }),
    TestModel.toolCall("Grep", { pattern: "Ada" })
  ),
  TestModel.toolCall("Edit", { path: "notes.md", old_text: "- TODO: buy milk", new_text: "- DONE: buy milk" }),
  TestModel.toolCall("Read", { path: "notes.md" }),
  TestModel.text("The notes are tidy: the milk is bought and Ada is still to be called.")
]

const show = (event: SessionEvent.SessionEvent): string | undefined => {
  switch (event._tag) {
    case "AgentStart":
      return `▶ run ${event.runId.slice(0, 8)}: ${event.prompt}`
    case "TurnStart":
      return `\n── turn ${event.turn}`
    case "ToolCall":
      return `→ ${event.name} ${JSON.stringify(event.input)}`
    case "ToolResult":
      return `${event.isError ? "✗" : "←"} ${event.content.split("\n").join("\n  ")}`
    case "AgentEnd":
      return `\n■ ${event.outcome}`
    case "Error":
      return `! ${event.message}`
    default:
      return undefined
  }
}

const demo = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "condukt-demo-" })
  yield* Console.log(`No provider API key is wired in yet: a scripted TestModel plays the model.`)
  yield* Console.log(`The tools are real; they work in ${dir}.\n`)

  const agent = Agent.make({ name: "tidier", model: "test:scripted", system: "You tidy notes.", tools: Tools.coding })
  let midLine = false // streamed text has no newline of its own
  const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd: dir, allowedPaths: [dir] }) })
  yield* session.stream("Write my notes, then mark the milk as bought.").pipe(
    Stream.runForEach((event) => {
      if (event._tag === "TextDelta") {
        return Effect.sync(() => {
          midLine = true
          process.stdout.write(event.text)
        })
      }
      const line = show(event)
      if (line === undefined) return Effect.void
      const out = midLine ? `\n${line}` : line
      midLine = false
      return Console.log(out)
    })
  )
  const final = yield* fs.readFileString(`${dir}/notes.md`)
  if (!final.includes("DONE: buy milk")) return yield* Effect.die(`the edit did not land: ${final}`)
  yield* Console.log(`\nnotes.md now reads:\n${final}`)
}).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(TestModel.layer(script), Condukt.layer, NodeServices.layer)))

NodeRuntime.runMain(demo)

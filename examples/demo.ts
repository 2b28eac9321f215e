/**
 * The demo: an agent with the coding tools tidies a notes file in a temporary directory and
 * streams its events to the terminal. With ANTHROPIC_API_KEY (or OPENAI_API_KEY) set it talks to
 * that provider (ANTHROPIC_BASE_URL / OPENAI_BASE_URL redirect it); otherwise a scripted TestModel
 * plays the model. It says which. The tools, the sandbox and the processes are real either way.
 *
 * Run it with `npx -y pnpm@10.34.9 demo`.
 */
import { Agent, Session, type SessionEvent, Tools } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, FileSystem, Layer, Stream } from "effect"

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

// A real provider when its key is set; the scripted model otherwise.
const real = process.env.ANTHROPIC_API_KEY
  ? "anthropic:claude-sonnet-4-6"
  : process.env.OPENAI_API_KEY
  ? "openai:gpt-4.1-mini"
  : undefined

const demo = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "condukt-demo-" })
  yield* Console.log(
    real === undefined
      ? "No ANTHROPIC_API_KEY or OPENAI_API_KEY is set: a scripted TestModel plays the model."
      : `Using the real model ${real} (its key is set in the environment).`
  )
  yield* Console.log(`The tools are real; they work in ${dir}.\n`)

  const agent = Agent.make({
    name: "tidier",
    model: real ?? "test:scripted",
    system: "You tidy notes. Work in the current directory.",
    tools: Tools.coding
  })
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
  if (real !== undefined) return
  yield* Console.log(`\nnotes.md now reads:\n${yield* fs.readFileString(`${dir}/notes.md`)}`)
}).pipe(
  Effect.scoped,
  Effect.provide(real === undefined ? Layer.mergeAll(TestModel.layer(script), Condukt.layer) : Condukt.layer)
)

NodeRuntime.runMain(demo)

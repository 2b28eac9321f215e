/**
 * Approvals: every Bash call waits for a person's answer, Write is refused by a rule without
 * asking. Here the "person" is code reading the session's events: it denies `rm -rf` with a
 * reason and approves the rest. The model reads each denial as the call's result and the run goes
 * on. A scripted TestModel plays the model; Bash really runs. docs/approvals.md
 */
import { Agent, Session, Tools } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, Layer, Stream } from "effect"

const janitor = Agent.make({
  name: "janitor",
  model: "anthropic:claude-sonnet-4-6",
  tools: [Tools.Bash, Tools.Write],
  approvals: { ask: ["Bash"], deny: ["Write"] }
})

const program = Effect.gen(function*() {
  const session = yield* Session.start(janitor)
  yield* session.stream("Clean up the build").pipe(
    Stream.runForEach((event) => {
      switch (event._tag) {
        case "ApprovalRequested": {
          const command = (event.input as { readonly command: string }).command
          const dangerous = command.includes("rm -rf")
          return Console.log(`asked: ${event.tool} ${command} -> ${dangerous ? "denied" : "approved"}`).pipe(
            Effect.andThen(dangerous ? session.deny(event.callId, "never rm -rf, list what you would delete") : session.approve(event.callId))
          )
        }
        case "ToolResult":
          return Console.log(`${event.name}: ${event.content.trim()}`)
        case "AgentEnd":
          return Console.log(`run ${event.outcome}`)
        default:
          return Effect.void
      }
    })
  )
}).pipe(
  Effect.scoped,
  Effect.provide(Layer.mergeAll(
    TestModel.layer([
      TestModel.reply(
        TestModel.toolCall("Bash", { command: "rm -rf ./build" }),
        TestModel.toolCall("Bash", { command: "echo would delete: dist/ out/" }),
        TestModel.toolCall("Write", { path: "CLEANED", content: "yes" })
      ),
      TestModel.text("I listed what I would delete instead.")
    ]),
    Condukt.layer
  ))
)

NodeRuntime.runMain(program)

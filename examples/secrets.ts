/**
 * Secrets: a process the agent runs gets the secret's value in its environment, and everything
 * the model reads, the session streams or stores has `[REDACTED:NAME]` in its place. Each call
 * that handed secrets to a process is audited by a `SecretsUsed` event naming them, never a value.
 * A scripted TestModel plays the model; Bash really runs. docs/secrets.md
 */
import { Agent, Secret, Session, Tools } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, Layer, Stream } from "effect"

const deployer = Agent.make({
  name: "deployer",
  model: "anthropic:claude-sonnet-4-6",
  tools: [Tools.Bash],
  // Secret.env("CI_DEPLOY_TOKEN") or Secret.onePassword("op://…") in a real program.
  secrets: { DEPLOY_TOKEN: Secret.static("tok-8f3a9c2e") }
})

const program = Effect.gen(function*() {
  const session = yield* Session.start(deployer)
  yield* session.stream("Check the deploy token").pipe(
    Stream.runForEach((event) => {
      switch (event._tag) {
        case "SecretsUsed":
          return Console.log(`${event.name} received ${event.secrets.join(", ")}`)
        case "ToolResult":
          return Console.log(`${event.name} printed: ${event.content.trim()}`)
        default:
          return Effect.void
      }
    })
  )
  const sent = (yield* (yield* TestModel.TestModel).requests)[1]!.messages.at(-1)
  yield* Console.log(`The model read: ${sent?._tag === "ToolResultMessage" ? sent.content.trim() : ""}`)
}).pipe(
  Effect.scoped,
  Effect.provide(Layer.mergeAll(
    TestModel.layer([
      TestModel.toolCall("Bash", { command: `echo "token $DEPLOY_TOKEN has \${#DEPLOY_TOKEN} characters"` }),
      TestModel.text("The token is set.")
    ]),
    Condukt.layer
  ))
)

NodeRuntime.runMain(program)

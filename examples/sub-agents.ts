/**
 * Sub-agents: a lead agent hands a question to a researcher, offered to it as a tool with
 * `Agent.asTool`, and gets back a typed answer. The researcher runs as a child session under the
 * lead's (the lead's abort or stop ends it), in the lead's sandbox; its events arrive in the
 * lead's stream tagged with `agentPath`, and its tokens are added to the lead's result, by agent.
 * Scripted TestModels play both models. docs/sub-agents.md
 */
import { Agent, Model, Session, type SessionEvent, Usage } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, Layer, Schema, Stream } from "effect"

const Finding = Schema.Struct({ answer: Schema.String, confidence: Schema.Literals(["low", "high"]) })

const researcher = Agent.make({
  name: "researcher",
  model: "anthropic:claude-haiku-4-5",
  system: "You answer one question, briefly, and say how sure you are."
})

const lead = Agent.make({
  name: "lead",
  model: "anthropic:claude-sonnet-4-6",
  tools: [Agent.asTool(researcher, { description: "Answers one factual question", output: Finding })]
})

// Scripted stand-ins for both models, served by model name in place of Anthropic's provider.
const models = Layer.unwrap(Effect.gen(function*() {
  const forLead = yield* TestModel.make([
    TestModel.toolCall("researcher", { prompt: "When was the Eiffel Tower finished?" }),
    TestModel.text("It was finished in March 1889."),
    TestModel.toolCall("researcher", { prompt: "How tall is it?" }),
    TestModel.text("It is 330 metres tall.")
  ], { name: "anthropic:claude-sonnet-4-6" })
  // The researcher's typed answers (on a model without native structured output, `submit` calls).
  const forResearcher = yield* TestModel.make([
    TestModel.toolCall("submit", { answer: "In March 1889", confidence: "high" }),
    TestModel.toolCall("submit", { answer: "330 metres", confidence: "high" })
  ], { name: "anthropic:claude-haiku-4-5" })
  return Model.layerProviders({
    anthropic: (model) => Effect.succeed(model === "claude-haiku-4-5" ? forResearcher.model : forLead.model)
  })
}))

const prices = Layer.succeed(Usage.Prices, {
  "anthropic:claude-sonnet-4-6": { inputPerMillion: 3, outputPerMillion: 15 },
  "anthropic:claude-haiku-4-5": { inputPerMillion: 1, outputPerMillion: 5 }
})

/** One line per event: the sub-agent's prefixed with its path. */
const show = (event: SessionEvent.SessionEvent) => {
  const who = event.agentPath === undefined ? "" : `  [${event.agentPath.join(" > ")}] `
  switch (event._tag) {
    case "ToolCall":
      return Console.log(`${who}→ ${event.name} ${JSON.stringify(event.input)}`)
    case "ToolResult":
      return Console.log(`${who}← ${event.content}`)
    case "AgentStart":
    case "AgentEnd":
      return Console.log(`${who}${event._tag}${event._tag === "AgentEnd" ? ` (${event.outcome})` : ""}`)
    default:
      return Effect.void
  }
}

const program = Effect.gen(function*() {
  const session = yield* Session.start(lead, { projectInstructions: false })
  // A run's stream: the researcher's events among the lead's.
  yield* session.stream("When was the Eiffel Tower finished?").pipe(Stream.runForEach(show))
  // A run's result: the researcher's tokens added, by agent, and priced.
  const result = yield* session.run("How tall is it?")
  yield* Console.log(result.text)
  yield* Console.log(`usage ${JSON.stringify(result.usage)}, by agent ${JSON.stringify(result.byAgent)}, cost $${result.cost?.toFixed(6)}`)
}).pipe(
  Effect.scoped,
  Effect.provide(Layer.mergeAll(models, prices, Condukt.layer))
)

NodeRuntime.runMain(program)

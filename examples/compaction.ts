/**
 * Compaction: a session's `Compactor` runs after each completed run and keeps the history short,
 * announcing what it did with a `Compacted` event. `Compactor.layerSliding({ keep })` keeps the
 * last messages; `layerPruneToolResults` elides old tool output; `layerSummarize` has a model fold
 * the early conversation into a summary. A scripted TestModel plays the model. docs/persistence.md#compaction
 */
import { Agent, Compactor, Session } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, Layer, Stream } from "effect"

const agent = Agent.make({ name: "chat", model: "anthropic:claude-sonnet-4-6" })

const program = Effect.gen(function*() {
  const session = yield* Session.start(agent)
  for (const prompt of ["Hi", "What is 2 + 2?", "And 3 + 3?"]) {
    yield* session.stream(prompt).pipe(
      Stream.runForEach((event) =>
        event._tag === "Compacted" ? Console.log(`"${prompt}": compacted ${event.before} messages to ${event.after}`) : Effect.void
      )
    )
  }
  const requests = yield* (yield* TestModel.TestModel).requests
  yield* Console.log(`Messages sent with each request: ${requests.map((request) => request.messages.length).join(", ")}`)
  yield* Console.log(`The history now: ${(yield* session.history).map((message) => message._tag).join(", ")}`)
}).pipe(
  Effect.scoped,
  Effect.provide(Layer.mergeAll(
    Compactor.layerSliding({ keep: 3 }),
    TestModel.layer([TestModel.text("Hello."), TestModel.text("4."), TestModel.text("6.")]),
    Condukt.layer
  ))
)

NodeRuntime.runMain(program)

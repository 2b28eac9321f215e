/**
 * Persistence: a session given a store saves after every completed turn, and a later start with
 * the same id resumes its conversation: here in the same program, in another process just the same.
 * The store is `DiskSessionStore` (a JSON file and a log per session); `SqliteSessionStore` and
 * `SessionStore.layerMemory` take its place unchanged. A scripted TestModel plays the model.
 * docs/persistence.md
 */
import { Agent, Session } from "@condukt/core"
import { Condukt, DiskSessionStore } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { NodeFileSystem, NodePath, NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, FileSystem, Layer } from "effect"

const agent = Agent.make({ name: "planner", model: "anthropic:claude-sonnet-4-6" })

// One start of session "ticket-42": resumed when the store holds it, one run, then stopped.
const visit = (prompt: string) =>
  Effect.gen(function*() {
    const session = yield* Session.start(agent, { id: "ticket-42" })
    const { text } = yield* session.run(prompt)
    yield* Console.log(`> ${prompt}\n${text} (the session holds ${(yield* session.history).length} messages)`)
  }).pipe(Effect.scoped)

const program = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "condukt-sessions-" })
  yield* Effect.gen(function*() {
    yield* visit("The release is on Friday.")
    yield* visit("When is the release?")
  }).pipe(Effect.provide(DiskSessionStore.layer({ dir }).pipe(Layer.provide([NodeFileSystem.layer, NodePath.layer]))))

  // The second start sent the model the first conversation, restored from the store.
  const requests = yield* (yield* TestModel.TestModel).requests
  yield* Console.log(`The model's second request held ${requests[1]!.messages.length} messages.`)
  yield* Console.log(`The store's directory holds ${(yield* fs.readDirectory(dir)).sort().join(", ")}.`)
}).pipe(
  Effect.scoped,
  Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.text("Noted."), TestModel.text("On Friday.")]), Condukt.layer))
)

NodeRuntime.runMain(program)

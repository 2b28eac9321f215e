/**
 * An agent in a virtual sandbox: files in memory, commands in just-bash, nothing of the host.
 * The workspace is saved as JSON after the run and restored into a fresh sandbox.
 */
import { Agent, Sandbox, Session, Tools } from "@condukt/core"
import { Snapshot, VirtualSandbox } from "@condukt/sandbox-virtual"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, Layer, Schema } from "effect"

const script = [
  TestModel.toolCall("Write", { path: "data/orders.csv", content: "id,total\n1,20\n2,35\n" }),
  TestModel.toolCall("Bash", { command: "tail -n +2 data/orders.csv | cut -d, -f2 | awk '{ s += $1 } END { print s }' | tee total.txt" }),
  TestModel.text("The orders total 55.")
]

const agent = Agent.make({ name: "analyst", model: "test:scripted", tools: Tools.coding })

const program = Effect.gen(function*() {
  // Built here rather than from a layer inside the session, so we keep the handle that snapshots.
  const sandbox = yield* VirtualSandbox.make()
  const session = yield* Session.start(agent, { sandbox: Layer.succeed(Sandbox.Sandbox, sandbox) })
  yield* Console.log((yield* session.run("What do the orders total?")).text)

  const json = JSON.stringify(yield* sandbox.snapshot)
  const restored = yield* VirtualSandbox.make({
    snapshot: yield* Schema.decodeUnknownEffect(Schema.fromJsonString(Snapshot.Snapshot))(json)
  })
  const total = yield* restored.read("total.txt")
  yield* Console.log(`restored workspace: total.txt = ${total.trim()} (${json.length} bytes of JSON)`)
}).pipe(Effect.scoped, Effect.provide(TestModel.layer(script)))

NodeRuntime.runMain(program)

/**
 * Tools without a model: the executor runs one assistant message's calls against a LocalSandbox.
 * This is the README's tour, executed by the test suite.
 */
import { Executor, Sandbox, Tool, Tools } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, FileSystem, Schema } from "effect"

// A tool is a value; its JSON Schema for the model is derived from the Schema.
const LineCount = Tool.make("line_count", {
  description: "Counts the lines of a file",
  parameters: Schema.Struct({ path: Schema.String }),
  call: ({ path }, { sandbox }) => Effect.map(sandbox.read(path), (text) => text.split("\n").length)
})

// One assistant message's calls: model order kept, concurrent neighbours in parallel, every
// failure turned into that call's error result.
const message = Effect.gen(function*() {
  const sandbox = yield* Sandbox.Sandbox
  const executor = yield* Effect.fromResult(Executor.make([...Tools.coding, LineCount]))
  return yield* executor.run(
    [
      { id: "1", name: "Write", input: { path: "notes.md", content: "# Notes\nhello" } },
      { id: "2", name: "line_count", input: { path: "notes.md" } },
      { id: "3", name: "Bash", input: { command: "wc -c notes.md; exit 3" } },
      { id: "4", name: "Read", input: { path: "../../etc/passwd" } },
      { id: "5", name: "Fly", input: {} }
    ],
    { sessionId: "tour", agent: "tour", sandbox, cwd: sandbox.cwd, secrets: {} },
    {}
  )
})

const tour = Effect.gen(function*() {
  const dir = yield* (yield* FileSystem.FileSystem).makeTempDirectoryScoped({ prefix: "condukt-tour-" })
  const { results } = yield* message.pipe(Effect.provide(LocalSandbox.layer({ cwd: dir, allowedPaths: [dir] })))
  for (const result of results) yield* Console.log(`${result.callId} ${result.name}: ${result.content}`)
}).pipe(Effect.scoped, Effect.provide(Condukt.layer))

NodeRuntime.runMain(tour)

/**
 * Approval records: a run waits for a person's approval of a Bash call; its process stops (the
 * SQLite store keeps the wait and its record). Another "process" — a registry over the same file —
 * lists the open requests and approves one by its record's id, as an answerer with a reason; the
 * call runs there, once, and the audit says who answered, when and why. A scripted TestModel
 * plays the model; Bash really runs. docs/approvals.md
 */
import { Agent, Approvals, Session, Sessions, Tools } from "@condukt/core"
import { Condukt, SqliteSessionStore } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, FileSystem, Layer, Option } from "effect"
import * as path from "node:path"

const janitor = Agent.make({
  name: "janitor",
  model: "anthropic:claude-sonnet-4-6",
  tools: [Tools.Bash],
  approvals: { ask: ["Bash"], expires: "1 day" }
})

const program = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const file = path.join(yield* fs.makeTempDirectoryScoped({ prefix: "condukt-approvals-" }), "sessions.db")

  // The first process: the run asks, and the process stops while it waits.
  yield* Effect.gen(function*() {
    const store = yield* SqliteSessionStore.make({ file })
    const session = yield* Session.start(janitor, { id: "cleanup", store })
    yield* Effect.forkScoped(session.run("Clean up the build"))
    while ((yield* store.approvals!.list()).records.length === 0) yield* Effect.sleep("10 millis")
    yield* session.stop
  }).pipe(Effect.scoped, Effect.provide(TestModel.layer([TestModel.toolCall("Bash", { command: "echo cleaned" })])))

  // Another process, the agents it serves by name, the same store: the requests, found and answered by id.
  yield* Effect.gen(function*() {
    const approvals = yield* Approvals.Approvals
    const { records } = yield* approvals.list()
    for (const record of records) {
      const hours = record.expiresAt === undefined ? undefined : (record.expiresAt - record.requestedAt) / 3_600_000
      yield* Console.log(`open: ${record.agent} wants ${record.tool} ${JSON.stringify(record.input)} (${record.rule}; expires ${hours ?? "never"} h after it was asked)`)
      yield* approvals.approve(record.id, { by: "ada@example.com", reason: "only an echo" })
    }
    const registry = yield* Sessions.Sessions
    yield* Effect.flatMap(registry.whereis("cleanup"), (found) => Option.isSome(found) ? found.value.idle : Effect.void)
    const audit = yield* approvals.list({ status: "answered" })
    for (const record of audit.records) yield* Console.log(`${record.tool}: ${record.outcome} by ${record.by}: ${record.reason}`)
    const history = yield* Effect.flatMap(registry.whereis("cleanup"), (found) => Option.getOrThrow(found).history)
    yield* Console.log(`the call ran once: ${history.filter((m) => m._tag === "ToolResultMessage").map((m) => m._tag === "ToolResultMessage" ? m.content.trim() : "").join(", ")}`)
  }).pipe(Effect.provide(Approvals.layer.pipe(
    Layer.provideMerge(Sessions.layerById({ janitor })),
    Layer.provideMerge(Sessions.layer),
    Layer.provide(Layer.mergeAll(SqliteSessionStore.layer({ file }), TestModel.layer([TestModel.text("Cleaned.")]), Condukt.layer))
  )))
}).pipe(Effect.scoped, Effect.provide(Condukt.layer))

NodeRuntime.runMain(program)

/**
 * A runner of a cluster of sessions: it serves the agent `notes` to every runner and client of one
 * SQLite file (`CLUSTER_DB`), listening for the others on `PORT`, until it is stopped. Start as
 * many as you like on one machine (examples/cluster-client.ts starts two and kills one); on several
 * machines, give `Runner.layer` a Postgres client instead. Run alone, with no `CLUSTER_DB`, it is
 * a cluster of one process: it runs a session itself and exits. docs/cluster.md
 */
import { Agent, History, Model, Sessions } from "@condukt/core"
import { Runner } from "@condukt/cluster"
import { Condukt } from "@condukt/node"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, FileSystem, Layer, References, Stream } from "effect"
import * as net from "node:net"
import * as path from "node:path"

// A stand-in for a real model that any runner can play: it counts what the session has been told,
// so a history that survives its runner shows in the answers.
const notesModel = Model.Model.of({
  name: "example:notes",
  stream: (request) => {
    const told = History.toArray(request.messages).filter((message) => message._tag === "UserMessage").length
    return Stream.make<Array<Model.Part>>({ _tag: "TextDelta", text: `Noted: ${told} in this session so far.` }, { _tag: "Finish", reason: "stop" })
  }
})

// Every runner of a cluster knows the same agents, by name: a start names one.
const agents = { notes: Agent.make({ name: "notes", model: "anthropic:claude-sonnet-4-6" }) }

// The cluster logs its runners' comings and goings at Info: this program prints only its own lines.
const services = Layer.mergeAll(Condukt.layer, Layer.succeed(Model.Model, notesModel), Layer.succeed(References.MinimumLogLevel, "Warn"))

/** A port nothing listens on now. */
const freePort = Effect.callback<number>((resume) => {
  const server = net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

const file = process.env["CLUSTER_DB"]

const serve = (file: string) =>
  Layer.launch(
    Layer.effectDiscard(Console.log(`runner ${process.env["NAME"] ?? ""} up`)).pipe(
      Layer.provide(Runner.layerSqlite({ file, port: Number(process.env["PORT"]), agents })),
      Layer.provide(services)
    )
  )

// One process: the runner serves the program's own calls.
const alone = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "condukt-cluster-" })
  const port = yield* freePort
  yield* Effect.gen(function*() {
    const sessions = yield* Sessions.ById
    const id = yield* sessions.start("notes", { id: "ticket-7" })
    yield* Console.log((yield* sessions.run(id, "The release is on Friday.")).text)
    yield* Console.log((yield* sessions.run(id, "Ada reviews it.")).text)
  }).pipe(Effect.provide(Runner.layerSqlite({ file: path.join(dir, "cluster.db"), port, agents })))
}).pipe(Effect.scoped, Effect.provide(services))

NodeRuntime.runMain(file === undefined ? alone : serve(file))

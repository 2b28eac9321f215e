/**
 * A client of a cluster of sessions: it starts two runners (examples/cluster-runner.ts) on one
 * SQLite file, speaks to a session through `Sessions.ById` (the same code runs on
 * `Sessions.layerById` in one process), then kills one runner without a word (`kill -9`): the
 * session's next run completes on the other, its history intact, once the dead runner's shard locks
 * expire (a few seconds). docs/cluster.md
 */
import { Sessions } from "@condukt/core"
import { Runner } from "@condukt/cluster"
import { NodeFileSystem, NodePath, NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, FileSystem, Layer, Queue, References, Stream } from "effect"
import { spawn } from "node:child_process"
import * as net from "node:net"
import * as path from "node:path"

/** A port nothing listens on now. */
const freePort = Effect.callback<number>((resume) => {
  const server = net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** A runner process on `file`, killed with the scope; it is up when this returns. */
const runner = (file: string, name: string) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const up = yield* Queue.unbounded<void>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [path.join(import.meta.dirname, "cluster-runner.ts")], {
          env: { ...process.env, CLUSTER_DB: file, PORT: String(port), NAME: name },
          stdio: ["ignore", "pipe", "inherit"]
        })
      ),
      (child) => Effect.sync(() => child.kill("SIGKILL"))
    )
    child.stdout.on("data", () => Queue.offerUnsafe(up, undefined))
    yield* Queue.take(up)
    return { kill: Effect.sync(() => void child.kill("SIGKILL")) }
  })

const program = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const file = path.join(yield* fs.makeTempDirectoryScoped({ prefix: "condukt-cluster-" }), "cluster.db")
  const a = yield* runner(file, "a")
  yield* runner(file, "b")
  yield* Effect.gen(function*() {
    const sessions = yield* Sessions.ById
    const id = yield* sessions.start("notes", { id: "ticket-7" })
    yield* Console.log((yield* sessions.run(id, "The release is on Friday.")).text)
    const events = yield* Stream.runCollect(sessions.stream(id, "Ada reviews it."))
    yield* Console.log(`streamed: ${events.map((event) => event._tag).join(" ")}`)

    yield* a.kill
    yield* Console.log("runner a killed")
    // Runner a may have held the session: the run then waits for b to take its shard over.
    yield* Console.log((yield* sessions.run(id, "Grace signs off.")).text)
    yield* Console.log(`the history holds ${(yield* sessions.history(id)).length} messages`)
  }).pipe(Effect.provide(Runner.layerSqliteClient({ file })))
}).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, Layer.succeed(References.MinimumLogLevel, "Warn"))))

NodeRuntime.runMain(program)

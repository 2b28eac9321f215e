/**
 * Cluster runners for the cluster benchmarks: examples/cluster-runner.ts (the agent `notes`, a
 * model that answers at once), or another runner program (bench/support/bareRunner.ts), in a
 * process of its own on a SQLite file, up when `runner` returns and killed (SIGKILL) with its scope. Not a benchmark itself: bench/run.ts runs only the files
 * directly in bench/.
 */
import { Effect, Queue, type Scope } from "effect"
import { spawn } from "node:child_process"
import * as net from "node:net"
import * as path from "node:path"

/** A port nothing listens on now. */
export const freePort = Effect.callback<number>((resume) => {
  const server = net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** The session runner, examples/cluster-runner.ts. */
const sessionRunner = path.join(import.meta.dirname, "../../examples/cluster-runner.ts")

/** A runner process on the SQLite file `db`, named `name`: `program` (the session runner by default). */
export const runner = (db: string, name: string, program: string = sessionRunner): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const port = yield* freePort
    const up = yield* Queue.unbounded<void>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [program], {
          env: { ...process.env, CLUSTER_DB: db, PORT: String(port), NAME: name },
          stdio: ["ignore", "pipe", "inherit"]
        })
      ),
      (child) => Effect.sync(() => child.kill("SIGKILL"))
    )
    child.stdout.on("data", () => Queue.offerUnsafe(up, undefined))
    yield* Queue.take(up)
  })

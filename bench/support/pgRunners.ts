/**
 * Runner processes on Postgres for bench/cluster-million: bench/support/pgRunner.ts started as
 * children, up when `pgRunner` returns and killed (SIGKILL) with the scope, driven line by line
 * over stdin and stdout; and the CPU time a process (or a Postgres server with its backends) has
 * used, from /proc. Not a benchmark itself: bench/run.ts runs only the files directly in bench/.
 */
import { Effect, Queue, Schedule, type Scope } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { freePort } from "./clusterRunner.ts"

const program = path.join(import.meta.dirname, "pgRunner.ts")

/**
 * Node's and V8's flags for each runner: `BENCH_RUNNER_FLAGS` (words), none unless given. The RSS
 * at rest needs none: a runner optimizes for size by itself while no session is active on it
 * (packages/cluster/src/internal/restingHeap.ts, ADR 0098); `--optimize-for-size` throughout was
 * measured beside it (the same at rest, a run's CPU higher).
 */
export const RUNNER_FLAGS = (process.env["BENCH_RUNNER_FLAGS"] ?? "").split(" ").filter((word) => word !== "")

/**
 * A runner child: its pid; `ask`, a command's answer as numbers (`<command> <n>…`); and how many
 * times it has logged "Shard lock storage is unhealthy" (a lock refresh that took longer than the
 * refresh interval, after which the runner gives up every shard it held and takes them again).
 */
export interface PgRunner {
  readonly name: string
  readonly pid: number
  readonly ask: (command: string) => Effect.Effect<ReadonlyArray<number>>
  readonly unhealthy: () => number
}

const UNHEALTHY = "Shard lock storage is unhealthy"

/** A runner on `database` of the server whose socket is in `socket`, sessions passivating after `maxIdle`. */
export const pgRunner = (socket: string, database: string, name: string, maxIdle: string): Effect.Effect<PgRunner, never, Scope.Scope> =>
  Effect.gen(function*() {
    const port = yield* freePort
    const lines = yield* Queue.unbounded<string>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [...RUNNER_FLAGS, program], {
          env: { ...process.env, PG_SOCKET: socket, PG_DATABASE: database, PORT: String(port), NAME: name, MAX_IDLE: maxIdle },
          stdio: ["pipe", "pipe", "pipe"]
        })
      ),
      (child) => Effect.sync(() => child.kill("SIGKILL"))
    )
    let pending = ""
    child.stdout.on("data", (chunk: Buffer) => {
      const parts = (pending + chunk.toString()).split("\n")
      pending = parts.pop()!
      // V8's traces (`[pid:isolate] …`, from BENCH_RUNNER_FLAGS) share stdout with the answers: they go to stderr.
      for (const line of parts) {
        if (/^\[\d+:0x[0-9a-f]+\]/.test(line)) process.stderr.write(`${name}: ${line}\n`)
        else Queue.offerUnsafe(lines, line)
      }
    })
    child.on("close", (code) => Queue.offerUnsafe(lines, `exited ${code}`))
    // Its log goes on to this process's stderr; the unhealthy episodes are counted on the way.
    let unhealthy = 0
    let partial = ""
    child.stderr.on("data", (chunk: Buffer) => {
      process.stderr.write(chunk)
      const parts = (partial + chunk.toString()).split("\n")
      partial = parts.pop()!.slice(-65_536)
      unhealthy += parts.filter((line) => line.includes(UNHEALTHY)).length
    })
    const first = yield* Queue.take(lines)
    if (first !== "ready") return yield* Effect.die(new Error(`runner ${name}: ${first}`))
    const ask = (command: string) =>
      Effect.gen(function*() {
        child.stdin.write(`${command}\n`)
        const [word, ...values] = (yield* Queue.take(lines)).split(" ")
        if (word !== command) return yield* Effect.die(new Error(`runner ${name} answered ${word} ${values.join(" ")} to ${command}`))
        return values.map(Number)
      })
    return { name, pid: child.pid!, ask, unhealthy: () => unhealthy }
  })

/**
 * Until the runners share every shard for good: each holds some, together `shards`, none being
 * released, the same on two asks 500 ms apart (a runner that joins is kept out of the assignment
 * for a while, then shards move to it).
 */
export const settled = (runners: ReadonlyArray<PgRunner>, shards: number) => {
  let previous = ""
  return Effect.gen(function*() {
    const held = yield* Effect.forEach(runners, (runner) => runner.ask("shards"))
    const now = held.map(([count]) => count).join(" ")
    const stable = now === previous && held.every(([count, releasing]) => count! > 0 && releasing === 0) &&
      held.reduce((sum, [count]) => sum + count!, 0) === shards
    previous = now
    if (!stable) return yield* Effect.fail(`shards held: ${now}`)
  }).pipe(Effect.retry({ schedule: Schedule.spaced("500 millis"), times: 240 }), Effect.orDie)
}

/** utime + stime of `/proc/<pid>/stat`, and of its children waited for when `children`, in seconds (0 once it is gone). */
const cpuOf = (pid: number | string, children: boolean): number => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // Fields 14-17 of stat(5) (utime, stime, cutime, cstime), counted here from field 3 (state).
    const ticks = Number(fields[11]) + Number(fields[12]) + (children ? Number(fields[13]) + Number(fields[14]) : 0)
    return ticks / 100
  } catch {
    return 0
  }
}

/** CPU seconds used by the process `pid`. */
export const cpuSeconds = (pid: number): number => cpuOf(pid, false)

/** CPU seconds used by the server `pid` and every process it started, live or gone (its backends). */
export const serverCpuSeconds = (pid: number): number => {
  let total = cpuOf(pid, true)
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      if (stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1] === String(pid)) total += cpuOf(entry, false)
    } catch {
      // gone between the listing and the read
    }
  }
  return total
}

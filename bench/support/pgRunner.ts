/**
 * A session runner on Postgres for bench/cluster-million: the agent `notes` with a scripted model
 * that answers at once (it costs nothing: what is measured is the cluster), on the database
 * `PG_DATABASE` of the server whose Unix socket is in `PG_SOCKET`, listening for the other runners
 * on `PORT`, its sessions passivating after `MAX_IDLE` idle (default 5 s), on `Runner.FAILOVER`
 * with `SHARDING` (JSON, optional) over it. Started by
 * bench/support/pgRunners.ts; it prints `ready` once up, then answers lines on its stdin:
 * - `rss`: where the resident bytes are, after a full GC (three, so what is unreachable is gone):
 *   `rss <rss> <heap used> <heap total> <external> <array buffers> <anonymous> <file-backed>
 *   <new space committed> <new space used> <old space committed> <old space used> <large objects
 *   committed> <large objects used> <code committed> <code used>` (bytes; `process.memoryUsage()`,
 *   RssAnon and RssFile of /proc/self/status, `v8.getHeapSpaceStatistics()`);
 * - `entities`: `entities <n>`, the sessions active on this runner (effect/cluster's gauge);
 * - `runs`: `runs <n>`, the model turns this runner has served (one per run here);
 * - `peak`: `peak <bytes>`, the highest RSS the process has had (no GC);
 * - `shards`: `shards <held> <releasing>`.
 * Stdout is the protocol; the cluster's warnings go to stderr.
 */
import { Runner } from "@condukt/cluster"
import { Agent, History, Model } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { NodeRuntime } from "@effect/platform-node-shared"
import { PgClient } from "@effect/sql-pg"
import { type Duration, Effect, Layer, Logger, Metric, Queue, Redacted, References, Stream } from "effect"
import { ClusterMetrics } from "effect/cluster"
import * as fs from "node:fs"
import * as readline from "node:readline"
import * as v8 from "node:v8"
import * as vm from "node:vm"

v8.setFlagsFromString("--expose-gc")
const gc = vm.runInNewContext("gc") as () => void

let runs = 0

/** Answers every prompt at once with how many it has been told in the session. */
const model = Model.Model.of({
  name: "bench:notes",
  stream: (request) => {
    runs++
    const told = History.toArray(request.messages).filter((message) => message._tag === "UserMessage").length
    return Stream.make<Array<Model.Part>>({ _tag: "TextDelta", text: `Noted: ${told}.` }, { _tag: "Finish", reason: "stop" })
  }
})

const agents = { notes: Agent.make({ name: "notes", model: "bench:notes" }) }

const client = PgClient.layer({
  host: process.env["PG_SOCKET"]!,
  port: 5432,
  database: process.env["PG_DATABASE"]!,
  username: "postgres",
  password: Redacted.make(""),
  maxConnections: Number(process.env["PG_CONNECTIONS"] ?? 10)
})

const say = (line: string) => Effect.sync(() => void process.stdout.write(`${line}\n`))

const commands = Stream.callback<string>((queue) =>
  Effect.sync(() => {
    readline.createInterface({ input: process.stdin }).on("line", (line) => Queue.offerUnsafe(queue, line))
  })
)

const entities = Metric.withAttributes(ClusterMetrics.entities, { type: "Session" })

const answer = (line: string) => {
  if (line === "rss") {
    return Effect.suspend(() => {
      for (let i = 0; i < 3; i++) gc()
      const memory = process.memoryUsage()
      const status = fs.readFileSync("/proc/self/status", "utf8")
      const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024
      const spaces = new Map(v8.getHeapSpaceStatistics().map((space) => [space.space_name, space]))
      const space = (name: string) => `${spaces.get(name)?.physical_space_size ?? 0} ${spaces.get(name)?.space_used_size ?? 0}`
      return say(
        `rss ${memory.rss} ${memory.heapUsed} ${memory.heapTotal} ${memory.external} ${memory.arrayBuffers} ` +
          `${kb("RssAnon")} ${kb("RssFile")} ${space("new_space")} ${space("old_space")} ${space("large_object_space")} ${space("code_space")}`
      )
    })
  }
  if (line === "entities") return Effect.flatMap(Metric.value(entities), (state) => say(`entities ${state.value}`))
  if (line === "runs") return say(`runs ${runs}`)
  if (line === "peak") return say(`peak ${process.resourceUsage().maxRSS * 1024}`)
  if (line === "shards") {
    return Effect.flatMap(
      Effect.all([Metric.value(ClusterMetrics.shards), Metric.value(ClusterMetrics.shardsReleasing)]),
      ([held, releasing]) => say(`shards ${held.value} ${releasing.value}`)
    )
  }
  return say(`unknown ${line}`)
}

const serve = Effect.gen(function*() {
  yield* say("ready")
  yield* Stream.runForEach(commands, answer)
  return yield* Effect.never
})

NodeRuntime.runMain(
  Effect.scoped(Effect.flatMap(
    Layer.build(Runner.layer({
      agents,
      port: Number(process.env["PORT"]),
      maxIdleTime: (process.env["MAX_IDLE"] ?? "5 seconds") as Duration.Input,
      sharding: JSON.parse(process.env["SHARDING"] ?? "{}")
    })),
    () => serve
  )).pipe(
    Effect.provide(Layer.mergeAll(client, Condukt.layer, Layer.succeed(Model.Model, model), Layer.succeed(References.MinimumLogLevel, "Warn"))),
    Effect.provideService(Logger.LogToStderr, true)
  )
)

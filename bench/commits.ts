/**
 * bench/commits — what "no silent repeats" costs a session with a store (issue 25 item 3, ADR 0065):
 * each tool call's start is committed before the call runs, on top of the commit of every turn.
 *
 * A run is 20 model turns: 19 replies calling a `noop` tool, then a final text, on a scripted
 * `TestModel`; the session is started untimed before each run, on the SQLite store (a file in
 * the temp directory) and on the disk store (which fsyncs every save: its figure is the file
 * system's). Baseline in the same run: the same runs without a store. Reported per turn (median
 * over the runs, divided by 20), and the store's ratio to no store; the saves of one such run (the
 * count, unlike the time, does not depend on the file system's load). Then one reply calling `noop`
 * 8 times at once: the saves its session makes, counted by a store that wraps the SQLite store;
 * goal: 3 (one for the calls' starts, whatever their number, one with their results, one with the
 * final reply), i.e. a commit per batch, not per call.
 *
 * Run: node_modules/.bin/node bench/commits.ts
 */
import { Agent, Sandbox, Session, SessionStore, Tool } from "@condukt/core"
import { DiskSessionStore, SqliteSessionStore } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node-shared"
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { report } from "./report.ts"

const TURNS = 20
const RUNS = Number(process.env["BENCH_RUNS"] ?? 100)
const WARMUP = 20
const CALLS = 8
const SAVES_GOAL = 3

const Noop = Tool.make("noop", { description: "Does nothing", parameters: Schema.Struct({}), call: () => Effect.succeed("ok") })
const agent = Agent.make({ name: "bench", model: "test:scripted", tools: [Noop] })
const script = [...Array.from({ length: TURNS - 1 }, () => TestModel.toolCall("noop", {})), TestModel.text("done")]

/** The tool never touches its sandbox: the no-op one, the same for every variant. */
const sandbox = Sandbox.layerNoop()

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** One run of the script in a session started (untimed) on `store`, or none; its time. */
const timedRun = (store: SessionStore.Service | undefined, id: string) =>
  Effect.scoped(Effect.gen(function*() {
    const session = yield* Session.start(agent, { id, sandbox, projectInstructions: false, ...(store === undefined ? {} : { store }) })
    const began = performance.now()
    const result = yield* session.run("go")
    const took = performance.now() - began
    if (result.text !== "done") throw new Error(`unexpected final text: ${result.text}`)
    return took
  })).pipe(Effect.provide(TestModel.layer(script)))

/** The saves of a session's run of `replies`. */
const savesOf = (store: SessionStore.Service, id: string, replies: ReadonlyArray<TestModel.Reply>) =>
  Effect.gen(function*() {
    let saves = 0
    const counting: SessionStore.Service = { ...store, save: (snapshot, options) => Effect.andThen(Effect.sync(() => saves++), store.save(snapshot, options)) }
    yield* Effect.scoped(Effect.flatMap(
      Session.start(agent, { id, sandbox, store: counting, projectInstructions: false }),
      (session) => session.run("go")
    )).pipe(Effect.provide(TestModel.layer(replies)))
    return saves
  })

/** One reply calling `noop` `CALLS` times at once, then the answer. */
const batch = [TestModel.reply(...Array.from({ length: CALLS }, (_, i) => TestModel.toolCall("noop", {}, `c${i}`))), TestModel.text("done")]

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-bench-commits-"))

const program = Effect.gen(function*() {
  const variants: ReadonlyArray<readonly [string, SessionStore.Service | undefined]> = [
    ["no store", undefined],
    ["sqlite", yield* SqliteSessionStore.make({ file: path.join(dir, "sessions.db") })],
    ["disk", yield* DiskSessionStore.make({ dir: path.join(dir, "disk") })]
  ]
  const times = new Map<string, Array<number>>(variants.map(([name]) => [name, []]))
  // Interleaved run by run, so drift in the machine's load hits every variant alike.
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const [name, store] of variants) {
      const took = yield* timedRun(store, `${name}-${i}`)
      if (i >= WARMUP) times.get(name)!.push(took)
    }
  }
  const counted = yield* SqliteSessionStore.make({ file: path.join(dir, "counted.db") })
  return { times, saves: yield* savesOf(counted, "batch", batch), runSaves: yield* savesOf(counted, "run", script) }
}).pipe(Effect.scoped, Effect.provide([NodeFileSystem.layer, NodePath.layer]))

const { runSaves, saves, times } = await Effect.runPromise(program)
fs.rmSync(dir, { recursive: true, force: true })
const perTurn = (name: string) => median(times.get(name)!) / TURNS
const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`
const bare = perTurn("no store")
for (const name of ["sqlite", "disk"]) {
  const ours = perTurn(name)
  console.log(`${name}: ${us(ours)} per turn, ${us(bare)} without a store: ${(ours / bare).toFixed(2)}x`)
  report({ benchmark: `commits: a tool turn on the ${name} store / without a store`, ours: `${us(ours)}/turn`, baseline: `${us(bare)}/turn`, ratio: ours / bare, goal: "report", met: null })
}
console.log(`the ${TURNS}-turn run: ${runSaves} saves; one reply calling noop ${CALLS} times at once: ${saves} saves (goal ${SAVES_GOAL})`)
report({ benchmark: `commits: saves of the ${TURNS}-turn run (${TURNS - 1} tool turns)`, ours: `${runSaves} saves`, baseline: `${TURNS} turns`, ratio: null, goal: "report", met: null })
report({
  benchmark: `commits: saves of a run whose one reply makes ${CALLS} calls at once`,
  ours: `${saves} saves`,
  baseline: `${CALLS} calls`,
  ratio: null,
  goal: `= ${SAVES_GOAL}`,
  met: saves === SAVES_GOAL
})

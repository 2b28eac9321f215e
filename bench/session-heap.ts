/**
 * bench/session-heap — where an idle session's bytes go, from two V8 heap snapshots.
 *
 * A snapshot is taken, 10,000 idle sessions are started (the agent of bench/sessions.ts: the
 * coding tools, a LocalSandbox layer each, a TestModel), and a second snapshot is taken with every
 * handle held. Objects are grouped by constructor (or V8's name for closures, arrays, strings…)
 * and the difference in bytes and counts between the two snapshots, divided by the number of
 * sessions, is printed: the retained shape of one session. The same is done for the skeleton
 * (Scope + Queue + fiber) as the baseline. docs/decisions/0036-cheap-sessions.md records a run.
 *
 * Run: node_modules/.bin/node bench/session-heap.ts [--count=N]
 */
import { Agent, Condukt, LocalSandbox, Session, Tools } from "@condukt/core"
import { TestModel } from "@condukt/testing"
import { Effect, Exit, Queue, Scope } from "effect"
import { getHeapSnapshot, setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { report } from "./report.ts"

const COUNT = Number(process.argv.find((a) => a.startsWith("--count="))?.slice(8) ?? 10_000)
const GOAL_BYTES = 10 * 1024

setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

interface Snapshot {
  readonly snapshot: { readonly meta: { readonly node_fields: Array<string>; readonly node_types: [Array<string>] } }
  readonly nodes: Array<number>
  readonly strings: Array<string>
}

/** Bytes and counts by object kind in the heap now. */
const census = async (): Promise<Map<string, { bytes: number; count: number }>> => {
  for (let i = 0; i < 3; i++) gc()
  const chunks: Array<Buffer> = []
  for await (const chunk of getHeapSnapshot()) chunks.push(chunk as Buffer)
  const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Snapshot
  const fields = parsed.snapshot.meta.node_fields
  const types = parsed.snapshot.meta.node_types[0]
  const width = fields.length
  const [type, name, size] = ["type", "name", "self_size"].map((f) => fields.indexOf(f)) as [number, number, number]
  const byKind = new Map<string, { bytes: number; count: number }>()
  for (let i = 0; i < parsed.nodes.length; i += width) {
    const kind = types[parsed.nodes[i + type]!]!
    // Objects by constructor; everything else by V8's kind (closure, array, string, hidden…).
    const label = kind === "object" ? parsed.strings[parsed.nodes[i + name]!]! : `(${kind})`
    const entry = byKind.get(label) ?? { bytes: 0, count: 0 }
    entry.bytes += parsed.nodes[i + size]!
    entry.count++
    byKind.set(label, entry)
  }
  return byKind
}

const agent = Agent.make({ name: "idle", model: "test:scripted", tools: Tools.coding })
const sandbox = LocalSandbox.layer({ cwd: process.cwd() })

const skeleton = (scope: Scope.Scope, handles: Array<unknown>, count: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) {
      const own = yield* Scope.fork(scope)
      handles.push({ own, mailbox: yield* Queue.unbounded<string>(), fiber: yield* Effect.forkIn(Effect.never, own) })
    }
  })

const sessions = (scope: Scope.Scope, handles: Array<unknown>, count: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) handles.push(yield* Session.start(agent, { sandbox }))
  }).pipe(Scope.provide(scope), Effect.provide(TestModel.layer([])), Effect.provide(Condukt.layer), Effect.orDie)

/** Per-actor bytes by kind: the difference between a census before and one with `count` actors alive. */
const shape = async (start: typeof skeleton) => {
  const warm = Scope.makeUnsafe()
  await Effect.runPromise(start(warm, [], 300))
  await Effect.runPromise(Scope.close(warm, Exit.void))
  const before = await census()
  const scope = Scope.makeUnsafe()
  const handles: Array<unknown> = []
  await Effect.runPromise(start(scope, handles, COUNT))
  const after = await census()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  const rows = [...after].map(([label, { bytes, count }]) => {
    const was = before.get(label) ?? { bytes: 0, count: 0 }
    return { label, bytes: (bytes - was.bytes) / COUNT, count: (count - was.count) / COUNT }
  }).filter((row) => row.bytes >= 8).sort((a, b) => b.bytes - a.bytes)
  return { rows, total: rows.reduce((sum, row) => sum + row.bytes, 0), handles: handles.length }
}

const print = (title: string, result: Awaited<ReturnType<typeof shape>>) => {
  console.log(`\n${title}: ${result.total.toFixed(0)} bytes per actor (${result.handles} alive)`)
  for (const row of result.rows.slice(0, 25)) {
    console.log(`  ${row.bytes.toFixed(0).padStart(6)} B  ${row.count.toFixed(2).padStart(6)} ×  ${row.label}`)
  }
}

const base = await shape(skeleton)
print("skeleton (Scope + Queue + fiber)", base)
const ours = await shape(sessions)
print("idle Session (own LocalSandbox layer, coding tools)", ours)
report({
  benchmark: "session-heap: bytes per idle session by heap snapshot / skeleton",
  ours: `${(ours.total / 1024).toFixed(2)} KB`,
  baseline: `${(base.total / 1024).toFixed(2)} KB`,
  ratio: ours.total / base.total,
  goal: "≤ 10 KB",
  met: ours.total <= GOAL_BYTES
})

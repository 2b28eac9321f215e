/**
 * Heap census — the bytes each actor of a shape retains, from two V8 heap snapshots: one before
 * `count` actors are started, one with all of them alive. Objects are grouped by constructor (or
 * V8's name for closures, arrays, strings…) and the difference divided by `count`. Shared by
 * bench/session-heap.ts and bench/approvals.ts. Not a benchmark itself: bench/run.ts runs only the
 * files directly in bench/.
 */
import { Effect, Exit, Scope } from "effect"
import { getHeapSnapshot, setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"

setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

interface HeapSnapshot {
  readonly snapshot: { readonly meta: { readonly node_fields: Array<string>; readonly node_types: [Array<string>] } }
  readonly nodes: Array<number>
  readonly strings: Array<string>
}

/** Bytes and counts by object kind in the heap now. */
const census = async (): Promise<Map<string, { bytes: number; count: number }>> => {
  for (let i = 0; i < 3; i++) gc()
  const chunks: Array<Buffer> = []
  for await (const chunk of getHeapSnapshot()) chunks.push(chunk as Buffer)
  const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as HeapSnapshot
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

/** What a shape started: how many actors, and how to let them finish before their scope closes. */
export interface Started {
  readonly alive: number
  readonly finish: Effect.Effect<void>
}

export const idle = (alive: number): Started => ({ alive, finish: Effect.void })

export interface Shape {
  readonly rows: ReadonlyArray<{ readonly label: string; readonly bytes: number; readonly count: number }>
  /** Bytes per actor. */
  readonly total: number
  readonly alive: number
}

/** Per-actor bytes by kind: the difference between a census before and one with `count` actors alive (after a warm-up of 300). */
export const shape = async (start: (scope: Scope.Scope, count: number) => Effect.Effect<Started>, count: number): Promise<Shape> => {
  const warm = Scope.makeUnsafe()
  const warmed = await Effect.runPromise(start(warm, 300))
  await Effect.runPromise(Effect.andThen(warmed.finish, Scope.close(warm, Exit.void)))
  const before = await census()
  const scope = Scope.makeUnsafe()
  const started = await Effect.runPromise(start(scope, count))
  const after = await census()
  await Effect.runPromise(Effect.andThen(started.finish, Scope.close(scope, Exit.void)))
  const rows = [...after].map(([label, { bytes, count: now }]) => {
    const was = before.get(label) ?? { bytes: 0, count: 0 }
    return { label, bytes: (bytes - was.bytes) / count, count: (now - was.count) / count }
  }).filter((row) => row.bytes >= 8).sort((a, b) => b.bytes - a.bytes)
  return { rows, total: rows.reduce((sum, row) => sum + row.bytes, 0), alive: started.alive }
}

const print = (title: string, result: Shape): void => {
  console.log(`\n${title}: ${result.total.toFixed(0)} bytes per actor (${result.alive} alive)`)
  for (const row of result.rows.slice(0, 25)) {
    console.log(`  ${row.bytes.toFixed(0).padStart(6)} B  ${row.count.toFixed(2).padStart(6)} ×  ${row.label}`)
  }
}

/** `shape`, its rows printed under `title`. */
export const measure = async (title: string, start: (scope: Scope.Scope, count: number) => Effect.Effect<Started>, count: number): Promise<Shape> => {
  const result = await shape(start, count)
  print(title, result)
  return result
}

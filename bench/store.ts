/**
 * bench/store — the cost of saving a turn must not grow with the history.
 *
 * For each store (memory, disk, SQLite, and the SQL store on SQLite through effect/sql's
 * SqlClient, as the cluster runs it: the same store as `SqliteSessionStore`, whose statements run
 * on a `node:sqlite` connection of its own instead; docs/decisions/0082), in the same process: a
 * session's history is built up to 10 messages and to 1,000 messages (one whole save), then 200
 * turns of two messages each (a tool call and its result) are saved one by one, as the session
 * does after each completed turn: a new snapshot with the whole message array copied, and
 * `appended: 2`. Reported: the median (and mean) time of a save at 1,000 messages against the
 * same store's at 10 (goal ≤ 1.5×: appends, not rewrites), and each durable store against the
 * memory store; then what effect/sql's machinery adds to a save on SQLite (the SQL store through
 * SqliteClient against `SqliteSessionStore`, at 1,000 messages): the reason the embedded store
 * keeps a connection of its own. The disk and SQLite stores fsync every save, so their absolute
 * figures are the file system's (a tmpfs `/tmp` makes fsync nearly free; `TMPDIR` picks the
 * directory).
 *
 * Run: node_modules/.bin/node bench/store.ts [--saves=N]
 */
import { Message, type SessionStore, Snapshot } from "@condukt/core"
import { DiskSessionStore, SqliteClient, SqliteSessionStore, SqlSessionStore } from "@condukt/node"
import { SessionStore as Store } from "@condukt/core"
import { NodeFileSystem, NodePath } from "@effect/platform-node-shared"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { report } from "./report.ts"

const SAVES = Number(process.argv.find((a) => a.startsWith("--saves="))?.slice(8) ?? 200)
const GOAL = 1.5

const turn = (n: number): ReadonlyArray<Message.Message> => [
  Message.assistant([Message.toolCallPart({ id: `c${n}`, name: "Read", input: { path: `src/file${n}.ts` } })]),
  Message.toolResult({ callId: `c${n}`, name: "Read", content: `export const value${n} = ${n}\n`.repeat(4), isError: false })
]

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length

/** Times `SAVES` turn saves on a history that starts with `start` messages. */
const measure = (store: SessionStore.Service, id: string, start: number) =>
  Effect.gen(function*() {
    const messages: Array<Message.Message> = [Message.user("go")]
    for (let n = 0; messages.length < start; n++) messages.push(...turn(n))
    const fields = { id, agent: "bench", model: "bench:x", assigns: { n: 0 }, createdAt: 0 }
    yield* store.save(Snapshot.make({ ...fields, messages: [...messages], updatedAt: 0 }))
    const times: Array<number> = []
    for (let i = 0; i < SAVES; i++) {
      messages.push(...turn(start + i))
      // As the session does: the whole array handed over, two messages said to be new. The copy is
      // the session's (one per turn, History.toArray), not the store's: it is made before the clock
      // starts, or the memory store's figure would be that copy's (~3 µs at 1,000 against a
      // `Map.set`), failing the goal on what no store does.
      const snapshot = Snapshot.make({ ...fields, messages: [...messages], assigns: { n: i }, updatedAt: i })
      const began = performance.now()
      yield* store.save(snapshot, { appended: 2 })
      times.push(performance.now() - began)
    }
    return times
  })

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-bench-store-"))

const program = Effect.gen(function*() {
  const stores: ReadonlyArray<readonly [string, SessionStore.Service]> = [
    ["memory", Store.makeMemory()],
    ["disk", yield* DiskSessionStore.make({ dir: path.join(dir, "disk") })],
    ["sqlite", yield* SqliteSessionStore.make({ file: path.join(dir, "sessions.db") })],
    ["sql (sqlite)", yield* SqlSessionStore.make().pipe(Effect.provide(yield* Layer.build(SqliteClient.layer({ file: path.join(dir, "sql.db") }))))]
  ]
  const results: Array<{ name: string; small: ReadonlyArray<number>; large: ReadonlyArray<number> }> = []
  for (const [name, store] of stores) {
    // A throwaway pass warms the JIT up for this store.
    yield* measure(store, `${name}-warm`, 100)
    results.push({ name, small: yield* measure(store, `${name}-10`, 10), large: yield* measure(store, `${name}-1000`, 1000) })
  }
  return results
}).pipe(Effect.scoped, Effect.provide([NodeFileSystem.layer, NodePath.layer]))

const results = await Effect.runPromise(program)
fs.rmSync(dir, { recursive: true, force: true })
const memory = results.find((r) => r.name === "memory")!
for (const { large, name, small } of results) {
  const ratio = median(large) / median(small)
  const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`
  console.log(
    `${name}: ${us(median(small))} per save at 10 messages (mean ${us(mean(small))}), ${us(median(large))} at 1,000 (mean ${us(mean(large))}); ` +
      `${ratio.toFixed(2)}x; against memory at 1,000: ${(median(large) / median(memory.large)).toFixed(1)}x`
  )
  report({
    benchmark: `store ${name}: save of a turn at 1,000 messages / at 10 (median)`,
    ours: `${us(median(large))}/save`,
    baseline: `${us(median(small))}/save`,
    ratio,
    goal: `≤ ${GOAL}×`,
    met: ratio <= GOAL
  })
}
const sqlite = results.find((r) => r.name === "sqlite")!
const throughSql = results.find((r) => r.name === "sql (sqlite)")!
const sqlRatio = median(throughSql.large) / median(sqlite.large)
console.log(`through effect/sql's SqliteClient: ${sqlRatio.toFixed(2)}x a save on SqliteSessionStore's own connection, at 1,000 messages`)
report({
  benchmark: "store: save of a turn at 1,000 messages, the SQL store through SqliteClient / SqliteSessionStore (median)",
  ours: `${(median(throughSql.large) * 1000).toFixed(1)} µs/save`,
  baseline: `${(median(sqlite.large) * 1000).toFixed(1)} µs/save`,
  ratio: sqlRatio,
  goal: "report",
  met: null
})

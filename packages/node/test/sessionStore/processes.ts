/**
 * Several processes on one store: children running test/fixtures/storeWriter.ts, driven line by
 * line over stdin and stdout, killed with the scope.
 */
import { assert } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import * as Message from "@condukt/core/Message"

const fixture = path.resolve(import.meta.dirname, "../fixtures/storeWriter.ts")

/**
 * A child running `program` (test/fixtures/storeWriter.ts, or another package's fixture of the same
 * protocol); `next` is its next line on stdout, or `exited <code>: <stderr>` once it has ended.
 */
export const storeWriter = (args: ReadonlyArray<string>, program: string = fixture) =>
  Effect.gen(function*() {
    const lines = yield* Queue.unbounded<string>()
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(process.execPath, [program, ...args], { stdio: ["pipe", "pipe", "pipe"] })),
      (proc) => Effect.sync(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"))
    )
    let pending = ""
    let stderr = ""
    proc.stdout.on("data", (chunk: Buffer) => {
      const parts = (pending + chunk.toString()).split("\n")
      pending = parts.pop()!
      for (const line of parts) Queue.offerUnsafe(lines, line)
    })
    proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    proc.on("close", (code) => Queue.offerUnsafe(lines, `exited ${code}: ${stderr}`))
    return {
      pid: proc.pid!,
      /** Kills the child without a word (SIGKILL), as a machine dies. */
      kill: Effect.sync(() => void proc.kill("SIGKILL")),
      next: Queue.take(lines),
      send: (line: string) => Effect.sync(() => void proc.stdin.write(`${line}\n`)),
      end: Effect.sync(() => void proc.stdin.end())
    }
  })

/**
 * Two writers that loaded session `id` from the store at `location` save one turn each at the same
 * moment (both are ready before either is told to go); their outcomes, in start order.
 */
export const twoWriters = (kind: string, location: string, id: string, program: string = fixture) =>
  Effect.gen(function*() {
    const writers = yield* Effect.all([
      storeWriter(["writer", kind, location, id, "alpha"], program),
      storeWriter(["writer", kind, location, id, "beta"], program)
    ])
    for (const writer of writers) assert.strictEqual(yield* writer.next, "ready")
    yield* Effect.forEach(writers, (writer) => writer.send("go"), { discard: true })
    // A line that is not JSON (a child that died) is kept as it is, for the assertion to show.
    return yield* Effect.forEach(writers, (writer) => Effect.map(writer.next, (line): unknown => (line.startsWith("{") ? JSON.parse(line) : line)))
  })

/** Of two writers' outcomes, which one saved (0 or 1); fails unless exactly one did. */
export const winnerOf = (outcomes: ReadonlyArray<unknown>): 0 | 1 => {
  const saved = outcomes.map((outcome) => JSON.stringify(outcome) === JSON.stringify({ saved: true }))
  assert.deepStrictEqual([...saved].sort(), [false, true], `outcomes: ${JSON.stringify(outcomes)}`)
  return saved[0] ? 0 : 1
}

/** The turn writer `name` saves. */
export const writerTurn = (name: string) => [Message.user(name), Message.assistant([Message.textPart(`${name} done`)])]

export const writerNames = ["alpha", "beta"] as const

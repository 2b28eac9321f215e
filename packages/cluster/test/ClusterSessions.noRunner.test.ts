/**
 * A client of a cluster with no runner up: its calls say so in the log after `waitNotice`, and,
 * given a `timeout`, fail `Unavailable` naming the wait instead of waiting forever.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Logger, Stream } from "effect"
import * as path from "node:path"
import * as Sessions from "@condukt/core/Sessions"
import * as Runner from "../src/Runner.ts"
import { TempDir } from "@condukt/testing"

const tempDir = TempDir.make("condukt-store-")

/** Warnings logged, as text, with the session's id left out. */
const capturedWarnings = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel === "Warn") lines.push((Array.isArray(message) ? message : [message]).join(" "))
  })
  return { lines, layer: Logger.layer([logger]) }
}

describe("ClusterSessions with no runner up", () => {
  it.live("a client's run warns that no runner is up, then fails Unavailable after its timeout", () => {
    const warnings = capturedWarnings()
    return Effect.gen(function*() {
      const dir = yield* tempDir
      const failed = yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        return yield* Effect.flip(sessions.run("nobody-home", "Anyone there?"))
      }).pipe(
        Effect.provide(Runner.layerSqliteClient({ file: path.join(dir, "cluster.db"), waitNotice: "100 millis", timeout: "300 millis" })),
        Effect.provide(warnings.layer)
      )
      assert.deepStrictEqual({ sessionId: failed.sessionId, reason: failed.reason._tag, message: failed.message }, {
        sessionId: "nobody-home",
        reason: "Unavailable",
        message: "Sessions: session nobody-home: the session could not be reached: no runner of the cluster was up for 300ms (run)"
      })
      assert.deepStrictEqual(warnings.lines, [
        "Session nobody-home: run has waited 100ms for a runner: none of the cluster's is up. " +
        "A client runs no session: start a runner (Runner.layer) on the same database, or bound the wait with the client's timeout"
      ])
    }).pipe(Effect.scoped)
  }, 20_000)

  it.live("calls waiting at once are each warned about once and each fail after the timeout; one that began later fails later", () => {
    const warnings = capturedWarnings()
    return Effect.gen(function*() {
      const dir = yield* tempDir
      const outcomes = yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        const early = yield* Effect.forEach(["a", "b", "c"], (id) => Effect.forkChild(Effect.flip(sessions.run(id, "Anyone there?"))))
        const history = yield* Effect.forkChild(Effect.flip(sessions.history("d")))
        // Begun once the others have waited longer than their notice: it is not given up with them.
        yield* Effect.sleep("250 millis")
        const late = yield* Effect.forkChild(Effect.flip(sessions.run("late", "Anyone there?")))
        const first = yield* Fiber.joinAll(early)
        const lateWaits = late.pollUnsafe() === undefined
        return {
          first: first.map((error) => error.message),
          lateWaits,
          late: (yield* Fiber.join(late)).message,
          history: (yield* Fiber.join(history)).message
        }
      }).pipe(
        Effect.provide(Runner.layerSqliteClient({ file: path.join(dir, "cluster.db"), waitNotice: "100 millis", timeout: "400 millis" })),
        Effect.provide(warnings.layer)
      )
      const gaveUp = (id: string, call: string) =>
        `Sessions: session ${id}: the session could not be reached: no runner of the cluster was up for 400ms (${call})`
      assert.deepStrictEqual(outcomes, {
        first: [gaveUp("a", "run"), gaveUp("b", "run"), gaveUp("c", "run")],
        lateWaits: true,
        late: gaveUp("late", "run"),
        history: gaveUp("d", "history")
      })
      const warned = (id: string, call: string) =>
        `Session ${id}: ${call} has waited 100ms for a runner: none of the cluster's is up. ` +
        "A client runs no session: start a runner (Runner.layer) on the same database, or bound the wait with the client's timeout"
      assert.deepStrictEqual([...warnings.lines].sort(), [warned("a", "run"), warned("b", "run"), warned("c", "run"), warned("d", "history"), warned("late", "run")].sort())
    }).pipe(Effect.scoped)
  }, 20_000)

  it.live("a client's stream fails Unavailable after its timeout too", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const failed = yield* Effect.gen(function*() {
        const sessions = yield* Sessions.ById
        return yield* Effect.flip(Stream.runDrain(sessions.stream("nobody-home", "Anyone there?")))
      }).pipe(Effect.provide(Runner.layerSqliteClient({ file: path.join(dir, "cluster.db"), timeout: "300 millis" })))
      assert.deepStrictEqual({ reason: failed.reason._tag, message: failed.message }, {
        reason: "Unavailable",
        message: "Sessions: session nobody-home: the session could not be reached: no runner of the cluster was up for 300ms (stream)"
      })
    }).pipe(Effect.scoped), 20_000)
})

import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Logger, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Worker } from "node:worker_threads"
import * as Sandbox from "../../src/Sandbox.ts"
import * as Session from "../../src/Session.ts"
import type * as SessionEvent from "../../src/SessionEvent.ts"
import { agent, replies } from "../fixtures/pushAgent.ts"

/** Warnings logged, as text. */
const capturedWarnings = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel === "Warn") lines.push((Array.isArray(message) ? message : [message]).join(" "))
  })
  return { lines, layer: Logger.layer([logger]) }
}

/**
 * Runs the fixture program (a worker thread: its own event loop, as a process's) until it says it
 * waits (then ends it) or it exits by itself.
 */
const runParkedProgram = (waitNotice: string) =>
  new Promise<{ readonly said: string | undefined; readonly exitedByItself: boolean }>((resolve) => {
    const worker = new Worker(new URL("../fixtures/parkedRun.ts", import.meta.url), { argv: [waitNotice], stdout: true, stderr: true })
    let output = ""
    const read = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      const said = /has waited \S+ for an answer to push \(c_push\)/.exec(output)
      if (said !== null) {
        worker.removeAllListeners("exit")
        void worker.terminate()
        resolve({ said: said[0], exitedByItself: false })
      }
    }
    worker.stdout.on("data", read)
    worker.stderr.on("data", read)
    worker.on("exit", () => resolve({ said: undefined, exitedByItself: true }))
  })

describe("waitNotice", () => {
  it.effect("a run waiting on a call nobody answers says so after its threshold: a StillWaiting event and a warning naming the call; approved, it ends", () => {
    const warnings = capturedWarnings()
    return Effect.gen(function*() {
      const session = yield* Session.start(agent, { projectInstructions: false })
      const observed = yield* session.subscribe
      const seen = yield* Effect.forkScoped(Stream.runCollect(Stream.takeUntil(observed, (event) => event._tag === "StillWaiting")))
      const run = yield* Effect.forkScoped(session.run("Push main.", { waitNotice: "1 minute" }))
      while ((yield* session.pending).length === 0) yield* Effect.yieldNow
      yield* TestClock.adjust("1 minute")
      const events = yield* Fiber.join(seen)
      const notice = events.filter((event): event is SessionEvent.StillWaiting => event._tag === "StillWaiting")
        .map(({ calls, waitedMs }) => ({ calls, waitedMs }))
      assert.deepStrictEqual(notice, [{ calls: [{ callId: "c_push", tool: "push" }], waitedMs: 60_000 }])
      assert.deepStrictEqual(warnings.lines.map((line) => line.replace(/^Session \S+: run \S+ /, "")), [
        "has waited 1m for an answer to push (c_push); answer with session.approve / session.deny (or an answerer), or bound the wait with approvals.timeout"
      ])
      yield* session.approve("c_push")
      assert.strictEqual((yield* Fiber.join(run)).text, "done")
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop(), warnings.layer)))
  })

  it.effect("a waitNotice of 0 looks every 10 ms, not in a spin; a warning names 20 calls and counts the rest, the event carries all", () => {
    const warnings = capturedWarnings()
    const calls = Array.from({ length: 25 }, (_, i) => TestModel.toolCall("push", { branch: `b${i}` }, `c${i}`))
    return Effect.gen(function*() {
      const session = yield* Session.start(agent, { projectInstructions: false })
      const observed = yield* session.subscribe
      const seen = yield* Effect.forkScoped(Stream.runCollect(Stream.takeUntil(observed, (event) => event._tag === "StillWaiting")))
      yield* Effect.forkScoped(session.run("Push them.", { waitNotice: 0 }))
      while ((yield* session.pending).length < 25) yield* Effect.yieldNow
      yield* TestClock.adjust("10 millis")
      const notice = (yield* Fiber.join(seen)).filter((event): event is SessionEvent.StillWaiting => event._tag === "StillWaiting")
      assert.deepStrictEqual(notice.map(({ calls, waitedMs }) => [calls.length, waitedMs]), [[25, 10]])
      assert.deepStrictEqual(warnings.lines.map((line) => line.match(/for an answer to (.*); answer/)![1]!.split(", ").length), [20])
      assert.include(warnings.lines[0]!, "push (c19) and 5 more;")
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.reply(...calls), TestModel.text("done")]), Sandbox.layerNoop(), warnings.layer)))
  })

  it.effect("a stream of a run waiting on a call nobody answers carries the StillWaiting event after its threshold", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent, { projectInstructions: false })
      const stream = session.stream("Push main.", { waitNotice: "1 minute" }).pipe(Stream.takeUntil((event) => event._tag === "StillWaiting"))
      const seen = yield* Effect.forkScoped(Stream.runCollect(stream))
      while ((yield* session.pending).length === 0) yield* Effect.yieldNow
      yield* TestClock.adjust("1 minute")
      const events = yield* Fiber.join(seen)
      assert.deepStrictEqual(events.map((event) => event._tag), ["AgentStart", "TurnStart", "TurnEnd", "ToolCall", "ApprovalRequested", "StillWaiting"])
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop()))))

  it.effect("a call the session's answerer is deciding is not reported: only calls a person must answer are", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent, { projectInstructions: false, answerer: () => Effect.never })
      const seen: Array<string> = []
      yield* Effect.forkScoped(Stream.runForEach(yield* session.subscribe, (event) => Effect.sync(() => seen.push(event._tag))))
      yield* Effect.forkScoped(session.run("Push main.", { waitNotice: "1 minute" }))
      while ((yield* session.pending).length === 0) yield* Effect.yieldNow
      yield* TestClock.adjust("5 minutes")
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      assert.deepStrictEqual(seen, ["AgentStart", "TurnStart", "TurnEnd", "ToolCall", "ApprovalRequested"])
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop()))))

  it("a program whose only work is a run parked on an approval stays up and says what it waits for", async () => {
    assert.deepStrictEqual(await runParkedProgram("100 millis"), { said: "has waited 100ms for an answer to push (c_push)", exitedByItself: false })
  }, 30_000)
})

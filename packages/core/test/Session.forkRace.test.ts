/**
 * A run's fiber can take every step of its run before the fork that starts it hands it back: the
 * fiber serving the mailbox may yield between the two under load. Found by bench/approvals.ts,
 * whose 10,000 sessions each park on an approval: at a few hundred sessions a run parked before it
 * was recorded as running, was never recorded as parked, and its caller waited forever after the
 * answer (docs/decisions/0085). The run is now recorded before its fiber is forked.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import * as Agent from "../src/Agent.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Session from "../src/Session.ts"
import * as Tool from "../src/Tool.ts"

const push = Tool.make("push", {
  description: "Pushes the branch",
  parameters: Schema.Struct({ branch: Schema.String }),
  needsApproval: true,
  call: ({ branch }) => Effect.succeed(`pushed ${branch}`)
})
const agent = Agent.make({ name: "waiting", model: "test:scripted", tools: [push] })

describe("runs started under load", () => {
  it.live("2,000 sessions each park a run on an approval; once every call is approved, every run answers", () =>
    Effect.gen(function*() {
      const sessions: Array<Session.Session> = []
      const runs: Array<Fiber.Fiber<Session.RunResult, Session.RunError>> = []
      for (let i = 0; i < 2_000; i++) {
        const session = yield* Session.start(agent, { projectInstructions: false })
        sessions.push(session)
        runs.push(yield* Effect.forkChild(session.run("Push main.")))
      }
      for (const session of sessions) {
        while ((yield* session.pending).length === 0) yield* Effect.yieldNow
      }
      yield* Effect.forEach(sessions, (session) => session.approveAll, { discard: true })
      // A run lost by the actor would never answer: each join is bounded, and the count says how many did.
      const answered = yield* Effect.forEach(runs, (run) => Effect.map(Effect.timeoutOption(Fiber.join(run), "10 seconds"), (r) => (r._tag === "Some" ? r.value.text : "no answer")))
      assert.deepStrictEqual(answered.filter((text) => text !== "done"), [])
      assert.strictEqual(answered.length, 2_000)
    }).pipe(
      Effect.scoped,
      Effect.provideService(Model.Model, TestModel.callThenAnswer("push", { branch: "main" }, "done")),
      Effect.provide(Sandbox.layerNoop())
    ), 60_000)
})

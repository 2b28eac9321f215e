/**
 * bench/approvals — what a session waiting on an approval holds (issue 26 item 4: 10,000 sessions
 * each waiting hold ≤ 2 KB heap each beyond an idle session).
 *
 * Three shapes of 10,000, measured by heap snapshots (bench/support/heap.ts): sessions of one agent
 * (one tool, `needsApproval: true`, a TestModel calling it then answering, a no-op sandbox, no
 * store, no approval timeout) idle; the same sessions each with one run waiting on the approval of
 * its call, started by `session.run` in a fiber of the bench; and those callers' fibers alone, the
 * program's and not the sessions', stood in for by fibers that take `session.run`'s steps. The goal
 * is judged on the waiting sessions minus the idle ones minus the callers (1.42 KB with its approval record, ADR 0088; 1.73 KB since the caller's notice, issue 42); the total with the
 * callers is reported beside it. The census is taken once every session lists its call as pending;
 * the runs are then approved and must answer "done". docs/decisions/0061-parked-runs.md records a
 * run.
 *
 * Run: node_modules/.bin/node bench/approvals.ts [--count=N]
 */
import { Agent, Model, Sandbox, Session, Tool } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { Deferred, Effect, Fiber, Schema, Scope } from "effect"
import { report } from "./report.ts"
import { idle, measure } from "./support/heap.ts"

const COUNT = Number(process.argv.find((a) => a.startsWith("--count="))?.slice(8) ?? 10_000)
const GOAL_BYTES = 2 * 1024

const push = Tool.make("push", {
  description: "Pushes the branch",
  parameters: Schema.Struct({ branch: Schema.String }),
  needsApproval: true,
  call: ({ branch }) => Effect.succeed(`pushed ${branch}`)
})
const agent = Agent.make({ name: "waiting", model: "test:scripted", tools: [push] })
const model = TestModel.callThenAnswer("push", { branch: "main" }, "done")
const sandbox = Sandbox.layerNoop()

const started = <A, E>(self: Effect.Effect<A, E, Scope.Scope>, scope: Scope.Scope) =>
  self.pipe(Scope.provide(scope), Effect.provideService(Model.Model, model), Effect.provide(Condukt.layer), Effect.orDie)

const idleSessions = (scope: Scope.Scope, count: number) =>
  started(
    Effect.gen(function*() {
      const handles: Array<Session.Session> = []
      for (let i = 0; i < count; i++) handles.push(yield* Session.start(agent, { sandbox, projectInstructions: false }))
      return idle(handles.length)
    }),
    scope
  )

/** `count` sessions, each with a run waiting on the approval of its one call; `finish` approves them all. */
const waitingSessions = (scope: Scope.Scope, count: number) =>
  started(
    Effect.gen(function*() {
      const sessions: Array<Session.Session> = []
      const runs: Array<Fiber.Fiber<Session.RunResult, Session.RunError>> = []
      for (let i = 0; i < count; i++) {
        const session = yield* Session.start(agent, { sandbox, projectInstructions: false })
        sessions.push(session)
        runs.push(yield* Effect.forkIn(session.run("Push main."), scope))
      }
      // Every run has reached its request: each session lists its call.
      for (const session of sessions) {
        while ((yield* session.pending).length === 0) yield* Effect.yieldNow
      }
      const finish = Effect.gen(function*() {
        yield* Effect.forEach(sessions, (session) => session.approveAll, { discard: true })
        for (const result of yield* Effect.forEach(runs, Fiber.join)) {
          if (result.text !== "done") return yield* Effect.die(new Error(`a run answered ${result.text}`))
        }
      }).pipe(Effect.orDie)
      return { alive: runs.length, finish }
    }),
    scope
  )

/**
 * The callers alone, the program's and not the sessions': `count` fibers forked as the waiting
 * runs' callers are (same scope, same context), each in `session.run`'s own steps on a result that
 * never comes: the run queued (which forks the fiber serving the session's mailbox from the
 * caller's, giving the caller's fiber a dispatcher of its own), then its result awaited beside
 * the wait's notice (a child fiber: a record, and a sleep of 30 s then a check, forever, as
 * runtime/waitNotice.ts's; interrupted when the wait ends), an interruption cancelling it.
 */
const callers = (scope: Scope.Scope, count: number) =>
  started(
    Effect.gen(function*() {
      const results: Array<Deferred.Deferred<Session.RunResult, Session.RunError>> = []
      const fibers: Array<Fiber.Fiber<Session.RunResult, Session.RunError>> = []
      for (let i = 0; i < count; i++) {
        const done = yield* Deferred.make<Session.RunResult, Session.RunError>()
        const queued = Effect.succeed({ done })
        results.push(done)
        const enqueued = Effect.andThen(Effect.forkIn(Effect.void, scope), queued)
        // The notice's shape: a record, and a sleep then a check, forever.
        const watched = { reported: "", waitedMs: 0 }
        const notice = Effect.forever(Effect.andThen(Effect.sleep(30_000), Effect.sync(() => { watched.waitedMs += 30_000 })))
        const awaited = (run: { readonly done: Deferred.Deferred<Session.RunResult, Session.RunError> }) =>
          Effect.flatMap(Effect.forkChild(notice), (noticing) =>
            Deferred.await(run.done).pipe(Effect.onExit(() => Fiber.interrupt(noticing)), Effect.onInterrupt(() => Effect.void)))
        fibers.push(yield* Effect.forkIn(Effect.flatMap(enqueued, awaited), scope))
      }
      return { alive: fibers.length, finish: Effect.forEach(fibers, Fiber.interrupt, { discard: true }) }
    }),
    scope
  )

const idleShape = await measure("idle Session (one flagged tool, no-op sandbox)", idleSessions, COUNT)
const waitingShape = await measure("Session with a run waiting on an approval (its caller's fiber included)", waitingSessions, COUNT)
const callerShape = await measure("the callers alone (a fiber each in session.run's steps, awaiting a result that never comes)", callers, COUNT)
const beyond = waitingShape.total - idleShape.total - callerShape.total
const kb = (bytes: number) => `${(bytes / 1024).toFixed(2)} KB`
report({
  benchmark: "approvals: bytes per session waiting on an approval beyond an idle one, its caller's fiber not counted",
  ours: kb(beyond),
  baseline: `${kb(idleShape.total)} idle`,
  ratio: null,
  goal: "≤ 2 KB",
  met: beyond <= GOAL_BYTES
})
report({
  benchmark: "approvals: bytes per waiting session and its caller's fiber beyond an idle session",
  ours: kb(waitingShape.total - idleShape.total),
  baseline: `${kb(callerShape.total)} the caller`,
  ratio: null,
  goal: "(the caller's fiber is the program's)",
  met: null
})

import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Exit, Fiber, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as Supervisor from "../src/Supervisor.ts"

type Order = "crash" | "fail" | "exit"

/** Children that log their starts and stops and live until told how to end. */
const makeProbe = Effect.gen(function*() {
  const log = yield* Queue.unbounded<string>()
  const orders = new Map<string, Queue.Queue<Order>>()
  const child = (id: string, restart?: Supervisor.Restart): Supervisor.ChildSpec<string, never, never> => {
    if (!orders.has(id)) orders.set(id, Effect.runSync(Queue.unbounded<Order>()))
    return {
      id,
      restart,
      start: Effect.acquireRelease(Queue.offer(log, `start ${id}`).pipe(Effect.as(id)), () => Queue.offer(log, `stop ${id}`)),
      run: () =>
        Effect.flatMap(Queue.take(orders.get(id)!), (order) =>
          order === "crash" ? Effect.die(`${id} crashed`) : order === "fail" ? Effect.fail(`${id} failed`) : Effect.void)
    }
  }
  const order = (id: string, what: Order) => Queue.offer(orders.get(id)!, what)
  const next = (n: number) => Queue.takeN(log, n)
  return { child, order, next, log }
})

const startAll = (supervisor: Supervisor.Supervisor, specs: ReadonlyArray<Supervisor.ChildSpec<string, never, never>>) =>
  Effect.forEach(specs, (spec) => supervisor.startChild(spec), { discard: true })

/** The supervisor `make` gives, with children a, b and c started in order; `starts` is what they logged. */
const withABC = <E>(make: Effect.Effect<Supervisor.Supervisor, E, Scope.Scope>) =>
  Effect.gen(function*() {
    const probe = yield* makeProbe
    const supervisor = yield* make
    yield* startAll(supervisor, [probe.child("a"), probe.child("b"), probe.child("c")])
    return { probe, supervisor, starts: yield* probe.next(3) }
  })

describe("Supervisor", () => {
  it.effect("one_for_one restarts only the child that died", () =>
    Effect.gen(function*() {
      const { probe, starts, supervisor } = yield* withABC(Supervisor.make({ strategy: "one_for_one" }))
      assert.deepStrictEqual(starts, ["start a", "start b", "start c"])
      yield* probe.order("b", "crash")
      assert.deepStrictEqual(yield* probe.next(2), ["stop b", "start b"])
      assert.deepStrictEqual((yield* supervisor.children).map((c) => [c.id, c.starts, c.running]), [
        ["a", 1, true],
        ["b", 2, true],
        ["c", 1, true]
      ])
    }))

  it.effect("one_for_all stops the others in reverse order and starts everyone in order", () =>
    Effect.gen(function*() {
      const { probe } = yield* withABC(Supervisor.make({ strategy: "one_for_all" }))
      yield* probe.order("b", "crash")
      assert.deepStrictEqual(yield* probe.next(6), ["stop b", "stop c", "stop a", "start a", "start b", "start c"])
    }))

  it.effect("rest_for_one restarts the child and those started after it", () =>
    Effect.gen(function*() {
      const { probe, supervisor } = yield* withABC(Supervisor.make({ strategy: "rest_for_one" }))
      yield* probe.order("b", "fail")
      assert.deepStrictEqual(yield* probe.next(4), ["stop b", "stop c", "start b", "start c"])
      assert.deepStrictEqual((yield* supervisor.children).map((c) => c.starts), [1, 2, 2])
    }))

  it.effect("restart types: permanent always, transient after failures only, temporary never", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe
      const supervisor = yield* Supervisor.make()
      yield* startAll(supervisor, [
        probe.child("p", "permanent"),
        probe.child("t", "transient"),
        probe.child("tt", "transient"),
        probe.child("x", "temporary")
      ])
      yield* probe.next(4)
      yield* probe.order("p", "exit")
      assert.deepStrictEqual(yield* probe.next(2), ["stop p", "start p"])
      yield* probe.order("t", "crash")
      assert.deepStrictEqual(yield* probe.next(2), ["stop t", "start t"])
      yield* probe.order("tt", "exit")
      assert.deepStrictEqual(yield* probe.next(1), ["stop tt"])
      yield* probe.order("x", "crash")
      assert.deepStrictEqual(yield* probe.next(1), ["stop x"])
      // Exit reports are handled in order: once p's later exit has brought p back, x's is handled.
      yield* probe.order("p", "exit")
      assert.deepStrictEqual(yield* probe.next(2), ["stop p", "start p"])
      assert.deepStrictEqual((yield* supervisor.children).map((c) => [c.id, c.restart, c.starts]), [
        ["p", "permanent", 3],
        ["t", "transient", 2]
      ])
    }))

  it.effect("one_for_all does not bring temporary children back", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe
      const supervisor = yield* Supervisor.make({ strategy: "one_for_all" })
      yield* startAll(supervisor, [probe.child("a"), probe.child("tmp", "temporary"), probe.child("c")])
      yield* probe.next(3)
      yield* probe.order("c", "crash")
      assert.deepStrictEqual(yield* probe.next(5), ["stop c", "stop tmp", "stop a", "start a", "start c"])
      assert.deepStrictEqual((yield* supervisor.children).map((c) => c.id), ["a", "c"])
    }))

  it.effect("more restarts than the intensity allows stops every child and fails the supervisor", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe
      const supervisor = yield* Supervisor.make({ maxRestarts: 2, period: "10 seconds" })
      yield* startAll(supervisor, [probe.child("a"), probe.child("b")])
      yield* probe.next(2)
      const joined = yield* Effect.forkChild(Effect.flip(supervisor.join), { startImmediately: true })
      yield* probe.order("b", "crash")
      yield* probe.next(2)
      // Outside the period the old restart no longer counts.
      yield* TestClock.adjust("11 seconds")
      yield* probe.order("b", "crash")
      yield* probe.next(2)
      yield* probe.order("b", "crash")
      yield* probe.next(2)
      yield* probe.order("b", "crash")
      assert.deepStrictEqual(yield* probe.next(2), ["stop b", "stop a"])
      const error = yield* Fiber.join(joined)
      assert.strictEqual(error.message, "Supervisor gave up: child b needed more than 2 restarts within 10000ms")
      assert.deepStrictEqual(yield* supervisor.children, [])
    }))

  it.effect("a give-up closes the scopes of the children it stops with the supervisor's error; any other stop or end, with none", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe
      const closed = yield* Queue.unbounded<string>()
      // The child's own finalizer says what its scope was closed with.
      const watched = (id: string): Supervisor.ChildSpec<string, never, never> => {
        const spec = probe.child(id)
        return {
          ...spec,
          start: Effect.tap(spec.start, () =>
            Effect.flatMap(Scope.Scope, (scope) =>
              Scope.addFinalizerExit(scope, (exit) => Queue.offer(closed, `${id}: ${Supervisor.gaveUp(exit)?.message ?? "no give-up"}`))))
        }
      }
      const supervisor = yield* Supervisor.make({ maxRestarts: 0 })
      yield* startAll(supervisor, [watched("a"), watched("b"), watched("c")])
      yield* probe.next(3)
      yield* supervisor.terminateChild("c")
      yield* probe.order("b", "crash")
      yield* Effect.flip(supervisor.join)
      assert.deepStrictEqual(yield* Queue.takeAll(closed), [
        "c: no give-up",
        "b: no give-up",
        "a: Supervisor gave up: child b needed more than 0 restarts within 5000ms"
      ])
    }))

  it.effect("a supervisor that gives up is restarted by its parent", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe
      const parent = yield* Supervisor.make()
      yield* parent.startChild({
        id: "inner",
        start: Effect.gen(function*() {
          const supervisor = yield* Supervisor.make({ maxRestarts: 0 })
          yield* supervisor.startChild(probe.child("worker"))
          return supervisor
        }),
        run: (supervisor) => supervisor.join
      })
      assert.deepStrictEqual(yield* probe.next(1), ["start worker"])
      yield* probe.order("worker", "crash")
      assert.deepStrictEqual(yield* probe.next(2), ["stop worker", "start worker"])
      assert.deepStrictEqual((yield* parent.children).map((c) => [c.id, c.starts]), [["inner", 2]])
    }))

  it.effect("a child whose start fails is not added, and the error is returned", () =>
    Effect.gen(function*() {
      const supervisor = yield* Supervisor.make()
      const error = yield* Effect.flip(supervisor.startChild({ id: "bad", start: Effect.fail("no database") }))
      assert.strictEqual(error, "no database")
      assert.deepStrictEqual(yield* supervisor.children, [])
      const probe = yield* makeProbe
      yield* supervisor.startChild(probe.child("good"))
      // A refusal is a reason of the supervisor's one error: `catchReason` picks it out.
      const duplicate = yield* supervisor.startChild(probe.child("good")).pipe(
        Effect.as("started"),
        Effect.catchReason("SupervisorError", "DuplicateChild", (reason) => Effect.succeed(reason.message))
      )
      assert.strictEqual(duplicate, "A child with id good is already supervised")
    }))

  it.effect("terminateChild stops and removes a child; closing the scope stops the rest in reverse order", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { probe, supervisor } = yield* withABC(Supervisor.make().pipe(Scope.provide(scope)))
      yield* supervisor.terminateChild("b")
      assert.deepStrictEqual(yield* probe.next(1), ["stop b"])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* probe.next(2), ["stop c", "stop a"])
    }))

  it.effect("auto shutdown: any significant child ending on its own ends the supervisor", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe
      const supervisor = yield* Supervisor.make({ autoShutdown: "any_significant" })
      yield* startAll(supervisor, [probe.child("worker"), { ...probe.child("job", "transient"), significant: true }])
      yield* probe.next(2)
      const joined = yield* Effect.forkChild(supervisor.join, { startImmediately: true })
      yield* probe.order("job", "exit")
      assert.deepStrictEqual(yield* probe.next(2), ["stop job", "stop worker"])
      yield* Fiber.join(joined)
      assert.deepStrictEqual(yield* supervisor.children, [])
    }))

  it.effect("auto shutdown: all_significant waits for the last significant child", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe
      const supervisor = yield* Supervisor.make({ autoShutdown: "all_significant" })
      yield* startAll(supervisor, [
        { ...probe.child("a", "temporary"), significant: true },
        { ...probe.child("b", "temporary"), significant: true },
        probe.child("keeper")
      ])
      yield* probe.next(3)
      yield* probe.order("a", "exit")
      assert.deepStrictEqual(yield* probe.next(1), ["stop a"])
      yield* probe.order("b", "crash")
      assert.deepStrictEqual(yield* probe.next(2), ["stop b", "stop keeper"])
      yield* supervisor.join
    }))

  it.effect("closing the scope after a restart stops in reverse start order, the restarted child keeping its place", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { probe } = yield* withABC(Supervisor.make().pipe(Scope.provide(scope)))
      yield* probe.order("a", "crash")
      assert.deepStrictEqual(yield* probe.next(2), ["stop a", "start a"])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* probe.next(3), ["stop c", "stop b", "stop a"])
    }))

  it.effect("a supervisor that gave up refuses new children with a typed error", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe
      const supervisor = yield* Supervisor.make({ maxRestarts: 0 })
      yield* supervisor.startChild(probe.child("a"))
      yield* probe.next(1)
      yield* probe.order("a", "crash")
      yield* Effect.flip(supervisor.join)
      const refused = yield* Effect.flip(supervisor.startChild(probe.child("late")))
      assert.deepStrictEqual(refused, new Supervisor.SupervisorError({ reason: new Supervisor.SupervisorStopped({ childId: "late", ending: "GaveUp" }) }))
      assert.strictEqual(refused.message, "Cannot start child late: the supervisor has stopped (it gave up after too many restarts)")
      assert.deepStrictEqual(yield* supervisor.children, [])
      assert.strictEqual(yield* Queue.size(probe.log), 1) // "stop a" only: "late" never started
    }))

  it.effect("a supervisor that shut down or whose scope closed refuses new children", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe
      const auto = yield* Supervisor.make({ autoShutdown: "any_significant" })
      yield* auto.startChild({ ...probe.child("job", "temporary"), significant: true })
      yield* probe.next(1)
      yield* probe.order("job", "exit")
      yield* auto.join
      const shutDown = yield* Effect.flip(auto.startChild(probe.child("x")))
      assert.deepStrictEqual(shutDown, new Supervisor.SupervisorError({ reason: new Supervisor.SupervisorStopped({ childId: "x", ending: "ShutDown" }) }))
      assert.strictEqual(shutDown.message, "Cannot start child x: the supervisor has stopped (it shut down automatically)")
      const scope = yield* Scope.make()
      const closed = yield* Supervisor.make().pipe(Scope.provide(scope))
      yield* Scope.close(scope, Exit.void)
      const late = yield* Effect.flip(closed.startChild(probe.child("y")))
      assert.deepStrictEqual(late, new Supervisor.SupervisorError({ reason: new Supervisor.SupervisorStopped({ childId: "y", ending: "Closed" }) }))
      assert.strictEqual(late.message, "Cannot start child y: the supervisor has stopped (its scope is closed)")
    }))

  it.effect("a restart intensity that could never trip is refused", () =>
    Effect.gen(function*() {
      const refused = (options: Supervisor.Options) => Effect.map(Effect.flip(Supervisor.make(options)), (e) => e.message)
      assert.strictEqual(yield* refused({ period: 0 }), "Supervisor option period must be a finite duration above zero (got 0)")
      assert.strictEqual(yield* refused({ period: -5 }), "Supervisor option period must be a finite duration above zero (got -5)")
      assert.strictEqual(yield* refused({ period: "forever" as Duration.Input }), "Supervisor option period must be a finite duration above zero (got forever)")
      assert.strictEqual(yield* refused({ period: Infinity }), "Supervisor option period must be a finite duration above zero (got Infinity)")
      assert.strictEqual(yield* refused({ maxRestarts: -1 }), "Supervisor option maxRestarts must be a whole number >= 0 (got -1)")
      assert.strictEqual(yield* refused({ maxRestarts: 1.5 }), "Supervisor option maxRestarts must be a whole number >= 0 (got 1.5)")
    }))

  it.effect("a permanent child cannot be significant", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe
      const supervisor = yield* Supervisor.make({ autoShutdown: "any_significant" })
      const exit = yield* Effect.exit(supervisor.startChild({ ...probe.child("p"), significant: true }))
      assert.isTrue(Exit.isFailure(exit) && String(exit.cause).includes("Child p: a permanent child cannot be significant"))
    }))
})

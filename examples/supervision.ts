/**
 * Supervision, as in OTP: a supervisor starts its children and restarts one that exits, by its
 * restart type; past `maxRestarts` restarts within `period` it gives up, stops every child and
 * fails with `RestartIntensityExceeded`, for its own parent to handle. `Sessions` supervises
 * sessions the same way (`restart: "transient"`). docs/sessions.md#supervision
 */
import { Supervisor } from "@condukt/core"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Deferred, Effect, Ref } from "effect"

// A worker that crashes on its first two starts, then stays up.
const flaky = Effect.gen(function*() {
  const starts = yield* Ref.make(0)
  const up = yield* Deferred.make<void>()
  const supervisor = yield* Supervisor.make({ strategy: "one_for_one", maxRestarts: 3, period: "1 minute" })
  yield* supervisor.startChild({
    id: "worker",
    start: Ref.updateAndGet(starts, (n) => n + 1),
    run: (start: number) =>
      start < 3
        ? Effect.andThen(Console.log(`worker: start ${start}, crashing`), Effect.fail("lost its connection"))
        : Effect.andThen(Console.log(`worker: start ${start}, up`), Effect.andThen(Deferred.succeed(up, undefined), Effect.never)),
    restart: "permanent"
  })
  yield* Deferred.await(up)
  const [worker] = yield* supervisor.children
  yield* Console.log(`supervisor: ${worker!.id} running after ${worker!.starts} starts`)
}).pipe(Effect.scoped)

// A worker that always crashes: the supervisor gives up after its third restart.
const hopeless = Effect.gen(function*() {
  const supervisor = yield* Supervisor.make({ maxRestarts: 3, period: "1 minute" })
  yield* supervisor.startChild({ id: "importer", start: Effect.void, run: () => Effect.fail("bad input") })
  const error = yield* Effect.flip(supervisor.join)
  yield* Console.log(`supervisor: ${error.message}`)
}).pipe(Effect.scoped)

NodeRuntime.runMain(Effect.andThen(flaky, hopeless))

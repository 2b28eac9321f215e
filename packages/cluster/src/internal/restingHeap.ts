/**
 * A runner's heap at rest: while no session is active on this process, V8 optimizes for size, so
 * the heap pages its busiest moment used go back to the system (issue 43, ADR 0098).
 *
 * V8 keeps the pages its heap no longer uses in a pool instead of unmapping them; its memory
 * reducer, which gives them back, runs only when the allocation rate is low or the isolate
 * optimizes for memory, and a runner's polls (the runner list, the shard locks, the liveness
 * locks) keep the rate over its threshold even with no session active. So a runner at rest kept
 * the RSS of its busiest moment: 358–485 MB after 127,000 sessions a runner, where its live heap
 * was 60 MB. With V8's `optimize_for_size` set the reducer runs its GCs about 8 s after the last
 * full one and the pool goes (3,000 sessions on one runner: 376 MB as its last one passivated,
 * 144 MB 25 s later). It also makes the compilers favour size, so it is set only while the runner
 * has no active session and cleared at the first one again. A process started with
 * `--optimize-for-size` keeps it throughout.
 */
import { Effect, Layer, Metric, Schedule } from "effect"
import { ClusterMetrics } from "effect/cluster"
import * as v8 from "node:v8"

/** How often the sessions active on this process are looked at. */
const EVERY = "1 second"

const FLAG = "--optimize-for-size"

/** Whether the process was started optimizing for size (then it is left as it is). */
const startedForSize = () => process.execArgv.includes(FLAG) || (process.env["NODE_OPTIONS"] ?? "").split(/\s+/).includes(FLAG)

/** The sessions active on this process (effect/cluster's gauge of its entities). */
const sessions = Metric.withAttributes(ClusterMetrics.entities, { type: "Session" })

/**
 * Sets a flag with `set` (V8's `optimize_for_size` on or off) whenever this process's sessions go
 * from some active to none and back, for the layer's life (cleared at its end).
 */
export const make = (set: (flag: string) => void): Layer.Layer<never> =>
  Layer.effectDiscard(Effect.gen(function*() {
    if (startedForSize()) return
    let resting = false
    const rest = (now: boolean) =>
      Effect.sync(() => {
        if (now === resting) return
        resting = now
        set(now ? FLAG : "--no-optimize-for-size")
      })
    yield* Effect.addFinalizer(() => rest(false))
    yield* Metric.value(sessions).pipe(
      Effect.flatMap((state) => rest(Number(state.value) === 0)),
      Effect.repeat(Schedule.spaced(EVERY)),
      Effect.forkScoped
    )
  }))

/** V8's `optimize_for_size` set while no session is active on this process. */
export const layer: Layer.Layer<never> = make((flag) => v8.setFlagsFromString(flag))

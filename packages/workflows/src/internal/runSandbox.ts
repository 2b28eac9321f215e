/**
 * runSandbox — the sandbox a run builds when the caller gives none: LocalSandbox, or a
 * VirtualSandbox on worker threads of the run's own (docs/decisions/0100).
 *
 * A run's steps share its sandbox, and its agents stream their models' answers on the same thread.
 * just-bash runs a script on the thread that calls it without ever yielding it, so one step's
 * CPU-bound command (`sed` over a big file, a loop under raised limits) on the run's thread would
 * stop every other step, every model stream and the event loop until it ended. The run's virtual
 * sandbox therefore runs its commands on a `WorkerPool` (ADR 0093) sized by the run's concurrency,
 * whose workers end with the run's scope; `workers: false` keeps them on the run's thread, and a
 * pool of the caller's (a server running many runs) serves them instead.
 *
 * Both of sandbox-virtual's entries are loaded by the runs that ask for them: the shell
 * interpreter and the worker threads are no part of a check or a local run.
 */
import type { ProcessBudget, Sandbox } from "@condukt/core"
import { LocalSandbox } from "@condukt/node"
import { Effect, type FileSystem, Layer, type Path } from "effect"
import type { VirtualSandbox } from "@condukt/sandbox-virtual"
import type * as WorkerPool from "@condukt/sandbox-virtual/WorkerPool"

/** The virtual sandbox a run builds (`RunEngine.Options.virtual`). */
export interface VirtualOptions {
  /** Workers of the run's own pool (1–16), `false` for none, or a pool to share that the run does not close. */
  readonly workers?: number | false | WorkerPool.WorkerPool | undefined
  /** just-bash's limits for the run's commands, but the output limit (the cmd steps' `max_output_bytes`). */
  readonly limits?: Omit<VirtualSandbox.Limits, "maxOutputBytes"> | undefined
}

/** Workers at most, whatever the run's concurrency (WorkerPool's own default). */
export const MAX_WORKERS = 16

/**
 * Workers of the pool a run's virtual sandbox gets unless told: one per leaf step the run runs at
 * once (`concurrency`), so a short command never waits behind another step's long one; at most
 * `MAX_WORKERS`. Not the cores: a spinning worker drops to the lowest priority (ADR 0093), and a
 * worker more than the cores costs memory, not time.
 */
export const defaultWorkers = (concurrency: number): number => Math.min(Math.max(Math.floor(concurrency), 1), MAX_WORKERS)

/**
 * The layer of the sandbox the run's options and the document's runtime block chose, collecting
 * `maxOutputBytes` a command; `concurrency` is the run's (leaf steps at once).
 */
export const layer = (
  choice: "local" | "virtual" | Layer.Layer<Sandbox.Sandbox, Sandbox.SandboxError>,
  cwd: string | undefined,
  maxOutputBytes: number | undefined,
  virtual: VirtualOptions | undefined,
  concurrency: number
): Layer.Layer<Sandbox.Sandbox, Sandbox.SandboxError, FileSystem.FileSystem | Path.Path | ProcessBudget.ProcessBudget> => {
  if (typeof choice !== "string") return choice
  if (choice === "local") return LocalSandbox.layer({ cwd, maxOutputBytes })
  const given = virtual?.workers
  const limits = { ...virtual?.limits, maxOutputBytes }
  return Layer.unwrap(Effect.gen(function*() {
    const { VirtualSandbox } = yield* Effect.promise(() => import("@condukt/sandbox-virtual"))
    if (given === false) return VirtualSandbox.layer({ cwd, limits })
    // The caller's pool (a server's, shared by its runs) outlives the run.
    if (typeof given === "object") return VirtualSandbox.layer({ cwd, limits, workers: given })
    const workers = defaultWorkers(given ?? concurrency)
    const WorkerPool = yield* Effect.promise(() => import("@condukt/sandbox-virtual/WorkerPool"))
    // In the layer's scope, so the run's: the sandbox closes first, then every worker ends.
    const pool = yield* WorkerPool.make({ maxWorkers: workers, warmWorkers: 1 })
    return VirtualSandbox.layer({ cwd, limits, workers: pool })
  }))
}

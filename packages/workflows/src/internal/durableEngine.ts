/**
 * durableEngine — the part of `Durable.run` on `effect/workflow` and `effect/cluster` (ADR 0066),
 * loaded only when a durable run starts: the run as a workflow of its own (`condukt/<runId>`) on
 * an embedded `SingleRunner` over the current SqlClient, and the `RunJournal` whose two activities
 * per leaf step record it. The run's row is checked before this module loads (`Durable`).
 */
import { Cause, type Context, Duration, Effect, Exit, Fiber, FiberSet, type FileSystem, Layer, type Path, References, Schema } from "effect"
import { ClusterWorkflowEngine, SingleRunner } from "effect/cluster"
import { Digest } from "effect/crypto"
import type { SqlClient } from "effect/sql"
import { Activity, Workflow, type WorkflowEngine } from "effect/workflow"
import type { ProcessBudget } from "@condukt/core"
import type * as Document from "../Document.ts"
import * as RunEngine from "../RunEngine.ts"
import type * as Expression from "../Expression.ts"
import type { RunJournal } from "../RunJournal.ts"
import { DurableFailed, WorkflowFailed } from "../WorkflowError.ts"
import * as DurableRetry from "./durableRetry.ts"

/**
 * The single runner's timings: a message of another run's workflow (registered by no process
 * here) is left waiting for its own process, never answered as unregistered; replies are polled
 * often, since the caller waits on its own run's.
 */
const SHARDING = {
  entityRegistrationTimeout: Duration.infinity,
  entityReplyPollInterval: Duration.millis(20),
  entityMessagePollInterval: Duration.seconds(1),
  // What the runner waits, as it closes, for a step interrupted by Ctrl-C to answer (it never does).
  entityTerminationTimeout: Duration.millis(100)
} as const

const RunResult = Schema.Struct({
  output: Schema.Json,
  steps: Schema.Record(Schema.String, Schema.Json),
  skipped: Schema.Array(Schema.String)
})

/**
 * A journal on the current workflow execution: each step is two activities, `<id>/started`
 * (recorded as the step begins) and `<id>` (its output or failure, recorded as it ends), both of
 * the step's attempt (`attempts`, 1 when absent; a retried run's failed steps run as their next).
 * Which of them run now tells a step replayed (neither), restarted (only the second) or new (both).
 */
const journal = (
  context: Context.Context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance>,
  steps: FiberSet.FiberSet<Expression.Value, WorkflowFailed>,
  attempts: ReadonlyMap<string, number>
): RunJournal => ({
  step: (id, run) =>
    Effect.gen(function*() {
      let started = false
      let ran = false
      yield* Activity.make({ name: `${id}/started`, execute: Effect.sync(() => void (started = true)) })
      const value = yield* Activity.make({
        name: id,
        success: Schema.Json,
        error: WorkflowFailed,
        // The engine runs an activity uninterruptibly: the step runs in the run's own set of
        // fibers, which an interrupted run (Ctrl-C) interrupts before the runner closes, so its
        // processes end. A step interrupted so never answers: nothing is recorded, and the run's
        // next process runs it again.
        execute: Effect.gen(function*() {
          ran = true
          const exit = yield* Fiber.await(yield* FiberSet.run(steps)(Effect.interruptible(run(!started))))
          if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.never
          return yield* exit
        })
      })
      // Schema.Json's values are Expression's: null, booleans, numbers, strings, lists and maps.
      return { value: value as Expression.Value, replayed: !ran }
    }).pipe(Effect.provideService(Activity.CurrentAttempt, attempts.get(id) ?? 1), Effect.provideContext(context))
})

/** A failed run given again: its attempt and the steps that run again (re-exported as `Durable.Retry`). */
export type Retry = DurableRetry.Retry

/** What `Durable.run` is given (re-exported there as `Durable.Options`). */
export interface Options extends Omit<RunEngine.Options, "journal"> {
  /** The run: a new one's id (see `newRunId`), or the id of one to resume. */
  readonly runId: string
  /** Resume `runId` (it must be recorded) rather than start it (it must not be). */
  readonly resume: boolean
  /** The database as errors name it (a file, a URL without its password). */
  readonly location: string
  /** The workflow file as errors name it. */
  readonly file: string
  /** Told once a new run is recorded, before its first step: where the CLI prints the run's id. */
  readonly onRecorded?: Effect.Effect<void> | undefined
  /**
   * Told once a run that failed, given again, is recorded as retried (ADR 0084), before its first
   * step: the run's attempt and the steps that failed and run again.
   */
  readonly onRetried?: ((retry: Retry) => Effect.Effect<void>) | undefined
  /**
   * Who runs the run, as the lease names it to another process refused the same id (the CLI
   * gives its pid and host); unnamed by default.
   */
  readonly holder?: { readonly pid: number; readonly host: string } | undefined
  /**
   * How long the run's lease lasts unrenewed (60 s by default, 1 s at least; renewed every
   * quarter of it while the run is live): how long a run whose process died without releasing it
   * stays refused.
   */
  readonly lease?: Duration.Input | undefined
}

/** Runs `document` as the workflow of run `options.runId`, each leaf step journaled; `options.inputs` are the run's recorded ones. */
export const execute = (
  document: Document.Document,
  options: Options
): Effect.Effect<
  RunEngine.RunResult,
  WorkflowFailed | DurableFailed,
  SqlClient.SqlClient | FileSystem.FileSystem | Path.Path | ProcessBudget.ProcessBudget
> =>
  Effect.gen(function*() {
    const steps = yield* FiberSet.make<Expression.Value, WorkflowFailed>()
    const definition = Workflow.make(`condukt/${options.runId}`, {
      payload: { runId: Schema.String },
      success: RunResult,
      error: WorkflowFailed,
      idempotencyKey: ({ runId }) => runId
    })
    // The records an earlier process left are read before the runner starts (it would replay
    // them at once): one that cannot be read refuses the run, naming it; a failed run is retried.
    const plan = options.resume ? yield* DurableRetry.prepare(options.runId, options.location, RunResult) : undefined
    if (plan?.retry !== undefined && options.onRetried !== undefined) yield* options.onRetried(plan.retry)
    const attempts = plan?.attempts ?? new Map<string, number>()
    const handler = definition.toLayer(() =>
      Effect.gen(function*() {
        const context = yield* Effect.context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance>()
        return yield* RunEngine.run(document, { ...options, journal: journal(context, steps, attempts) })
      })
    )
    const engine = handler.pipe(
      Layer.provideMerge(ClusterWorkflowEngine.layer),
      Layer.provideMerge(SingleRunner.layer({ runnerStorage: "memory", shardingConfig: SHARDING })),
      Layer.provide(Digest.layerWebCrypto)
    )
    const result = yield* definition.execute({ runId: options.runId }).pipe(
      // Interrupted (Ctrl-C): the steps first, while the runner still stands.
      Effect.onInterrupt(() => FiberSet.clear(steps)),
      Effect.provide(engine),
      // ShardingConfig reads the environment: a variable that does not parse fails the runner.
      Effect.catchTag("ConfigError", (error) =>
        Effect.fail(
          new DurableFailed({
            reason: "StoreUnavailable",
            runId: options.runId,
            location: options.location,
            description: `the embedded runner could not start: ${error.message}`,
            cause: error
          })
        ))
    )
    // Schema.Json's values are Expression's, and RunResult's fields are the run engine's.
    return result as RunEngine.RunResult
  }).pipe(Effect.scoped, Effect.provideService(References.MinimumLogLevel, "None"))

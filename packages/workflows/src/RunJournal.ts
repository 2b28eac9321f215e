/**
 * RunJournal — what a run that outlives its process asks of whoever records its steps: run a leaf
 * step (cmd, http, tool, agent) unless its output was recorded before, and say which happened.
 * (Not core's `Journal`, a session's record of call starts.) The run engine stays the same run
 * with or without one; `Durable` gives it a journal on
 * `effect/workflow` activities. A journal records finished steps only: a step that had started but
 * not finished when the process died runs again, and is told so (`restarted`), so its progress
 * says it. It refuses nothing itself: the steps' failures are the run's.
 */
import type { Effect } from "effect"
import type * as Expression from "./Expression.ts"
import type { WorkflowFailed } from "./WorkflowError.ts"

/**
 * A leaf step's outcome through a journal: its output, and whether it was recorded by an earlier
 * process of the same run (`replayed`: the step did not run now).
 *
 * @since 0.1.0
 * @category models
 */
export interface Entry {
  readonly value: Expression.Value
  readonly replayed: boolean
}

/**
 * Runs leaf steps once across restarts of the same run.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunJournal {
  /**
   * The output of step `id`: the recorded one, else `run`'s, recorded once it succeeds. `run` is
   * told whether an earlier process started the step and died before it finished.
   */
  readonly step: (
    id: string,
    run: (restarted: boolean) => Effect.Effect<Expression.Value, WorkflowFailed>
  ) => Effect.Effect<Entry, WorkflowFailed>
}

/**
 * Progress — how a run shows on a terminal: a line on stderr as each step becomes pending,
 * starts, finishes, is skipped or fails, with durations; or, with `--json`, every event as one
 * JSON object per line on stdout. Only rendering: the executor decides what happened.
 */
import type { WorkflowEvent } from "@condukt/workflows"

const seconds = (ms: number) => (ms < 1000 ? `${Math.round(ms)}ms` : `${(ms / 1000).toFixed(1)}s`)

/**
 * The stderr line for an event (a TTY's live progress).
 *
 * @since 0.1.0
 * @category combinators
 */
export const line = (event: WorkflowEvent.WorkflowEvent): string => {
  switch (event._tag) {
    case "RunStarted":
      return `${event.workflow}: ${event.steps.length} steps pending (${event.steps.join(", ")})`
    case "StepStarted":
      return `  ▸ ${event.step} running`
    case "StepFinished":
      return `  ✓ ${event.step} done in ${seconds(event.durationMs)}`
    case "StepSkipped":
      return `  - ${event.step} skipped (${event.why})`
    case "StepFailed":
      return `  ✗ ${event.step} failed after ${seconds(event.durationMs)}: ${event.error}`
    case "RunFinished":
      return `${event.ok ? "finished" : "failed"} in ${seconds(event.durationMs)}`
  }
}

/**
 * The stdout line for an event under `--json`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const json = (event: WorkflowEvent.WorkflowEvent): string => JSON.stringify(event)

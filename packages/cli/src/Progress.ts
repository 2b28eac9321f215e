/**
 * Progress — how a run shows while it goes: a line on stderr as each step becomes pending,
 * starts, finishes, is skipped or fails, with durations (in a durable run resumed after a restart,
 * whether the step was done before it or runs again), and inside an agent step a line per model
 * turn (with the tokens so far), per tool call as it starts and ends, and per call that waits for approval; or, with `--json`, every
 * event as one JSON object per line on stdout. On a terminal the lines carry marks (▸ ✓ ✗);
 * elsewhere (a pipe, a CI log) they are plain text. Only rendering: the executor decides what happened.
 */
import type { WorkflowEvent } from "@condukt/workflows"

/** The most of a call's input a line quotes. */
const MAX_INPUT_CHARS = 200

/** A call's input on one line: its JSON, cut with an ellipsis past `MAX_INPUT_CHARS`. */
export const quote = (input: unknown): string => {
  const text = JSON.stringify(input) ?? "null"
  return text.length <= MAX_INPUT_CHARS ? text : `${text.slice(0, MAX_INPUT_CHARS)}…`
}

/**
 * How lines look: `tty` with marks, `plain` without (a log file or a CI console).
 *
 * @since 0.1.0
 * @category models
 */
export type Style = "tty" | "plain"

const MARKS = {
  tty: { running: "▸ ", done: "✓ ", skipped: "- ", failed: "✗ ", waiting: "? " },
  plain: { running: "", done: "", skipped: "", failed: "", waiting: "" }
} as const

const seconds = (ms: number) => (ms < 1000 ? `${Math.round(ms)}ms` : `${(ms / 1000).toFixed(1)}s`)

/**
 * The stderr line for an event.
 *
 * @since 0.1.0
 * @category combinators
 */
export const line = (event: WorkflowEvent.WorkflowEvent, style: Style): string => {
  const mark = MARKS[style]
  switch (event._tag) {
    case "RunStarted":
      return `${event.workflow}: ${event.steps.length} steps pending (${event.steps.join(", ")})`
    case "StepStarted":
      return event.restarted === true
        ? `  ${mark.running}${event.step} running again: it started before the restart and did not finish`
        : `  ${mark.running}${event.step} running`
    case "TurnStarted":
      return `    ${event.step}: turn ${event.turn}`
    case "TurnFinished":
      return `    ${event.step}: turn ${event.turn} done, ${event.tokensSoFar} tokens so far`
    case "ToolStarted":
      return `    ${event.step}: ${mark.running}${event.tool} ${event.callId} running`
    case "ToolFinished":
      return event.ok
        ? `    ${event.step}: ${mark.done}${event.tool} ${event.callId} done in ${seconds(event.durationMs)}`
        : `    ${event.step}: ${mark.failed}${event.tool} ${event.callId} answered an error after ${seconds(event.durationMs)}`
    case "ApprovalRequested":
      return `    ${event.step}: ${mark.waiting}${event.tool} ${event.callId} waits for approval: ${quote(event.input)}`
    case "StepFinished":
      return event.resumed === true
        ? `  ${mark.done}${event.step} done before the restart, not run again`
        : `  ${mark.done}${event.step} done in ${seconds(event.durationMs)}`
    case "StepSkipped":
      return `  ${mark.skipped}${event.step} skipped (${event.why})`
    case "StepFailed":
      return `  ${mark.failed}${event.step} failed after ${seconds(event.durationMs)}: ${event.error}`
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

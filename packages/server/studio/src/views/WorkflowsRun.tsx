/**
 * WorkflowsRun — one workflow run (`#/workflows/<name>/<runId>`): its outcome, its inputs, each
 * step's state (with its output once the run has finished, why it was
 * skipped, or its error) and the workflow's output or error. Read again every second while the
 * run is going; it stops reading once the run has ended. The steps come in the order the server
 * gives them.
 */
import { useEffect, useState } from "preact/hooks"
import { announce } from "../announce.ts"
import { ApiError, type Client } from "../client.ts"
import { bounded, json } from "../format.ts"
import { href } from "../route.ts"
import type { RunView, StepView } from "../types.ts"

/** How often a running run is read again. */
const POLL_MS = 1000

/** The most characters of an output shown. */
const MAX_OUTPUT_SHOWN = 20_000

/** The most steps listed (a `map` step's items included). */
const MAX_STEPS_SHOWN = 1000

const STATE_BADGE: Record<StepView["state"] | RunView["outcome"], string> = {
  pending: "badge",
  running: "badge badge-accent",
  finished: "badge badge-ok",
  succeeded: "badge badge-ok",
  skipped: "badge badge-warn",
  failed: "badge badge-danger"
}

/** A state or outcome as a badge. */
export function StateBadge(props: { state: StepView["state"] | RunView["outcome"]; testid: string }) {
  return <span class={STATE_BADGE[props.state]} data-testid={props.testid}>{props.state}</span>
}

/** The run's steps in the order the server gives them, bounded. */
const stepsOf = (run: RunView): Array<[string, StepView]> => Object.entries(run.steps).slice(0, MAX_STEPS_SHOWN)

function Step(props: { name: string; step: StepView }) {
  const { name, step } = props
  return (
    <li class="wf-step" data-testid="wf-step" data-step={name}>
      <div class="wf-step-head">
        <span class="wf-step-name mono" data-testid="wf-step-name">{name}</span>
        <StateBadge state={step.state} testid="wf-step-state" />
        {step.resumed === true ? <span class="badge">resumed</span> : null}
        {step.restarted === true ? <span class="badge">restarted</span> : null}
      </div>
      {step.why === undefined ? null : <p class="muted" data-testid="wf-step-why">Skipped: {bounded(step.why, 2000)}</p>}
      {step.error === undefined ? null : <p class="error" data-testid="wf-step-error">{bounded(step.error, 4000)}</p>}
      {step.output === undefined ? null : (
        <pre data-testid="wf-step-output" tabIndex={0} aria-label={`Output of step ${name}`}>{json(step.output, MAX_OUTPUT_SHOWN)}</pre>
      )}
    </li>
  )
}

export function RunPage(props: { client: Client; workflow: string; runId: string }) {
  const [run, setRun] = useState<RunView | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)

  useEffect(() => {
    let live = true
    let timer: ReturnType<typeof setTimeout> | undefined
    let seen: RunView["outcome"] | undefined
    const load = () => {
      props.client.workflowRun(props.workflow, props.runId).then(
        (found) => {
          if (!live) return
          setRun(found)
          setError(undefined)
          if (seen === "running" && found.outcome !== "running") announce(`Run ${found.runId} ${found.outcome}.`)
          seen = found.outcome
          if (found.outcome === "running") timer = setTimeout(load, POLL_MS)
        },
        (cause: unknown) => {
          if (!live) return
          const gone = cause instanceof ApiError && cause.status === 404
          setError(cause instanceof ApiError ? (gone ? "There is no such run of yours here." : cause.message) : `The server could not be reached: ${String(cause)}`)
          if (!gone) timer = setTimeout(load, POLL_MS)
        }
      )
    }
    load()
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [props.client, props.workflow, props.runId])

  return (
    <section aria-labelledby="wf-run-title" data-testid="wf-run" data-run-id={props.runId}>
      <p><a href={href("workflows", props.workflow)}>← {props.workflow}</a></p>
      <h1 id="wf-run-title">Run <span class="mono">{props.runId}</span></h1>
      {error === undefined ? null : <p role="alert" class="error" data-testid="wf-run-error">{error}</p>}
      {run === undefined ? (error === undefined ? <p class="muted">Loading…</p> : null) : (
        <>
          <p>
            Outcome: <StateBadge state={run.outcome} testid="wf-run-outcome" />
            {run.durable ? <span class="badge wf-durable">durable</span> : null}
          </p>
          <div class="card">
            <h2>Inputs</h2>
            <pre data-testid="wf-run-inputs" tabIndex={0} aria-label="Inputs of the run">{json(run.inputs, MAX_OUTPUT_SHOWN)}</pre>
          </div>
          <div class="card">
            <h2>Steps</h2>
            <ol class="wf-steps" data-testid="wf-steps">
              {stepsOf(run).map(([name, step]) => <Step key={name} name={name} step={step} />)}
            </ol>
          </div>
          {run.output === undefined ? null : (
            <div class="card">
              <h2>Output</h2>
              <pre data-testid="wf-run-output" tabIndex={0} aria-label="Output of the run">{json(run.output, MAX_OUTPUT_SHOWN)}</pre>
            </div>
          )}
          {run.error === undefined ? null : <p class="error" role="alert" data-testid="wf-run-failure">{bounded(run.error, 4000)}</p>}
        </>
      )}
    </section>
  )
}

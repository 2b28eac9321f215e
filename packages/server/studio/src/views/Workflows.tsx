/**
 * Workflows — the workflows this server runs (`#/workflows`), one workflow's page
 * (`#/workflows/<name>`: its steps, the "Start run" form built from its inputs, and the
 * principal's runs of it, newest first, read again every 2 s) and one run
 * (`#/workflows/<name>/<runId>`, WorkflowsRun). A server that serves no workflows says so.
 */
import { useEffect, useState } from "preact/hooks"
import { announce } from "../announce.ts"
import { ApiError, type Client } from "../client.ts"
import * as format from "../format.ts"
import { poll } from "../poll.ts"
import { href } from "../route.ts"
import type { RunView, WorkflowView } from "../types.ts"
import { StartForm } from "./WorkflowsForm.tsx"
import { RunPage, StateBadge } from "./WorkflowsRun.tsx"
import "./Workflows.css"

/** How often a workflow's runs are read again. */
const REFRESH_MS = 2000

/** The most runs listed. */
const MAX_RUNS_SHOWN = 200

const errorText = (cause: unknown): string =>
  cause instanceof ApiError
    ? cause.status === 404 && cause.message.includes("no workflows") ? "This server serves no workflows." : cause.message
    : `The server could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`

/** The served workflows, read once per visit. */
const useWorkflows = (client: Client): { workflows: ReadonlyArray<WorkflowView> | undefined; error: string | undefined } => {
  const [workflows, setWorkflows] = useState<ReadonlyArray<WorkflowView> | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  useEffect(() => {
    let live = true
    client.workflows().then(
      (answer) => live && setWorkflows(answer.workflows),
      (cause: unknown) => live && setError(errorText(cause))
    )
    return () => void (live = false)
  }, [client])
  return { workflows, error }
}

function WorkflowList(props: { workflows: ReadonlyArray<WorkflowView> }) {
  if (props.workflows.length === 0) return <p class="muted" data-testid="wf-empty">This server serves no workflows.</p>
  return (
    <table class="table" data-testid="wf-list">
      <caption class="sr-only">Workflows served</caption>
      <thead>
        <tr><th scope="col">Workflow</th><th scope="col">Inputs</th><th scope="col">Steps</th></tr>
      </thead>
      <tbody>
        {props.workflows.map((workflow) => (
          <tr key={workflow.name} data-testid="wf-row" data-name={workflow.name}>
            <td><a href={href("workflows", workflow.name)} data-testid="wf-link">{workflow.name}</a></td>
            <td class="mono">{Object.keys(workflow.inputs).join(", ") || "—"}</td>
            <td class="mono">{workflow.steps.join(", ")}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

/** The principal's runs of `name`, newest first, read again every 2 s. */
function Runs(props: { client: Client; name: string; tick: number }) {
  const [runs, setRuns] = useState<ReadonlyArray<RunView> | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  useEffect(() =>
    poll(
      () => props.client.workflowRuns(props.name),
      (answer) => {
        setRuns(answer.runs)
        setError(undefined)
      },
      (cause) => setError(errorText(cause)),
      REFRESH_MS
    ), [props.client, props.name, props.tick])

  return (
    <section class="card" aria-labelledby="wf-runs-title" data-testid="wf-runs">
      <h2 id="wf-runs-title">Runs</h2>
      {error === undefined ? null : <p role="alert" class="error" data-testid="wf-runs-error">{error}</p>}
      {runs === undefined ? (error === undefined ? <p class="muted">Loading…</p> : null) : runs.length === 0 ? <p class="muted" data-testid="wf-runs-empty">No run of yours yet.</p> : (
        <table class="table">
          <caption class="sr-only">Runs of {props.name}, newest first</caption>
          <thead>
            <tr><th scope="col">Run</th><th scope="col">Started</th><th scope="col">State</th><th scope="col">Steps finished</th></tr>
          </thead>
          <tbody>
            {runs.slice(0, MAX_RUNS_SHOWN).map((run) => {
              const steps = Object.values(run.steps)
              return (
                <tr key={run.runId} data-testid="wf-run-row" data-run-id={run.runId}>
                  <td><a class="mono" href={href("workflows", props.name, run.runId)} data-testid="wf-run-link">{run.runId}</a></td>
                  <td data-testid="wf-run-started">{run.startedAt === undefined ? "—" : format.time(run.startedAt)}</td>
                  <td><StateBadge state={run.outcome} testid="wf-run-row-outcome" /></td>
                  <td>{steps.filter((step) => step.state === "finished").length} of {steps.length}</td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
    </section>
  )
}

function WorkflowPage(props: { client: Client; workflow: WorkflowView }) {
  const { workflow } = props
  const [tick, setTick] = useState(0)
  const onStarted = (runId: string) => {
    announce(`Started run ${runId} of ${workflow.name}.`)
    setTick((n) => n + 1)
    location.hash = href("workflows", workflow.name, runId)
  }
  return (
    <div data-testid="wf-page" data-name={workflow.name}>
      <p><a href={href("workflows")}>← Workflows</a></p>
      <h1>{workflow.name}</h1>
      <p class="muted">Steps: <span class="mono" data-testid="wf-steps-list">{workflow.steps.join(", ")}</span></p>
      <div class="wf-columns">
        <StartForm key={workflow.name} client={props.client} workflow={workflow} onStarted={onStarted} />
        <Runs client={props.client} name={workflow.name} tick={tick} />
      </div>
    </div>
  )
}

export function WorkflowsView(props: { client: Client; route: string[] }) {
  const { workflows, error } = useWorkflows(props.client)
  const [name, runId] = props.route
  if (error !== undefined) return <p role="alert" class="error" data-testid="wf-error">{error}</p>
  if (workflows === undefined) return <p class="muted">Loading…</p>
  if (name === undefined) {
    return (
      <section aria-labelledby="wf-title">
        <h1 id="wf-title">Workflows</h1>
        <WorkflowList workflows={workflows} />
      </section>
    )
  }
  const workflow = workflows.find((served) => served.name === name)
  if (workflow === undefined) return <p class="error" data-testid="wf-error">No workflow {JSON.stringify(name)} is served here. <a href={href("workflows")}>Workflows</a></p>
  return runId === undefined
    ? <WorkflowPage client={props.client} workflow={workflow} />
    : <RunPage client={props.client} workflow={workflow.name} runId={runId} />
}

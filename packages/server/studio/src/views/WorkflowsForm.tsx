/**
 * WorkflowsForm — the "Start run" form of a workflow, built from its inputs' declarations: a string
 * is a text field, an integer or a number a number field, a boolean a checkbox, an enum a select,
 * an array or an object JSON in a text area; defaults prefilled, the inputs without one marked
 * required. The values are turned back into JSON by their declared type before the start, so a
 * number is sent as a number; the server checks them against the declarations and says what is wrong.
 */
import { useState } from "preact/hooks"
import { ApiError, type Client } from "../client.ts"
import type { WorkflowInput, WorkflowView } from "../types.ts"

/** The longest value a field takes (a JSON input included). */
const MAX_VALUE_CHARS = 64 * 1024

/** A field's text from a JSON value (the default, or nothing). */
const textOf = (spec: WorkflowInput): string => {
  const value = spec.default
  if (value === undefined || value === null) return ""
  if (spec.enum !== undefined) return String(Math.max(0, spec.enum.findIndex((option) => JSON.stringify(option) === JSON.stringify(value))))
  if (typeof value === "string") return value
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  return JSON.stringify(value, null, 2)
}

/** What the form holds for each input: text, or a checkbox's state. */
type Values = Record<string, string | boolean>

const initial = (workflow: WorkflowView): Values =>
  Object.fromEntries(Object.entries(workflow.inputs).map(([name, spec]) => [name, spec.type === "boolean" && spec.enum === undefined ? spec.default === true : textOf(spec)]))

const required = (spec: WorkflowInput): boolean => spec.default === undefined

/** The inputs to send: each value as its declared type; an empty optional field left to its default. */
const inputsOf = (workflow: WorkflowView, values: Values): { inputs: Record<string, unknown> } | { error: string } => {
  const inputs: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(workflow.inputs)) {
    const value = values[name]
    if (typeof value === "boolean") {
      inputs[name] = value
      continue
    }
    const text = value ?? ""
    if (spec.enum !== undefined) {
      const chosen = spec.enum[Number(text)]
      if (chosen !== undefined) inputs[name] = chosen
      continue
    }
    if (text.trim() === "" && spec.type !== "string") {
      if (required(spec)) return { error: `${name} is required.` }
      continue
    }
    if (text === "" && !required(spec)) continue
    switch (spec.type) {
      case "integer":
      case "number": {
        const number = Number(text)
        if (!Number.isFinite(number)) return { error: `${name} is not a number.` }
        inputs[name] = number
        break
      }
      case "array":
      case "object":
        try {
          inputs[name] = JSON.parse(text)
        } catch {
          return { error: `${name} is not JSON.` }
        }
        break
      default:
        inputs[name] = text
    }
  }
  return { inputs }
}

function Field(props: { name: string; spec: WorkflowInput; value: string | boolean; onChange: (value: string | boolean) => void }) {
  const { name, spec } = props
  const id = `input-${name}`
  const hintId = `${id}-hint`
  const isRequired = required(spec)
  const described = spec.description === undefined ? undefined : hintId
  const caption = (
    <label for={id}>
      {name}
      {isRequired ? <span class="wf-required"> (required)</span> : null}
      <span class="muted wf-type"> {spec.type}</span>
    </label>
  )
  const hint = spec.description === undefined ? null : <span id={hintId} class="muted">{spec.description.slice(0, 500)}</span>
  if (typeof props.value === "boolean") {
    return (
      <div class="field wf-check">
        <span>
          <input id={id} type="checkbox" data-testid={`wf-input-${name}`} checked={props.value} aria-describedby={described} onChange={(event) => props.onChange(event.currentTarget.checked)} />
          {caption}
        </span>
        {hint}
      </div>
    )
  }
  const text = props.value
  const onInput = (event: { currentTarget: { value: string } }) => props.onChange(event.currentTarget.value)
  return (
    <div class="field">
      {caption}
      {spec.enum !== undefined
        ? (
          <select id={id} data-testid={`wf-input-${name}`} value={text} required={isRequired} aria-describedby={described} onChange={onInput}>
            {spec.enum.map((option, i) => <option key={i} value={String(i)}>{typeof option === "string" ? option : JSON.stringify(option)}</option>)}
          </select>
        )
        : spec.type === "integer" || spec.type === "number"
        ? <input id={id} type="number" step={spec.type === "integer" ? "1" : "any"} data-testid={`wf-input-${name}`} value={text} required={isRequired} aria-describedby={described} onInput={onInput} />
        : spec.type === "array" || spec.type === "object"
        ? <textarea id={id} rows={4} class="mono" data-testid={`wf-input-${name}`} maxLength={MAX_VALUE_CHARS} value={text} required={isRequired} aria-describedby={described} onInput={onInput} />
        : <input id={id} type="text" data-testid={`wf-input-${name}`} maxLength={MAX_VALUE_CHARS} value={text} required={isRequired} aria-describedby={described} onInput={onInput} />}
      {hint}
    </div>
  )
}

/** The form; `onStarted` gets the new run's id. */
export function StartForm(props: { client: Client; workflow: WorkflowView; onStarted: (runId: string) => void }) {
  const { workflow } = props
  const [values, setValues] = useState<Values>(() => initial(workflow))
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)

  const submit = (event: Event) => {
    event.preventDefault()
    const built = inputsOf(workflow, values)
    if ("error" in built) return setError(built.error)
    setBusy(true)
    setError(undefined)
    props.client.startWorkflow(workflow.name, built.inputs).then(
      (started) => {
        setBusy(false)
        props.onStarted(started.runId)
      },
      (cause: unknown) => {
        setBusy(false)
        setError(cause instanceof ApiError ? cause.message : `The server could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`)
      }
    )
  }

  const names = Object.keys(workflow.inputs)
  return (
    <form class="card" onSubmit={submit} data-testid="wf-start-form" aria-labelledby="wf-start-title">
      <h2 id="wf-start-title">Start run</h2>
      {names.length === 0 ? <p class="muted">This workflow takes no inputs.</p> : null}
      {names.map((name) => (
        <Field key={name} name={name} spec={workflow.inputs[name]!} value={values[name] ?? ""} onChange={(value) => setValues((before) => ({ ...before, [name]: value }))} />
      ))}
      {error === undefined ? null : <p role="alert" class="error" data-testid="wf-start-error">{error}</p>}
      <button type="submit" class="btn btn-primary" data-testid="wf-start" disabled={busy}>Start run</button>
    </form>
  )
}

/**
 * Timeline — one session's runs as they happen (`#/sessions/<id>`): each run's prompt, its turns
 * (text, the thinking folded away, tokens) and the tool calls each made (input, result, the
 * approval asked and how it was answered, the secrets handed over), a sub-agent's runs inside the
 * call that started it, errors; every turn and call a bar of a waterfall over the session's time
 * (from the events' `at`, Waterfall.tsx). It reads the events stream from the start and follows it live; the
 * tree is timeline.ts's, so a reload shows the same timeline, nothing twice.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks"
import { announce } from "../announce.ts"
import type { Client } from "../client.ts"
import * as format from "../format.ts"
import { href } from "../route.ts"
import * as T from "../timeline.ts"
import type { ApprovalRecord, SessionRow, StreamedEvent } from "../types.ts"
import { Waterfall } from "./Waterfall.tsx"

const took = (start: number, end: number | undefined): string => end === undefined ? "running" : format.duration(end - start)

/** Where an approval's record is found: a call id is only unique within its run. */
const answerKey = (sessionId: string, runId: string | undefined, callId: string): string => `${sessionId} ${runId ?? ""} ${callId}`

const answerOf = (answers: ReadonlyMap<string, ApprovalRecord>, run: T.Run, callId: string): ApprovalRecord | undefined =>
  answers.get(answerKey(run.sessionId, run.runId, callId)) ?? answers.get(answerKey(run.sessionId, undefined, callId))

function Answer(props: { record: ApprovalRecord | undefined }) {
  const record = props.record
  if (record === undefined || record.outcome === undefined) return <span class="badge badge-warn" data-testid="approval-outcome">waiting for an answer</span>
  const ok = record.outcome === "approved"
  return (
    <span data-testid="approval-outcome">
      <span class={`badge ${ok ? "badge-ok" : "badge-danger"}`}>{record.outcome}</span>
      {record.by === undefined ? null : <> by <strong>{record.by}</strong></>}
      {record.reason === undefined ? null : <>: {record.reason}</>}
    </span>
  )
}

function CallView(props: { run: T.Run; call: T.Call; answers: ReadonlyMap<string, ApprovalRecord>; depth: number }) {
  const { call } = props
  const state = T.callState(call)
  return (
    <li class="tl-call" data-testid="call" data-call-id={call.callId} data-tool={call.name} data-state={state}>
      <div class="tl-row">
        <div>
          <span class="tl-label">{call.name}</span>{" "}
          <span class={`badge ${state === "ok" ? "badge-ok" : state === "error" ? "badge-danger" : "badge-warn"}`} data-testid="call-state">{state}</span>{" "}
          <span class="tl-meta">{took(call.startedAt, call.endedAt)}</span>
        </div>
      </div>
      <details>
        <summary>Input</summary>
        <pre data-testid="call-input">{format.json(call.input)}</pre>
      </details>
      {call.approval === undefined ? null : (
        <p data-testid="approval">
          Asked for an approval{call.approval.summary === undefined ? "" : `: ${call.approval.summary}`} — <Answer record={answerOf(props.answers, props.run, call.callId)} />
        </p>
      )}
      {call.secrets.length === 0 ? null : <p class="tl-meta" data-testid="call-secrets">Secrets handed over: {call.secrets.join(", ")}</p>}
      {call.agents.length === 0 ? null : (
        <div data-testid="sub-agents">
          {call.agents.map((run) => <RunView key={run.key} run={run} answers={props.answers} depth={props.depth + 1} />)}
        </div>
      )}
      {call.result === undefined ? null : (
        <div>
          <span class={call.isError === true ? "tl-error" : "tl-label"}>{call.isError === true ? "Error" : "Result"}</span>
          <pre data-testid="call-result">{format.bounded(call.result)}</pre>
        </div>
      )}
    </li>
  )
}

function TurnView(props: { run: T.Run; turn: T.Turn; answers: ReadonlyMap<string, ApprovalRecord>; depth: number }) {
  const { turn } = props
  return (
    <li class="tl-turn" data-testid="turn" data-turn={turn.turn}>
      <div class="tl-row">
        <div>
          <span class="tl-label">Turn {turn.turn}</span>{" "}
          <span class="tl-meta">{took(turn.startedAt, turn.endedAt)}</span>
          {turn.usage === undefined ? null : <span class="tl-meta" data-testid="turn-tokens"> · {format.count(turn.usage.inputTokens)} in, {format.count(turn.usage.outputTokens)} out</span>}
          {turn.retries === 0 ? null : <span class="tl-meta"> · {turn.retries} retries</span>}
        </div>
      </div>
      {turn.thinking === "" ? null : (
        <details data-testid="thinking">
          <summary>Thinking</summary>
          <p class="tl-text">{format.bounded(turn.thinking)}</p>
        </details>
      )}
      {turn.text === "" ? null : <p class="tl-text" data-testid="turn-text">{format.bounded(turn.text)}</p>}
      {turn.calls.length === 0 ? null : (
        <ul class="plain" aria-label={`Tool calls of turn ${turn.turn}`}>
          {turn.calls.map((call) => <CallView key={call.callId} run={props.run} call={call} answers={props.answers} depth={props.depth} />)}
        </ul>
      )}
    </li>
  )
}

function RunView(props: { run: T.Run; answers: ReadonlyMap<string, ApprovalRecord>; depth: number }) {
  const { run } = props
  const agent = run.agentPath.at(-1)
  const Heading = props.depth === 0 ? "h2" : "h3"
  return (
    <section class={`tl-run${props.depth > 0 ? " sub" : ""}`} data-testid="run" data-run-id={run.runId} data-agent={run.agentPath.join("/")} data-outcome={run.outcome ?? "running"} aria-label={agent === undefined ? `Run ${run.runId}` : `Sub-agent ${agent}, run ${run.runId}`}>
      <Heading>
        {agent === undefined ? "Run" : `Sub-agent ${agent}`}{" "}
        <span class={`badge ${run.outcome === "completed" ? "badge-ok" : run.outcome === undefined ? "badge-accent" : "badge-danger"}`} data-testid="run-outcome">{run.outcome ?? "running"}</span>
      </Heading>
      <p class="tl-meta">{format.time(run.startedAt)} · {took(run.startedAt, run.endedAt)}</p>
      {run.prompt === "" ? null : <p class="tl-text" data-testid="run-prompt"><strong>Prompt:</strong> {format.bounded(run.prompt)}</p>}
      {run.turns.length === 0 ? null : (
        <ol class="plain" aria-label="Turns">
          {run.turns.map((turn, index) => <TurnView key={index} run={run} turn={turn} answers={props.answers} depth={props.depth} />)}
        </ol>
      )}
      {run.errors.map((error, index) => <p key={index} role="alert" class="tl-error" data-testid="run-error">Error: {format.bounded(error.message, 2000)}</p>)}
      {run.notes.map((note, index) => <p key={index} class="tl-meta" data-testid="run-note">{note}</p>)}
    </section>
  )
}

/** The sessions the timeline shows: the session's own and its sub-agents'. */
const sessionIds = (runs: ReadonlyArray<T.Run>, into: Set<string>): Set<string> => {
  for (const run of runs) {
    if (run.sessionId !== "") into.add(run.sessionId)
    for (const turn of run.turns) for (const call of turn.calls) sessionIds(call.agents, into)
  }
  return into
}

/** The most pages of approval records read looking for a timeline's answers. */
const MAX_APPROVAL_PAGES = 10

/** The approval records of `sessions`, by where they are found: the principal's records, page after page. */
const answersOf = async (client: Client, sessions: ReadonlySet<string>): Promise<Map<string, ApprovalRecord>> => {
  const found = new Map<string, ApprovalRecord>()
  let cursor: string | undefined
  for (let page = 0; page < MAX_APPROVAL_PAGES; page++) {
    const { records, next } = await client.approvals({ status: "all", limit: 1000, ...(cursor === undefined ? {} : { cursor }) })
    for (const record of records) {
      if (sessions.has(record.sessionId)) found.set(answerKey(record.sessionId, record.runId, record.callId), record)
    }
    if (next === undefined || next === cursor) break
    cursor = next
  }
  return found
}

/** How many approvals the timeline shows: when it changes, their answers are read again. */
const approvalCount = (runs: ReadonlyArray<T.Run>): number =>
  runs.reduce((sum, run) => sum + run.turns.reduce((turns, turn) => turns + turn.calls.reduce((calls, call) => calls + (call.approval === undefined ? 0 : 1) + (call.endedAt === undefined ? 0 : 1) + approvalCount(call.agents), 0), 0), 0)

/** The most characters of a prompt (the server's `MAX_PROMPT_LENGTH`). */
const MAX_PROMPT_CHARS = 256 * 1024

/** A prompt box: runs the session on what is typed; the timeline shows the run as it goes. */
function PromptForm(props: { client: Client; id: string; running: boolean }) {
  const [prompt, setPrompt] = useState("")
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const submit = (event: Event) => {
    event.preventDefault()
    if (prompt.trim() === "" || busy) return
    setBusy(true)
    setError(undefined)
    const sent = prompt
    setPrompt("")
    props.client.run(props.id, sent).then(
      (outcome) => announce(`Run ${outcome.outcome}`),
      (cause: unknown) => {
        setPrompt(sent)
        setError(cause instanceof Error ? cause.message : String(cause))
      }
    ).finally(() => setBusy(false))
  }
  return (
    <form class="prompt-form card" onSubmit={submit} data-testid="prompt-form">
      <div class="field">
        <label for="prompt">Prompt</label>
        <textarea id="prompt" rows={2} maxLength={MAX_PROMPT_CHARS} data-testid="prompt" value={prompt} onInput={(event) => setPrompt(event.currentTarget.value)} />
      </div>
      <button type="submit" class="btn btn-primary" data-testid="run-prompt-submit" disabled={busy || props.running}>Run</button>
      {error === undefined ? null : <p role="alert" class="error" data-testid="prompt-error">{error}</p>}
    </form>
  )
}

export function TimelineView(props: { client: Client; id: string }) {
  const { client, id } = props
  const [session, setSession] = useState<SessionRow | undefined>(undefined)
  const [events, setEvents] = useState<StreamedEvent[]>([])
  const [error, setError] = useState<string | undefined>(undefined)
  const [answers, setAnswers] = useState<ReadonlyMap<string, ApprovalRecord>>(new Map())
  const pending = useRef<StreamedEvent[]>([])

  useEffect(() => {
    const abort = new AbortController()
    setEvents([])
    setError(undefined)
    client.session(id).then(setSession, (error: unknown) => setError(error instanceof Error ? error.message : String(error)))
    let frame = 0
    const flush = () => {
      frame = 0
      const batch = pending.current
      pending.current = []
      if (batch.length > 0) setEvents((events) => events.length >= T.MAX_EVENTS ? events : [...events, ...batch])
    }
    client.events(id, 0, (event) => {
      pending.current.push(event)
      if (frame === 0) frame = requestAnimationFrame(flush)
    }, abort.signal).catch((error: unknown) => {
      if (!abort.signal.aborted) setError(error instanceof Error ? error.message : String(error))
    })
    return () => {
      abort.abort()
      if (frame !== 0) cancelAnimationFrame(frame)
      pending.current = []
    }
  }, [client, id])

  const timeline = useMemo(() => T.build(events), [events])
  const running = timeline.runs.some((run) => run.outcome === undefined)
  const asked = approvalCount(timeline.runs)

  const ended = timeline.runs.filter((run) => run.outcome !== undefined).length

  // Read again when a run ends too: a call answered while the page is open shows its answer.
  useEffect(() => {
    if (asked === 0) return
    let live = true
    const sessions = sessionIds(timeline.runs, new Set())
    answersOf(client, sessions).then((records) => live && setAnswers(records), () => {})
    return () => void (live = false)
  }, [client, id, asked, ended])

  // A run that ends: said out loud, and the session's tokens and cost read again.
  useEffect(() => {
    const last = timeline.runs.at(-1)
    if (last?.outcome !== undefined) announce(`Run ${last.outcome}`)
    if (ended > 0) client.session(id).then(setSession, () => {})
  }, [client, id, ended])

  return (
    <section aria-labelledby="timeline-title" data-testid="timeline" data-events={timeline.events} data-running={String(running)}>
      <p><a href={href("sessions")}>← Sessions</a></p>
      <div class="tl-head">
        <h1 id="timeline-title">Session <span class="mono" data-testid="timeline-id">{id}</span></h1>
        {session === undefined ? null : (
          <>
            <span>Agent <strong data-testid="timeline-agent">{session.agent}</strong></span>
            <span class="muted">Started {format.time(session.createdAt)}</span>
            <span class="muted" data-testid="timeline-tokens">{format.count(format.tokens(session.usage))} tokens · {format.cost(session.cost)}</span>
          </>
        )}
        <span class="muted" data-testid="event-count">{format.count(timeline.events)} events</span>
      </div>
      {error === undefined ? null : <p role="alert" class="error" data-testid="timeline-error">{error}</p>}
      {timeline.truncated ? <p class="muted" data-testid="timeline-truncated">Some of this session's events are not shown: too many to draw, or not readable.</p> : null}
      {timeline.runs.length === 0 && error === undefined ? <p class="muted" data-testid="timeline-empty">No runs yet.</p> : null}
      {error === undefined ? <PromptForm client={client} id={id} running={running} /> : null}
      <Waterfall timeline={timeline} />
      {timeline.runs.map((run) => <RunView key={run.key} run={run} answers={answers} depth={0} />)}
    </section>
  )
}

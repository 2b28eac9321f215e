/**
 * timeline — a session's events as the tree the Timeline view draws: runs, each of turns (text,
 * thinking, tokens, when it started and ended) and the tool calls the turn made (input, result,
 * approval, secrets handed over), a sub-agent's runs nested under the call that started it
 * (`parentCallId`), errors where they happened.
 *
 * Pure: the same events give the same tree, whatever the order they were read in and however
 * often one was read (an event is taken once per SSE id), so a reload that reads the stream from
 * the start again shows what was shown. Sizes are bounded: text per turn, calls per turn, runs
 * and depth, each cut saying so.
 */
import type { StreamedEvent, Usage } from "./types.ts"

/** The most characters of a turn's text (or thinking) kept. */
export const MAX_TEXT_CHARS = 200_000
/** The most runs (a session's and its sub-agents') kept. */
export const MAX_RUNS = 2_000
/** The most events read: past it the timeline says it stopped. */
export const MAX_EVENTS = 200_000

export interface Approval {
  readonly requestedAt: number
  readonly summary?: string
  readonly details?: string
}

export interface Call {
  readonly callId: string
  readonly name: string
  readonly input: unknown
  readonly startedAt: number
  endedAt?: number
  result?: string
  isError?: boolean
  approval?: Approval
  secrets: string[]
  /** The runs of sub-agents this call started. */
  readonly agents: Run[]
}

export interface Turn {
  readonly turn: number
  readonly startedAt: number
  endedAt?: number
  text: string
  thinking: string
  usage?: Usage
  retries: number
  readonly calls: Call[]
}

export interface Failure {
  readonly message: string
  readonly at: number
}

export interface Run {
  /** `sessionId runId`: a sub-agent's run has its own session. */
  readonly key: string
  readonly sessionId: string
  readonly runId: string
  /** The agents from the top-level session's down to this one; empty for the session's own runs. */
  readonly agentPath: ReadonlyArray<string>
  prompt: string
  startedAt: number
  endedAt?: number
  outcome?: "completed" | "failed" | "aborted"
  readonly turns: Turn[]
  readonly errors: Failure[]
  /** What else happened in the run (MCP servers, compaction, elicitation), as sentences. */
  readonly notes: string[]
}

export interface Timeline {
  /** The session's own runs, oldest first, sub-agents inside their calls. */
  readonly runs: Run[]
  /** Events taken (duplicates not counted). */
  readonly events: number
  /** The highest SSE id taken. */
  readonly lastId: number
  /** The first and last `at` seen: the waterfall's span. */
  readonly from: number
  readonly to: number
  /** Whether something was left out: a bound reached, or an event not shaped as its tag says. */
  readonly truncated: boolean
}

const cut = (text: string, more: string): string => text.length >= MAX_TEXT_CHARS ? text : (text + more).slice(0, MAX_TEXT_CHARS)

/** The timeline of `events` (in any order, duplicates allowed): sorted by id, each id taken once. */
export const build = (events: ReadonlyArray<StreamedEvent>): Timeline => {
  const sorted = [...events].sort((a, b) => a.id - b.id)
  const runs: Run[] = []
  const byKey = new Map<string, Run>()
  /** The runs of each depth (0: the session's), newest last: where a sub-agent's parent call is looked for. */
  const byDepth: Run[][] = []
  let lastId = 0
  let taken = 0
  let from = Infinity
  let to = -Infinity
  let truncated = false
  let skipped = 0
  let orphans: Run | undefined

  const callIn = (run: Run, callId: string): Call | undefined => {
    for (let t = run.turns.length - 1; t >= 0; t--) {
      const call = run.turns[t]!.calls.find((call) => call.callId === callId)
      if (call !== undefined) return call
    }
    return undefined
  }

  /** The call that started a sub-agent's run: in the newest run one level up that has it. */
  const parentCall = (depth: number, callId: string | undefined): Call | undefined => {
    const parents = byDepth[depth - 1] ?? []
    for (let i = parents.length - 1; i >= 0; i--) {
      const run = parents[i]!
      if (callId !== undefined) {
        const call = callIn(run, callId)
        if (call !== undefined) return call
      } else {
        // No parentCallId (an older server): the newest call still waiting for its result.
        for (let t = run.turns.length - 1; t >= 0; t--) {
          const open = [...run.turns[t]!.calls].reverse().find((call) => call.endedAt === undefined)
          if (open !== undefined) return open
        }
      }
    }
    return undefined
  }

  const runOf = (event: StreamedEvent): Run | undefined => {
    const key = `${event.sessionId} ${event.runId}`
    const found = byKey.get(key)
    if (found !== undefined) return found
    if (byKey.size >= MAX_RUNS) {
      truncated = true
      return undefined
    }
    const agentPath = event.agentPath ?? []
    const depth = Math.max(0, agentPath.length - 1)
    const run: Run = { key, sessionId: event.sessionId, runId: event.runId, agentPath, prompt: "", startedAt: event.at, turns: [], errors: [], notes: [] }
    byKey.set(key, run)
    ;(byDepth[depth] ??= []).push(run)
    if (depth === 0) runs.push(run)
    else {
      const parent = parentCall(depth, event.parentCallId)
      if (parent !== undefined) parent.agents.push(run)
      else {
        // A sub-agent whose call is not (or no longer) in the stream: shown apart rather than lost.
        orphans ??= { key: "orphans", sessionId: "", runId: "", agentPath: [], prompt: "", startedAt: event.at, turns: [], errors: [], notes: ["sub-agent runs whose call is not in this stream"] }
        if (!runs.includes(orphans)) runs.push(orphans)
        const holder: Call = { callId: event.parentCallId ?? "", name: agentPath.at(-1) ?? "sub-agent", input: null, startedAt: event.at, secrets: [], agents: [run] }
        const turn: Turn = { turn: 0, startedAt: event.at, text: "", thinking: "", retries: 0, calls: [holder] }
        orphans.turns.push(turn)
      }
    }
    return run
  }

  const turnOf = (run: Run, at: number): Turn => {
    const last = run.turns.at(-1)
    if (last !== undefined) return last
    const turn: Turn = { turn: 0, startedAt: at, text: "", thinking: "", retries: 0, calls: [] }
    run.turns.push(turn)
    return turn
  }

  for (const event of sorted) {
    if (event.id <= lastId) continue
    lastId = event.id
    if (taken >= MAX_EVENTS) {
      truncated = true
      break
    }
    taken++
    from = Math.min(from, event.at)
    to = Math.max(to, event.at)
    if (event.runId === "") continue // between runs (an MCP server's news): no run to put it in
    try {
      apply(event)
    } catch {
      // An event not shaped as its tag says (a field missing): left out rather than the whole timeline.
      skipped++
    }
  }
  return { runs, events: taken, lastId, from: Number.isFinite(from) ? from : 0, to: Number.isFinite(to) ? to : 0, truncated: truncated || skipped > 0 }

  function apply(event: StreamedEvent): void {
    const run = runOf(event)
    if (run === undefined) return
    switch (event._tag) {
      case "AgentStart":
        run.prompt = event.prompt.slice(0, MAX_TEXT_CHARS)
        run.startedAt = event.at
        break
      case "TurnStart":
        run.turns.push({ turn: event.turn, startedAt: event.at, text: "", thinking: "", retries: 0, calls: [] })
        break
      case "ModelRetry":
        turnOf(run, event.at).retries++
        break
      case "TextDelta": {
        const turn = turnOf(run, event.at)
        turn.text = cut(turn.text, event.text)
        break
      }
      case "ThinkingDelta": {
        const turn = turnOf(run, event.at)
        turn.thinking = cut(turn.thinking, event.text)
        break
      }
      case "TurnEnd": {
        const turn = turnOf(run, event.at)
        turn.endedAt = event.at
        turn.usage = event.usage
        break
      }
      case "ToolCall":
        if (callIn(run, event.callId) === undefined) {
          turnOf(run, event.at).calls.push({ callId: event.callId, name: event.name, input: event.input, startedAt: event.at, secrets: [], agents: [] })
        }
        break
      case "ToolResult": {
        const call = callIn(run, event.callId)
        if (call === undefined) break
        call.endedAt = event.at
        call.result = event.content.slice(0, MAX_TEXT_CHARS)
        call.isError = event.isError
        break
      }
      case "SecretsUsed": {
        const call = callIn(run, event.callId)
        if (call !== undefined) call.secrets = [...event.secrets]
        break
      }
      case "ApprovalRequested": {
        const call = callIn(run, event.callId)
        const approval: Approval = {
          requestedAt: event.at,
          ...(event.summary === undefined ? {} : { summary: event.summary }),
          ...(event.details === undefined ? {} : { details: event.details })
        }
        if (call !== undefined) call.approval = approval
        else run.notes.push(`${event.tool} asked for an approval (${event.summary ?? "no summary"})`)
        break
      }
      case "ElicitationRequested":
        run.notes.push(`${event.server} asked: ${event.message.slice(0, 500)}`)
        break
      case "McpServerStarted":
        run.notes.push(`MCP server ${event.server} started (${event.transport}, ${event.tools} tools)`)
        break
      case "McpServerDown":
        run.notes.push(`MCP server ${event.server} went down: ${event.description.slice(0, 500)}`)
        break
      case "McpServerStopped":
        run.notes.push(
          event.reason === undefined
            ? `MCP server ${event.server} stopped`
            : `MCP server ${event.server} stopped for good: ${event.reason.server} was given up after ${event.reason.maxRestarts} restarts within ${event.reason.periodMs / 1000}s`
        )
        break
      case "Compacted":
        run.notes.push(`history compacted from ${event.before} to ${event.after} messages`)
        break
      case "StillWaiting":
        run.notes.push(`still waiting after ${Math.round(event.waitedMs / 1000)} s for an answer to ${event.calls.slice(0, 20).map((call) => `${call.tool} (${call.callId})`).join(", ")}`)
        break
      case "Error":
        run.errors.push({ message: event.message.slice(0, MAX_TEXT_CHARS), at: event.at })
        break
      case "AgentEnd":
        run.endedAt = event.at
        run.outcome = event.outcome
        // What the run left open ended with it: a turn cut short, a call that never had its result.
        for (const turn of run.turns) {
          turn.endedAt ??= event.at
          for (const call of turn.calls) {
            if (call.endedAt !== undefined) continue
            call.endedAt = event.at
            call.isError = true
          }
        }
        break
    }
  }
}

/** The state of a call as the page shows it. */
export const callState = (call: Call): "running" | "waiting" | "ok" | "error" =>
  call.endedAt !== undefined ? (call.isError === true ? "error" : "ok") : call.approval !== undefined ? "waiting" : "running"

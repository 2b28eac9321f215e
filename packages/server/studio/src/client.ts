/**
 * client — the Studio's typed client of the server's documented HTTP API: every call sends the
 * signed-in bearer token, answers the server's JSON (types.ts) or throws an `ApiError` carrying
 * the status and the error's `_tag`. The events stream is read with `fetch` and a small SSE
 * parser (an EventSource cannot send the `Authorization` header); it resumes after a drop with
 * `Last-Event-ID`, so a reader never sees an event twice nor misses one the server still keeps.
 */
import type { ApprovalRecord, Me, RunOutcome, RunView, SessionRow, StreamedEvent, UsageReport, WorkflowView } from "./types.ts"

/** The server refused or failed a call: its HTTP status, its error's `_tag` and message. */
export class ApiError extends Error {
  readonly status: number
  readonly tag: string
  constructor(status: number, tag: string, message: string) {
    super(message)
    this.name = "ApiError"
    this.status = status
    this.tag = tag
  }
}

/** A failed call as one sentence for the page: the server's refusal, or why it could not be reached. */
export const errorText = (cause: unknown): string =>
  cause instanceof ApiError ? `${cause.tag}: ${cause.message}` : `The server could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`

export interface Client {
  readonly token: string
  me(): Promise<Me>
  sessions(query: { limit?: number; before?: string; agent?: string; q?: string }): Promise<{ sessions: SessionRow[] }>
  session(id: string): Promise<SessionRow>
  approvals(query: { status?: "open" | "answered" | "all"; tool?: string; order?: "oldest" | "newest"; limit?: number; cursor?: string }): Promise<{ records: ApprovalRecord[]; next?: string }>
  answerApproval(approvalId: string, answer: { approved: boolean; reason?: string }): Promise<ApprovalRecord>
  usage(by: "agent" | "day" | "session", limit?: number): Promise<UsageReport>
  workflows(): Promise<{ workflows: WorkflowView[] }>
  workflowRuns(name: string): Promise<{ runs: RunView[] }>
  workflowRun(name: string, runId: string): Promise<RunView>
  startWorkflow(name: string, inputs: Record<string, unknown>): Promise<{ runId: string; workflow: string; location: string }>
  /** Runs the session on `prompt` (`POST /sessions/{id}/runs`): answers once the run has ended. */
  run(id: string, prompt: string): Promise<RunOutcome>
  /** The session's events from `after` on, live; resumes with Last-Event-ID after a drop; stops on abort. */
  events(id: string, after: number, onEvent: (event: StreamedEvent) => void, signal: AbortSignal): Promise<void>
}

/** The largest SSE frame read (the server bounds what it keeps of an event far below). */
const MAX_FRAME_CHARS = 16 * 1024 * 1024
/** How long to wait before reading the stream again after a drop. */
const RECONNECT_MS = 1000

const enc = encodeURIComponent

/** `params` as a query string, without the absent ones. */
const query = (params: Record<string, string | number | undefined>): string => {
  const parts = Object.entries(params).flatMap(([key, value]) => value === undefined || value === "" ? [] : [`${enc(key)}=${enc(String(value))}`])
  return parts.length === 0 ? "" : `?${parts.join("&")}`
}

/** The error a failed response carries: its JSON `_tag` and `message` when it has them. */
const errorOf = async (response: Response): Promise<ApiError> => {
  const text = await response.text().catch(() => "")
  try {
    const body = JSON.parse(text) as { _tag?: unknown; message?: unknown }
    const tag = typeof body._tag === "string" ? body._tag : `Http${response.status}`
    const message = typeof body.message === "string" ? body.message : `${response.status} ${response.statusText}`
    return new ApiError(response.status, tag, message.slice(0, 2000))
  } catch {
    return new ApiError(response.status, `Http${response.status}`, `${response.status} ${response.statusText}`)
  }
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener("abort", done)
      resolve()
    }
    signal.addEventListener("abort", done)
  })

/** A client of the server at `base` (the page's origin when absent), calling as `token`'s principal. */
export const make = (token: string, base = ""): Client => {
  const headers = { authorization: `Bearer ${token}` }

  const call = async <A>(method: string, path: string, body?: unknown): Promise<A> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    if (!response.ok) throw await errorOf(response)
    return await response.json() as A
  }

  /**
   * One connection of the events stream, from the event after `seen.last`: each frame handed on
   * as it comes, `seen.last` moved past it (so a drop, thrown, leaves where to resume).
   */
  const follow = async (id: string, seen: { last: number }, onEvent: (event: StreamedEvent) => void, signal: AbortSignal): Promise<void> => {
    const response = await fetch(`${base}/sessions/${enc(id)}/events`, {
      headers: seen.last > 0 ? { ...headers, "last-event-id": String(seen.last) } : headers,
      signal
    })
    if (!response.ok) throw await errorOf(response)
    if (response.body === null) return
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    let buffer = ""
    let frame: { id?: string; data: string[] } = { data: [] }
    let frameChars = 0
    const dispatch = () => {
      const data = frame.data.join("\n")
      const number = frame.id === undefined ? NaN : Number(frame.id)
      frame = { data: [] }
      if (data === "" || !Number.isSafeInteger(number) || number <= seen.last) return
      seen.last = number
      let event: Omit<StreamedEvent, "id">
      try {
        event = JSON.parse(data) as Omit<StreamedEvent, "id">
      } catch {
        return // not an event this page can read: skipped, not read again
      }
      if (typeof event !== "object" || event === null || typeof event._tag !== "string") return
      onEvent({ ...event, id: number, at: typeof event.at === "number" ? event.at : Date.now() } as StreamedEvent)
    }
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        buffer += value
        let start = 0
        let newline = buffer.indexOf("\n")
        while (newline >= 0) {
          const line = buffer.slice(start, newline).replace(/\r$/, "")
          start = newline + 1
          if (line === "") {
            dispatch()
            frameChars = 0
          } else if (line.startsWith("data:")) {
            frame.data.push(line.slice(line.startsWith("data: ") ? 6 : 5))
            frameChars += line.length
          } else if (line.startsWith("id:")) frame.id = line.slice(3).trim()
          newline = buffer.indexOf("\n", start)
        }
        buffer = buffer.slice(start)
        // Refused for good (a 413 is not read again): reading on would only find it again.
        if (buffer.length + frameChars > MAX_FRAME_CHARS) throw new ApiError(413, "TooLarge", "an event of this session is too large for the page to show")
      }
    } finally {
      reader.cancel().catch(() => {})
    }
  }

  return {
    token,
    me: () => call("GET", "/me"),
    sessions: (q) => call("GET", `/sessions${query({ limit: q.limit, before: q.before, agent: q.agent, q: q.q })}`),
    session: (id) => call("GET", `/sessions/${enc(id)}`),
    approvals: (q) => call("GET", `/approvals${query({ status: q.status, tool: q.tool, order: q.order, limit: q.limit, cursor: q.cursor })}`),
    answerApproval: (approvalId, answer) => call("POST", `/approvals/${enc(approvalId)}`, answer),
    usage: (by, limit) => call("GET", `/usage${query({ by, limit })}`),
    workflows: () => call("GET", "/workflows"),
    workflowRuns: (name) => call("GET", `/workflows/${enc(name)}/runs`),
    workflowRun: (name, runId) => call("GET", `/workflows/${enc(name)}/runs/${enc(runId)}`),
    startWorkflow: (name, inputs) => call("POST", `/workflows/${enc(name)}/runs`, { inputs }),
    run: (id, prompt) => call("POST", `/sessions/${enc(id)}/runs`, { prompt }),
    events: async (id, after, onEvent, signal) => {
      const seen = { last: after }
      while (!signal.aborted) {
        try {
          await follow(id, seen, onEvent, signal)
        } catch (error) {
          if (signal.aborted) return
          // The server said no (not found, no longer kept, refused): reading again will not help.
          if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429) throw error
        }
        await sleep(RECONNECT_MS, signal)
      }
    }
  }
}

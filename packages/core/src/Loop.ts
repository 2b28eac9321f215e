/**
 * Loop — the agent loop as a pure state machine.
 *
 * Data in, data out: a state and an input give a new state and the next action (send a request to
 * the model, run tools, or complete), or a named rejection when the input is out of order. No
 * Effect, no services, no clock: the Session actor drives it with the Model and the Executor, and
 * streaming and non-streaming runs share it.
 */
import * as History from "./History.ts"
import {
  assistant,
  type AssistantMessage,
  type ImagePart,
  type Message,
  text,
  type ToolCallPart,
  toolCallPart,
  toolCalls,
  toolResult,
  type ToolResultMessage,
  user
} from "./Message.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export type Status = "Idle" | "AwaitingCompletion" | "AwaitingTools"

/** @since 0.1.0 @category models */
export interface State {
  readonly system: string | undefined
  readonly history: History.History
  readonly status: Status
  /** Model requests made in the current run. */
  readonly turn: number
  readonly maxTurns: number
  /** The calls the model is waiting on, in its order. */
  readonly pending: ReadonlyArray<ToolCallPart>
}

/** What the model is asked: the tools are the session's, so they travel separately. */
export interface Request {
  readonly system: string | undefined
  readonly messages: History.History
}

/** @since 0.1.0 @category models */
export type Action =
  | { readonly _tag: "Request"; readonly request: Request; readonly turn: number }
  | { readonly _tag: "RunTools"; readonly calls: ReadonlyArray<ToolCallPart> }
  | { readonly _tag: "Complete"; readonly text: string }

/** Why an input was refused; the state is unchanged unless said otherwise. */
export type Rejection =
  | "TurnInProgress"
  | "NotWaitingForCompletion"
  | "NotWaitingForTools"
  | "InvalidToolResults"
  /** The run asked for more model requests than `maxTurns`; the state is idle again. */
  | "MaxTurnsExceeded"

/** @since 0.1.0 @category models */
export type Step =
  | { readonly _tag: "Next"; readonly state: State; readonly action: Action }
  | { readonly _tag: "Rejected"; readonly state: State; readonly reason: Rejection }

/** One answer to a pending call. */
export interface ToolOutput {
  readonly callId: string
  readonly content: string
  readonly isError: boolean
  readonly images?: ReadonlyArray<ImagePart> | undefined
}

export const DEFAULT_MAX_TURNS = 50

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * A fresh loop. A blank system prompt is no system prompt.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: {
  readonly system?: string | undefined
  readonly history?: Iterable<Message> | undefined
  readonly maxTurns?: number | undefined
} = {}): State => ({
  system: options.system?.trim() ? options.system : undefined,
  history: options.history instanceof History.History
    ? options.history
    : options.history === undefined
    ? History.empty()
    : History.fromIterable(options.history),
  status: "Idle",
  turn: 0,
  maxTurns: options.maxTurns ?? DEFAULT_MAX_TURNS,
  pending: []
})

// ---------------------------------------------------------------------------------------------
// Transitions
// ---------------------------------------------------------------------------------------------

const rejected = (state: State, reason: Rejection): Step => ({ _tag: "Rejected", state, reason })

const request = (state: State): Step => ({
  _tag: "Next",
  state,
  action: { _tag: "Request", request: { system: state.system, messages: state.history }, turn: state.turn }
})

/**
 * A model's reply is input too: two calls sharing an id (or a call without one) could not each get
 * their own result, and a provider would refuse the history. The second `x` becomes `x_2` (then
 * `x_3`…, skipping ids already taken), a missing id becomes `call_<position>`; unique ids pass
 * through untouched, and the message is then recorded as renamed, so history and results agree.
 */
const withUniqueCallIds = (message: AssistantMessage): AssistantMessage => {
  const seen = new Set<string>()
  let renamed = false
  const parts = message.parts.map((part, position) => {
    if (part._tag !== "ToolCall") return part
    const base = part.id === "" ? `call_${position + 1}` : part.id
    let id = base
    for (let n = 2; seen.has(id); n++) id = `${base}_${n}`
    seen.add(id)
    if (id === part.id) return part
    renamed = true
    return toolCallPart({ id, name: part.name, input: part.input })
  })
  return renamed ? assistant(parts) : message
}

/**
 * A new prompt starts a run: the first request of it.
 *
 * @since 0.1.0
 * @category transitions
 */
export const submit = (state: State, prompt: string): Step =>
  state.status !== "Idle"
    ? rejected(state, "TurnInProgress")
    : request({
      ...state,
      history: History.append(state.history, user(prompt)),
      status: "AwaitingCompletion",
      turn: 1,
      pending: []
    })

/**
 * The model's reply: complete when it calls no tools, otherwise run them. `shown`, when given,
 * makes the message of calls as the history keeps it (what later requests send: a session's has
 * its calls' arguments redacted); the calls run, and wait, as the model wrote them.
 *
 * @since 0.1.0
 * @category transitions
 */
export const receiveCompletion = (state: State, reply: AssistantMessage, shown?: (message: AssistantMessage) => AssistantMessage): Step => {
  if (state.status !== "AwaitingCompletion") return rejected(state, "NotWaitingForCompletion")
  const message = withUniqueCallIds(reply)
  const calls = toolCalls(message)
  const history = History.append(state.history, calls.length === 0 || shown === undefined ? message : shown(message))
  return calls.length === 0
    ? { _tag: "Next", state: { ...state, history, status: "Idle", pending: [] }, action: { _tag: "Complete", text: text(message) } }
    : {
      _tag: "Next",
      state: { ...state, history, status: "AwaitingTools", pending: calls },
      action: { _tag: "RunTools", calls }
    }
}

/**
 * The tools' results: every pending call answered exactly once, in any order; they are recorded
 * in the model's order. Then the next request, unless the run is out of turns.
 *
 * @since 0.1.0
 * @category transitions
 */
export const receiveToolOutputs = (state: State, outputs: ReadonlyArray<ToolOutput>): Step => {
  if (state.status !== "AwaitingTools") return rejected(state, "NotWaitingForTools")
  const byId = new Map(outputs.map((output) => [output.callId, output]))
  if (byId.size !== outputs.length || outputs.length !== state.pending.length) return rejected(state, "InvalidToolResults")
  const results: Array<ToolResultMessage> = []
  for (const call of state.pending) {
    const output = byId.get(call.id)
    if (output === undefined) return rejected(state, "InvalidToolResults")
    results.push(toolResult({ callId: call.id, name: call.name, content: output.content, isError: output.isError, ...(output.images === undefined ? {} : { images: output.images }) }))
  }
  const history = History.append(state.history, ...results)
  if (state.turn >= state.maxTurns) {
    return rejected({ ...state, history, status: "Idle", pending: [] }, "MaxTurnsExceeded")
  }
  return request({ ...state, history, status: "AwaitingCompletion", turn: state.turn + 1, pending: [] })
}

/**
 * A final reply that is no answer (a typed answer that did not decode): the model reads why, as a
 * user message, and is asked again in the same run, within `maxTurns`.
 *
 * @since 0.1.0
 * @category transitions
 */
export const correct = (state: State, text: string): Step => {
  if (state.status !== "Idle") return rejected(state, "TurnInProgress")
  const history = History.append(state.history, user(text))
  if (state.turn >= state.maxTurns) return rejected({ ...state, history }, "MaxTurnsExceeded")
  return request({ ...state, history, status: "AwaitingCompletion", turn: state.turn + 1, pending: [] })
}

/**
 * A resumed state whose history ends with a message of tool calls and no results yet (a batch
 * that waited for approval when it was saved): the loop waits for those calls' results again.
 *
 * @since 0.1.0
 * @category transitions
 */
export const awaitTools = (state: State): State => {
  const last = state.history.at(state.history.length - 1)
  const calls = last?._tag === "AssistantMessage" ? toolCalls(last) : []
  return calls.length === 0 ? state : { ...state, status: "AwaitingTools", pending: calls }
}

/**
 * A resumed state whose history ends with tool results the model has not read yet (a run whose
 * process died after committing them): the run's next request, as `receiveToolOutputs` makes it.
 *
 * @since 0.1.0
 * @category transitions
 */
export const requestNext = (state: State): Step =>
  state.status !== "Idle" ? rejected(state, "TurnInProgress") : request({ ...state, status: "AwaitingCompletion", turn: state.turn + 1, pending: [] })

/**
 * Stops the run wherever it is. Pending calls are answered with `interruptedText` so the history
 * stays one a provider accepts (every tool call has its result).
 *
 * @since 0.1.0
 * @category transitions
 */
export const abort = (state: State, interruptedText: string): State => ({
  ...state,
  history: History.append(
    state.history,
    ...state.pending.map((call) => toolResult({ callId: call.id, name: call.name, content: interruptedText, isError: true }))
  ),
  status: "Idle",
  pending: []
})

/**
 * Loop — a run of the agent loop as a pure state machine.
 *
 * Data in, data out: a state and an input give a new state and the next action, or a named
 * rejection when the input is out of order. No Effect, no services, no clock. The state holds
 * everything a run is: the history, where the run is (asking the model, running a batch of calls,
 * waiting for approvals with the batch parked, done), what the run has gathered (where its
 * messages start, its tokens, its answers corrected) and a batch's results known before it
 * finished. A session's interpreter performs each action with the `Model` and the `Executor` and
 * feeds the outcome back; a parked run and a run restored from a store are both this state, so
 * going on after an answer or after a restart is one transition (`proceed`).
 *
 * | status              | inputs it takes                                                     |
 * | ------------------- | ------------------------------------------------------------------- |
 * | `Idle`              | `submit`, `correct`, `abort` (nothing to answer)                    |
 * | `AwaitingCompletion`| `receiveCompletion`, `abort`                                        |
 * | `AwaitingTools`     | `receiveToolOutputs`, `finish`, `park` (calls pending), `proceed`, `abort` |
 * | `AwaitingApproval`  | `proceed` (an answer came, or a run starts), `abort`                |
 *
 * Any other input is `Rejected` with its reason, the state unchanged.
 */
import * as History from "./History.ts"
import { assistant, type AssistantMessage, type ImagePart, type Message, text, type ToolCallPart, toolCallPart, toolCalls, toolResult, type ToolResultMessage, user } from "./Message.ts"
import { addUsage, emptyUsage, type FinishReason, type Usage } from "./Model.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export type Status = "Idle" | "AwaitingCompletion" | "AwaitingTools" | "AwaitingApproval"

/**
 * What a run has gathered: where its messages start in the history, the tokens of its replies,
 * the last reply's finish, and how many answers were sent back to the model because they did
 * not decode.
 *
 * @since 0.1.0
 * @category models
 */
export interface Progress {
  readonly from: number
  readonly usage: Usage
  readonly finishReason: FinishReason
  readonly retries: number
}

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
  /** The run in progress; `undefined` between runs (an idle session holds none). */
  readonly progress: Progress | undefined
  /** Results of pending calls known before the batch finished: restored from a store, or finished before it parked. */
  readonly finished: ReadonlyArray<ToolOutput>
  /** A prompt to submit once the batch the run continues is done (a run queued behind a restored batch). */
  readonly then: string | undefined
}

/** What the model is asked: the tools are the session's, so they travel separately. */
export interface Request {
  readonly system: string | undefined
  readonly messages: History.History
}

/** @since 0.1.0 @category models */
export type Action =
  | { readonly _tag: "Request"; readonly request: Request; readonly turn: number }
  /**
   * Run `calls`; `known`: the batch's other calls' results, which it already has (a batch going on);
   * `announced`: a parked batch going on, whose calls were announced before it parked.
   */
  | {
    readonly _tag: "RunTools"
    readonly calls: ReadonlyArray<ToolCallPart>
    readonly known?: ReadonlyArray<ToolOutput> | undefined
    readonly announced?: boolean | undefined
  }
  /** The batch has nothing left to do but wait for a person's answers: the run holds no fiber until one comes. */
  | { readonly _tag: "Wait" }
  | { readonly _tag: "Complete"; readonly text: string }

/** Why an input was refused; the state is unchanged unless said otherwise. */
export type Rejection =
  | "TurnInProgress"
  | "NotWaitingForCompletion"
  | "NotWaitingForTools"
  | "NotWaitingForApproval"
  | "InvalidToolResults"
  /** The run asked for more model requests than `maxTurns`; the state is idle again. */
  | "MaxTurnsExceeded"

/** @since 0.1.0 @category models */
export type Step =
  | { readonly _tag: "Next"; readonly state: State; readonly action: Action }
  | { readonly _tag: "Rejected"; readonly state: State; readonly reason: Rejection }

/** Where a run stood, as a store keeps it with its batch: what `restore` goes on from. */
export interface Saved {
  readonly turn: number
  readonly progress: Progress
  readonly then?: string | undefined
}

/** One answer to a pending call. */
export interface ToolOutput {
  readonly callId: string
  readonly content: string
  readonly isError: boolean
  readonly images?: ReadonlyArray<ImagePart> | undefined
  /** A structured result's data, for events (the history keeps the text). */
  readonly data?: unknown
}

export const DEFAULT_MAX_TURNS = 50

const nothing: ReadonlyArray<never> = []

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
  pending: nothing,
  progress: undefined,
  finished: nothing,
  then: undefined
})

/** A run's tally as it starts, its messages from `from`. */
const started = (from: number): Progress => ({ from, usage: emptyUsage, finishReason: "other", retries: 0 })

// ---------------------------------------------------------------------------------------------
// Transitions
// ---------------------------------------------------------------------------------------------

const rejected = (state: State, reason: Rejection): Step => ({ _tag: "Rejected", state, reason })

const request = (state: State): Step => ({
  _tag: "Next",
  state,
  action: { _tag: "Request", request: { system: state.system, messages: state.history }, turn: state.turn }
})

/** The state asking for its next turn, within `maxTurns`. */
const nextTurn = (state: State, history: History.History): Step =>
  state.turn >= state.maxTurns
    ? rejected({ ...state, history, status: "Idle", pending: nothing, finished: nothing, then: undefined }, "MaxTurnsExceeded")
    : request({ ...state, history, status: "AwaitingCompletion", turn: state.turn + 1, pending: nothing, finished: nothing })

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
export const submit = (state: State, prompt: string): Step => {
  if (state.status !== "Idle") return rejected(state, "TurnInProgress")
  const history = History.append(state.history, user(prompt))
  return request({ ...state, history, status: "AwaitingCompletion", turn: 1, pending: nothing, progress: started(history.length), then: undefined })
}

/**
 * The model's reply: complete when it calls no tools (or, for a run that continued a restored
 * batch with a prompt queued behind it, that prompt's first request), otherwise run them. `shown`,
 * when given, makes the message of calls as the history keeps it (what later requests send: a
 * session's has its calls' arguments redacted); the calls run, and wait, as the model wrote them.
 * `spent`: the reply's tokens and finish, added to the run's.
 *
 * @since 0.1.0
 * @category transitions
 */
export const receiveCompletion = (
  state: State,
  reply: AssistantMessage,
  shown?: ((message: AssistantMessage) => AssistantMessage) | undefined,
  spent?: { readonly usage: Usage; readonly finishReason: FinishReason } | undefined
): Step => {
  if (state.status !== "AwaitingCompletion") return rejected(state, "NotWaitingForCompletion")
  const message = withUniqueCallIds(reply)
  const calls = toolCalls(message)
  const history = History.append(state.history, calls.length === 0 || shown === undefined ? message : shown(message))
  const before = state.progress ?? started(state.history.length)
  const progress = spent === undefined ? before : { ...before, usage: addUsage(before.usage, spent.usage), finishReason: spent.finishReason }
  if (calls.length > 0) return { _tag: "Next", state: { ...state, history, status: "AwaitingTools", pending: calls, progress }, action: { _tag: "RunTools", calls } }
  const idle: State = { ...state, history, status: "Idle", pending: nothing, progress }
  return state.then === undefined ? { _tag: "Next", state: idle, action: { _tag: "Complete", text: text(message) } } : submit(idle, state.then)
}

/** `outputs` checked against the pending calls: in the model's order, or `undefined` when one misses, repeats or is invented. */
const inCallOrder = (state: State, outputs: ReadonlyArray<ToolOutput>): Array<ToolResultMessage> | undefined => {
  const byId = new Map(outputs.map((output) => [output.callId, output]))
  if (byId.size !== outputs.length || outputs.length !== state.pending.length) return undefined
  const results: Array<ToolResultMessage> = []
  for (const call of state.pending) {
    const output = byId.get(call.id)
    if (output === undefined) return undefined
    results.push(toolResult({ callId: call.id, name: call.name, content: output.content, isError: output.isError, ...(output.images === undefined ? {} : { images: output.images }) }))
  }
  return results
}

/**
 * The tools' results: every pending call answered exactly once, in any order; they are recorded
 * in the model's order. Then the next request, unless the run is out of turns. `correction`: one
 * result tells the model its typed answer did not decode (`submit`), and the run counts a retry.
 *
 * @since 0.1.0
 * @category transitions
 */
export const receiveToolOutputs = (state: State, outputs: ReadonlyArray<ToolOutput>, correction = false): Step => {
  if (state.status !== "AwaitingTools" || state.pending.length === 0) return rejected(state, "NotWaitingForTools")
  const results = inCallOrder(state, outputs)
  if (results === undefined) return rejected(state, "InvalidToolResults")
  const counted = correction && state.progress !== undefined ? { ...state, progress: { ...state.progress, retries: state.progress.retries + 1 } } : state
  return nextTurn(counted, History.append(state.history, ...results))
}

/**
 * The tools' results end the run (a typed answer submitted through a call): recorded as
 * `receiveToolOutputs` records them, the loop idle again at this turn, the run complete with `text`
 * (or, a prompt queued behind a restored batch, that prompt's first request, as a reply's would).
 *
 * @since 0.1.0
 * @category transitions
 */
export const finish = (state: State, outputs: ReadonlyArray<ToolOutput>, text: string): Step => {
  if (state.status !== "AwaitingTools" || state.pending.length === 0) return rejected(state, "NotWaitingForTools")
  const results = inCallOrder(state, outputs)
  if (results === undefined) return rejected(state, "InvalidToolResults")
  const idle: State = { ...state, history: History.append(state.history, ...results), status: "Idle", pending: nothing, finished: nothing }
  return state.then === undefined ? { _tag: "Next", state: idle, action: { _tag: "Complete", text } } : submit(idle, state.then)
}

/**
 * The batch can do nothing but wait for answers: every call finished (`finished`: their results)
 * or waiting. The run parks, and goes on with `proceed` once an answer comes.
 *
 * @since 0.1.0
 * @category transitions
 */
export const park = (state: State, finished: ReadonlyArray<ToolOutput>): Step =>
  state.status !== "AwaitingTools" || state.pending.length === 0
    ? rejected(state, "NotWaitingForTools")
    : { _tag: "Next", state: { ...state, status: "AwaitingApproval", finished: [...state.finished, ...finished] }, action: { _tag: "Wait" } }

/**
 * A batch goes on: a parked one once an answer came, or one restored from a store when a run
 * starts (`then`: that run's prompt, submitted once the batch's run is complete). The calls
 * without a result run (those still unanswered ask again); those with one keep it. A batch with
 * every call answered (a run cut off between its results and its next request) asks for the turn.
 *
 * @since 0.1.0
 * @category transitions
 */
export const proceed = (state: State, then?: string | undefined): Step => {
  if (state.status !== "AwaitingApproval" && state.status !== "AwaitingTools") return rejected(state, "NotWaitingForApproval")
  const known = new Set(state.finished.map((output) => output.callId))
  const calls = state.pending.filter((call) => !known.has(call.id))
  const going: State = {
    ...state,
    status: "AwaitingTools",
    progress: state.progress ?? started(state.history.length),
    then: then ?? state.then
  }
  if (state.pending.length === 0) return nextTurn(going, state.history)
  return { _tag: "Next", state: going, action: { _tag: "RunTools", calls, known: state.finished, announced: state.status === "AwaitingApproval" } }
}

/**
 * A final reply that is no answer (a typed answer that did not decode): the model reads why, as a
 * user message, and is asked again in the same run, within `maxTurns`; the run counts one retry.
 *
 * @since 0.1.0
 * @category transitions
 */
export const correct = (state: State, text: string): Step => {
  if (state.status !== "Idle") return rejected(state, "TurnInProgress")
  const history = History.append(state.history, user(text))
  const progress = state.progress === undefined ? undefined : { ...state.progress, retries: state.progress.retries + 1 }
  if (state.turn >= state.maxTurns) return rejected({ ...state, history, progress }, "MaxTurnsExceeded")
  return request({ ...state, history, status: "AwaitingCompletion", turn: state.turn + 1, pending: nothing, progress })
}

/**
 * A state restored from a store whose history ends with a message of tool calls and no results
 * yet (a batch that ran or waited for approval when it was saved): the loop waits on those calls
 * again, `finished` the results it already has. One that ends with results the model has not read
 * (`inFlight`: a run cut off after committing them) waits on no call: `proceed` asks for the turn.
 * `saved`: where the run stood when the batch was saved (its turns, its progress, a prompt queued
 * behind it), so it goes on counting from there.
 *
 * @since 0.1.0
 * @category transitions
 */
export const restore = (state: State, finished: ReadonlyArray<ToolOutput>, waiting: boolean, saved?: Saved | undefined): State => {
  const last = state.history.at(state.history.length - 1)
  const calls = last?._tag === "AssistantMessage" ? toolCalls(last) : nothing
  const run = saved === undefined ? state : { ...state, turn: saved.turn, progress: saved.progress, then: saved.then ?? state.then }
  if (calls.length === 0) return { ...run, status: "AwaitingTools", pending: nothing, finished: nothing }
  return { ...run, status: waiting ? "AwaitingApproval" : "AwaitingTools", pending: calls, finished }
}

/**
 * A resumed state whose history ends with a message of tool calls and no results yet: the loop
 * waits for those calls' results again (`restore` with none known).
 *
 * @since 0.1.0
 * @category transitions
 */
export const awaitTools = (state: State): State => {
  const last = state.history.at(state.history.length - 1)
  return last?._tag === "AssistantMessage" && toolCalls(last).length > 0 ? restore(state, nothing, false) : state
}

/**
 * A resumed state whose history ends with tool results the model has not read yet (a run whose
 * process died after committing them): the run's next request, as `receiveToolOutputs` makes it.
 *
 * @since 0.1.0
 * @category transitions
 */
export const requestNext = (state: State): Step => (state.status !== "Idle" ? rejected(state, "TurnInProgress") : nextTurn(state, state.history))

/**
 * Whether a batch waits in the state: running, parked or restored (a run that starts goes on with it).
 *
 * @since 0.1.0
 * @category predicates
 */
export const hasBatch = (state: State): boolean => state.status === "AwaitingTools" || state.status === "AwaitingApproval"

/**
 * Stops the run wherever it is. Pending calls are answered with `interruptedText` so the history
 * stays one a provider accepts (every tool call has its result).
 *
 * @since 0.1.0
 * @category transitions
 */
export const abort = (state: State, interruptedText: string): State => ({
  ...state,
  history: History.append(state.history, ...state.pending.map((call) => toolResult({ callId: call.id, name: call.name, content: interruptedText, isError: true }))),
  status: "Idle",
  pending: nothing,
  progress: undefined,
  finished: nothing,
  then: undefined
})

/**
 * Every state of the Loop against every input: the matrix below says, per cell, the step (or the
 * state, for `restore`, `awaitTools` and `abort`; the answer, for `hasBatch`) as a whole value. A
 * cell that names a rejection expects the state unchanged. The rows are reached through the
 * Loop's own functions, and their values are checked first.
 */
import { assert, describe, it } from "@effect/vitest"
import * as History from "../src/History.ts"
import * as Loop from "../src/Loop.ts"
import * as Message from "../src/Message.ts"
import type * as Model from "../src/Model.ts"

const call = (id: string) => Message.toolCallPart({ id, name: `tool_${id}`, input: {} })
const calling = (...ids: ReadonlyArray<string>) => Message.assistant(ids.map(call))
const reply = (text: string) => Message.assistant([Message.textPart(text)])
const output = (callId: string, isError = false): Loop.ToolOutput => ({ callId, content: callId.toUpperCase(), isError })
const result = (callId: string, content = callId.toUpperCase(), isError = false) =>
  Message.toolResult({ callId, name: `tool_${callId}`, content, isError })
const spent = (input: number, out: number, finishReason: Model.FinishReason) => ({ usage: { inputTokens: input, outputTokens: out }, finishReason })
const tally = (from: number, input: number, out: number, finishReason: Model.FinishReason, retries = 0): Loop.Progress => ({
  from,
  usage: { inputTokens: input, outputTokens: out },
  finishReason,
  retries
})

const next = (step: Loop.Step) => {
  if (step._tag === "Rejected") throw new Error(`unexpected rejection ${step.reason}`)
  return step.state
}

/** A state as plain data (a `History` compares by its messages). */
const plain = (state: Loop.State) => ({ ...state, history: History.toArray(state.history) })
const plainAction = (action: Loop.Action) =>
  action._tag === "Request" ? { ...action, request: { ...action.request, messages: History.toArray(action.request.messages) } } : action
const plainStep = (step: Loop.Step) =>
  step._tag === "Next"
    ? { _tag: "Next", state: plain(step.state), action: plainAction(step.action) }
    : { _tag: "Rejected", state: plain(step.state), reason: step.reason }
type Plain = ReturnType<typeof plain>

// The rows: each state as a run reaches it.
const go = Message.user("go")
const make = (maxTurns = 3, history?: ReadonlyArray<Message.Message>) => Loop.make({ system: "sys", maxTurns, history })
const completion = next(Loop.submit(make(), "go"))
const tools = next(Loop.receiveCompletion(completion, calling("a", "b"), undefined, spent(10, 5, "tool-calls")))
const approval = next(Loop.park(tools, [output("a")]))
const idle = next(Loop.receiveCompletion(completion, reply("done"), undefined, spent(10, 5, "stop")))
const inFlight = Loop.restore(make(3, [go, calling("a"), result("a")]), [], false)
const idleSpent = next(Loop.receiveCompletion(next(Loop.submit(make(1), "go")), reply("done"), undefined, spent(10, 5, "stop")))
const toolsSpent = next(Loop.receiveCompletion(next(Loop.submit(make(1), "go")), calling("a", "b"), undefined, spent(10, 5, "tool-calls")))

const rows = {
  "Idle": idle,
  "AwaitingCompletion": completion,
  "AwaitingTools": tools,
  "AwaitingApproval": approval,
  "AwaitingTools, a restored batch in flight": inFlight,
  "Idle, its turns used up": idleSpent,
  "AwaitingTools, its turns used up": toolsSpent
} as const
type Row = keyof typeof rows

const base = { system: "sys", maxTurns: 3, pending: [], finished: [], then: undefined }
const fixtures: Record<Row, Plain> = {
  "Idle": { ...base, history: [go, reply("done")], status: "Idle", turn: 1, progress: tally(1, 10, 5, "stop") },
  "AwaitingCompletion": { ...base, history: [go], status: "AwaitingCompletion", turn: 1, progress: tally(1, 0, 0, "other") },
  "AwaitingTools": { ...base, history: [go, calling("a", "b")], status: "AwaitingTools", turn: 1, pending: [call("a"), call("b")], progress: tally(1, 10, 5, "tool-calls") },
  "AwaitingApproval": {
    ...base,
    history: [go, calling("a", "b")],
    status: "AwaitingApproval",
    turn: 1,
    pending: [call("a"), call("b")],
    progress: tally(1, 10, 5, "tool-calls"),
    finished: [output("a")]
  },
  "AwaitingTools, a restored batch in flight": { ...base, history: [go, calling("a"), result("a")], status: "AwaitingTools", turn: 0, progress: undefined },
  "Idle, its turns used up": { ...base, maxTurns: 1, history: [go, reply("done")], status: "Idle", turn: 1, progress: tally(1, 10, 5, "stop") },
  "AwaitingTools, its turns used up": {
    ...base,
    maxTurns: 1,
    history: [go, calling("a", "b")],
    status: "AwaitingTools",
    turn: 1,
    pending: [call("a"), call("b")],
    progress: tally(1, 10, 5, "tool-calls")
  }
}

/** The pending calls' results, in the reverse of the model's order (the loop records them in its order). */
const answers = (state: Loop.State) => state.pending.map((c) => output(c.id)).reverse()

// The columns: each input, applied to a row's state.
const inputs = {
  "submit": (s: Loop.State) => Loop.submit(s, "next"),
  "receiveCompletion (text)": (s: Loop.State) => Loop.receiveCompletion(s, reply("text"), undefined, spent(3, 2, "stop")),
  "receiveCompletion (calls)": (s: Loop.State) => Loop.receiveCompletion(s, calling("c"), undefined, spent(3, 2, "tool-calls")),
  "receiveToolOutputs": (s: Loop.State) => Loop.receiveToolOutputs(s, answers(s)),
  "receiveToolOutputs (correction)": (s: Loop.State) => Loop.receiveToolOutputs(s, answers(s), true),
  "receiveToolOutputs (an invented call)": (s: Loop.State) => Loop.receiveToolOutputs(s, [output("x")]),
  "finish": (s: Loop.State) => Loop.finish(s, answers(s), "answer"),
  "park": (s: Loop.State) => Loop.park(s, s.pending.slice(0, 1).map((c) => output(c.id))),
  "proceed": (s: Loop.State) => Loop.proceed(s),
  "correct": (s: Loop.State) => Loop.correct(s, "fix it"),
  "restore": (s: Loop.State) => Loop.restore(s, [output("a")], true),
  "awaitTools": (s: Loop.State) => Loop.awaitTools(s),
  "requestNext": (s: Loop.State) => Loop.requestNext(s),
  "abort": (s: Loop.State) => Loop.abort(s, "stopped"),
  "hasBatch": (s: Loop.State) => Loop.hasBatch(s)
} as const
type Input = keyof typeof inputs

/** A cell: a rejection (the state unchanged), or the whole value the input gives. */
type Cell = Loop.Rejection | { readonly value: unknown; readonly found?: true }

const request = (state: Plain) => ({ _tag: "Request", request: { system: "sys", messages: state.history }, turn: state.turn })
const step = (state: Plain, action: unknown = request(state)) => ({ value: { _tag: "Next", state, action } })
const state = (value: Plain) => ({ value })
const same = (row: Row) => state(fixtures[row])
/** A cell whose behaviour was a bug when these tests were written: its test is in "bugs found by these tests", expecting the fix. */
const found = (value: unknown) => ({ value, found: true as const })
const exceeded = (value: Plain) => ({ value: { _tag: "Rejected", state: value, reason: "MaxTurnsExceeded" } })

const I = fixtures["Idle"], C = fixtures["AwaitingCompletion"], T = fixtures["AwaitingTools"], A = fixtures["AwaitingApproval"]
const F = fixtures["AwaitingTools, a restored batch in flight"], IU = fixtures["Idle, its turns used up"], TU = fixtures["AwaitingTools, its turns used up"]
/** The batch a,b answered in the model's order. */
const answered = (s: Plain) => [...s.history, result("a"), result("b")]
const aborted = (s: Plain) => ({ ...s, history: [...s.history, result("a", "stopped", true), result("b", "stopped", true)], status: "Idle" as const, pending: [], finished: [], progress: undefined })
const waitingAgain = (s: Plain) => ({ ...s, status: "AwaitingApproval" as const, pending: [call("a"), call("b")], finished: [output("a")] })
const noCall = (s: Plain) => ({ ...s, status: "AwaitingTools" as const, pending: [], finished: [] })

const matrix: Record<Row, Record<Input, Cell>> = {
  "Idle": {
    "submit": step({ ...I, history: [...I.history, Message.user("next")], status: "AwaitingCompletion", progress: tally(3, 0, 0, "other") }),
    "receiveCompletion (text)": "NotWaitingForCompletion",
    "receiveCompletion (calls)": "NotWaitingForCompletion",
    "receiveToolOutputs": "NotWaitingForTools",
    "receiveToolOutputs (correction)": "NotWaitingForTools",
    "receiveToolOutputs (an invented call)": "NotWaitingForTools",
    "finish": "NotWaitingForTools",
    "park": "NotWaitingForTools",
    "proceed": "NotWaitingForApproval",
    "correct": step({ ...I, history: [...I.history, Message.user("fix it")], status: "AwaitingCompletion", turn: 2, progress: tally(1, 10, 5, "stop", 1) }),
    // Any history not ending with calls restores as a batch in flight: `proceed` asks for the turn.
    "restore": state(noCall(I)),
    "awaitTools": same("Idle"),
    "requestNext": step({ ...I, status: "AwaitingCompletion", turn: 2 }),
    "abort": state({ ...I, progress: undefined }),
    "hasBatch": { value: false }
  },
  "AwaitingCompletion": {
    "submit": "TurnInProgress",
    "receiveCompletion (text)": step({ ...C, history: [go, reply("text")], status: "Idle", progress: tally(1, 3, 2, "stop") }, { _tag: "Complete", text: "text" }),
    "receiveCompletion (calls)": step({ ...C, history: [go, calling("c")], status: "AwaitingTools", pending: [call("c")], progress: tally(1, 3, 2, "tool-calls") }, {
      _tag: "RunTools",
      calls: [call("c")]
    }),
    "receiveToolOutputs": "NotWaitingForTools",
    "receiveToolOutputs (correction)": "NotWaitingForTools",
    "receiveToolOutputs (an invented call)": "NotWaitingForTools",
    "finish": "NotWaitingForTools",
    "park": "NotWaitingForTools",
    "proceed": "NotWaitingForApproval",
    "correct": "TurnInProgress",
    "restore": state(noCall(C)),
    "awaitTools": same("AwaitingCompletion"),
    "requestNext": "TurnInProgress",
    "abort": state({ ...C, status: "Idle", progress: undefined }),
    "hasBatch": { value: false }
  },
  "AwaitingTools": {
    "submit": "TurnInProgress",
    "receiveCompletion (text)": "NotWaitingForCompletion",
    "receiveCompletion (calls)": "NotWaitingForCompletion",
    "receiveToolOutputs": step({ ...T, history: answered(T), status: "AwaitingCompletion", turn: 2, pending: [] }),
    "receiveToolOutputs (correction)": step({ ...T, history: answered(T), status: "AwaitingCompletion", turn: 2, pending: [], progress: tally(1, 10, 5, "tool-calls", 1) }),
    "receiveToolOutputs (an invented call)": "InvalidToolResults",
    "finish": step({ ...T, history: answered(T), status: "Idle", pending: [] }, { _tag: "Complete", text: "answer" }),
    "park": step({ ...T, status: "AwaitingApproval", finished: [output("a")] }, { _tag: "Wait" }),
    "proceed": step(T, { _tag: "RunTools", calls: [call("a"), call("b")], known: [], announced: false }),
    "correct": "TurnInProgress",
    "restore": state(waitingAgain(T)),
    "awaitTools": same("AwaitingTools"),
    "requestNext": "TurnInProgress",
    "abort": state(aborted(T)),
    "hasBatch": { value: true }
  },
  "AwaitingApproval": {
    "submit": "TurnInProgress",
    "receiveCompletion (text)": "NotWaitingForCompletion",
    "receiveCompletion (calls)": "NotWaitingForCompletion",
    "receiveToolOutputs": "NotWaitingForTools",
    "receiveToolOutputs (correction)": "NotWaitingForTools",
    "receiveToolOutputs (an invented call)": "NotWaitingForTools",
    "finish": "NotWaitingForTools",
    "park": "NotWaitingForTools",
    // The call that finished before the batch parked keeps its result; the other asks again.
    "proceed": step({ ...A, status: "AwaitingTools" }, { _tag: "RunTools", calls: [call("b")], known: [output("a")], announced: true }),
    "correct": "TurnInProgress",
    "restore": state(waitingAgain(A)),
    // A resumed state knows no result: what the parked batch had finished is the store's to give back (`restore`).
    "awaitTools": state({ ...A, status: "AwaitingTools", finished: [] }),
    "requestNext": "TurnInProgress",
    // Every call of the batch reads as stopped, the one that finished before it parked too.
    "abort": state(aborted(A)),
    "hasBatch": { value: true }
  },
  "AwaitingTools, a restored batch in flight": {
    "submit": "TurnInProgress",
    "receiveCompletion (text)": "NotWaitingForCompletion",
    "receiveCompletion (calls)": "NotWaitingForCompletion",
    // Was a bug: no call waits, yet an empty set of results was taken as the batch's: the turn was
    // asked (and saved again: interpreter.ts `feed` saves after results), the run completed, or it
    // parked waiting on no call. Nothing is waited on: every result is refused. `proceed` is this state's way on.
    "receiveToolOutputs": found({ _tag: "Rejected", state: F, reason: "NotWaitingForTools" }),
    "receiveToolOutputs (correction)": found({ _tag: "Rejected", state: F, reason: "NotWaitingForTools" }),
    "receiveToolOutputs (an invented call)": "NotWaitingForTools",
    "finish": found({ _tag: "Rejected", state: F, reason: "NotWaitingForTools" }),
    "park": found({ _tag: "Rejected", state: F, reason: "NotWaitingForTools" }),
    "proceed": step({ ...F, status: "AwaitingCompletion", turn: 1, progress: tally(3, 0, 0, "other") }),
    "correct": "TurnInProgress",
    "restore": state(F),
    "awaitTools": same("AwaitingTools, a restored batch in flight"),
    "requestNext": "TurnInProgress",
    "abort": state({ ...F, status: "Idle" }),
    "hasBatch": { value: true }
  },
  "Idle, its turns used up": {
    "submit": step({ ...IU, history: [...IU.history, Message.user("next")], status: "AwaitingCompletion", progress: tally(3, 0, 0, "other") }),
    "receiveCompletion (text)": "NotWaitingForCompletion",
    "receiveCompletion (calls)": "NotWaitingForCompletion",
    "receiveToolOutputs": "NotWaitingForTools",
    "receiveToolOutputs (correction)": "NotWaitingForTools",
    "receiveToolOutputs (an invented call)": "NotWaitingForTools",
    "finish": "NotWaitingForTools",
    "park": "NotWaitingForTools",
    "proceed": "NotWaitingForApproval",
    // The correction is kept, and counted, though no turn is left to read it.
    "correct": exceeded({ ...IU, history: [...IU.history, Message.user("fix it")], progress: tally(1, 10, 5, "stop", 1) }),
    "restore": state(noCall(IU)),
    "awaitTools": same("Idle, its turns used up"),
    // Was a bug: requestNext asked for turn 2 of 1.
    "requestNext": found({ _tag: "Rejected", state: IU, reason: "MaxTurnsExceeded" }),
    "abort": state({ ...IU, progress: undefined }),
    "hasBatch": { value: false }
  },
  "AwaitingTools, its turns used up": {
    "submit": "TurnInProgress",
    "receiveCompletion (text)": "NotWaitingForCompletion",
    "receiveCompletion (calls)": "NotWaitingForCompletion",
    // The results are kept, the loop idle again.
    "receiveToolOutputs": exceeded({ ...TU, history: answered(TU), status: "Idle", pending: [] }),
    "receiveToolOutputs (correction)": exceeded({ ...TU, history: answered(TU), status: "Idle", pending: [], progress: tally(1, 10, 5, "tool-calls", 1) }),
    "receiveToolOutputs (an invented call)": "InvalidToolResults",
    // Ending the run asks for no turn.
    "finish": step({ ...TU, history: answered(TU), status: "Idle", pending: [] }, { _tag: "Complete", text: "answer" }),
    "park": step({ ...TU, status: "AwaitingApproval", finished: [output("a")] }, { _tag: "Wait" }),
    "proceed": step(TU, { _tag: "RunTools", calls: [call("a"), call("b")], known: [], announced: false }),
    "correct": "TurnInProgress",
    "restore": state(waitingAgain(TU)),
    "awaitTools": same("AwaitingTools, its turns used up"),
    "requestNext": "TurnInProgress",
    "abort": state(aborted(TU)),
    "hasBatch": { value: true }
  }
}

const plainOutcome = (outcome: Loop.Step | Loop.State | boolean) =>
  typeof outcome === "boolean" ? outcome : "_tag" in outcome ? plainStep(outcome) : plain(outcome)

const cells = Object.entries(matrix).flatMap(([row, cells]) =>
  Object.entries(cells).map(([input, cell]) => ({ row: row as Row, input: input as Input, cell }))
)

const check = ({ cell, input, row }: (typeof cells)[number]) => {
  const from = rows[row]
  const outcome = inputs[input](from)
  if (typeof cell === "string") {
    assert.deepStrictEqual(plainOutcome(outcome), { _tag: "Rejected", state: fixtures[row], reason: cell })
    assert.strictEqual(typeof outcome === "object" && "_tag" in outcome && outcome.state, from)
  } else {
    assert.deepStrictEqual(plainOutcome(outcome), cell.value)
  }
}

const named = ({ cell, input, row }: (typeof cells)[number]) => {
  const rejection = typeof cell === "string" ? cell : (cell.value as { readonly reason?: string }).reason
  return `${row} × ${input}: ${rejection === undefined ? "accepted" : `rejected, ${rejection}`}`
}

describe("Loop states", () => {
  it("each row is the state a run reaches", () => {
    for (const row of Object.keys(rows) as Array<Row>) assert.deepStrictEqual(plain(rows[row]), fixtures[row], row)
  })

  it("the matrix covers every state and every input", () => {
    assert.deepStrictEqual(cells.length, Object.keys(rows).length * Object.keys(inputs).length)
  })

  for (const cell of cells.filter(({ cell }) => typeof cell === "string" || cell.found !== true)) it(named(cell), () => check(cell))

  it("a prompt queued behind a restored batch is submitted once the batch's run completes", () => {
    const restored = Loop.restore(make(3, [go, calling("a")]), [], false)
    const going = Loop.proceed(restored, "queued")
    assert.deepStrictEqual(plainStep(going), {
      _tag: "Next",
      state: { ...plain(restored), progress: tally(2, 0, 0, "other"), then: "queued" },
      action: { _tag: "RunTools", calls: [call("a")], known: [], announced: false }
    })
    const asked = next(Loop.receiveToolOutputs(next(going), [output("a")]))
    const queued = Loop.receiveCompletion(asked, reply("batch done"), undefined, spent(1, 1, "stop"))
    const history = [go, calling("a"), result("a"), reply("batch done"), Message.user("queued")]
    assert.deepStrictEqual(plainStep(queued), {
      _tag: "Next",
      state: { ...base, history, status: "AwaitingCompletion", turn: 1, progress: tally(5, 0, 0, "other") },
      action: { _tag: "Request", request: { system: "sys", messages: history }, turn: 1 }
    })
  })

  it("a reply's repeated and missing call ids are made unique, and the history keeps them so", () => {
    const parts = [call("x"), call("x"), Message.toolCallPart({ id: "", name: "tool_", input: {} }), call("x_2")]
    const step = Loop.receiveCompletion(completion, Message.assistant(parts))
    const renamed = [call("x"), Message.toolCallPart({ id: "x_2", name: "tool_x", input: {} }), Message.toolCallPart({ id: "call_3", name: "tool_", input: {} }), Message.toolCallPart({ id: "x_2_2", name: "tool_x_2", input: {} })]
    assert.deepStrictEqual(plainStep(step), {
      _tag: "Next",
      state: { ...C, history: [go, Message.assistant(renamed)], status: "AwaitingTools", pending: renamed },
      action: { _tag: "RunTools", calls: renamed }
    })
  })

  it("the run's usage sums over its replies, its finish is the last reply's", () => {
    const asked = next(Loop.receiveToolOutputs(tools, [output("a"), output("b")]))
    const done = next(Loop.receiveCompletion(asked, reply("ok"), undefined, spent(7, 1, "length")))
    assert.deepStrictEqual(done.progress, tally(1, 17, 6, "length"))
  })
})

describe("bugs found by these tests (issue 38), fixed", () => {
  for (const cell of cells.filter(({ cell }) => typeof cell !== "string" && cell.found === true)) it(named(cell), () => check(cell))

  it("finish with a prompt queued behind the restored batch submits that prompt, as a reply would", () => {
    const going = next(Loop.proceed(Loop.restore(make(3, [go, calling("a")]), [], false), "queued"))
    const step = Loop.finish(going, [output("a")], "answer")
    const history = [go, calling("a"), result("a"), Message.user("queued")]
    assert.deepStrictEqual(plainStep(step), {
      _tag: "Next",
      state: { ...base, history, status: "AwaitingCompletion", turn: 1, progress: tally(4, 0, 0, "other") },
      action: { _tag: "Request", request: { system: "sys", messages: history }, turn: 1 }
    })
  })
})

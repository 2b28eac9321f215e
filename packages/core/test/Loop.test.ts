import { assert, describe, it } from "@effect/vitest"
import * as History from "../src/History.ts"
import * as Loop from "../src/Loop.ts"
import * as Message from "../src/Message.ts"

const reply = (text: string) => Message.assistant([Message.textPart(text)])
const calling = (...ids: ReadonlyArray<string>) =>
  Message.assistant(ids.map((id) => Message.toolCallPart({ id, name: `tool_${id}`, input: {} })))

const next = (step: Loop.Step) => {
  if (step._tag === "Rejected") throw new Error(`unexpected rejection ${step.reason}`)
  return step
}

describe("Loop", () => {
  it("a submitted prompt becomes the first request, the system prompt travelling beside the history", () => {
    const step = next(Loop.submit(Loop.make({ system: "Be terse." }), "hi"))
    assert.deepStrictEqual(step.action, {
      _tag: "Request",
      turn: 1,
      request: { system: "Be terse.", messages: step.state.history }
    })
    assert.deepStrictEqual(History.toArray(step.state.history), [Message.user("hi")])
    assert.strictEqual(step.state.status, "AwaitingCompletion")
  })

  it("a blank system prompt is no system prompt", () => {
    assert.strictEqual(Loop.make({ system: "  \n" }).system, undefined)
  })

  it("a reply without tool calls completes the run with its text", () => {
    const submitted = next(Loop.submit(Loop.make(), "hi"))
    const done = next(Loop.receiveCompletion(submitted.state, reply("hello")))
    assert.deepStrictEqual(done.action, { _tag: "Complete", text: "hello" })
    assert.strictEqual(done.state.status, "Idle")
    assert.strictEqual(done.state.history.length, 2)
  })

  it("a reply with tool calls asks to run them, then the results in any order are recorded in call order", () => {
    const submitted = next(Loop.submit(Loop.make(), "go"))
    const tools = next(Loop.receiveCompletion(submitted.state, calling("a", "b")))
    assert.deepStrictEqual(tools.action._tag === "RunTools" && tools.action.calls.map((c) => c.id), ["a", "b"])
    const after = next(
      Loop.receiveToolOutputs(tools.state, [
        { callId: "b", content: "B", isError: false },
        { callId: "a", content: "A", isError: true }
      ])
    )
    assert.deepStrictEqual(History.toArray(after.state.history).slice(2), [
      Message.toolResult({ callId: "a", name: "tool_a", content: "A", isError: true }),
      Message.toolResult({ callId: "b", name: "tool_b", content: "B", isError: false })
    ])
    assert.deepStrictEqual(after.action._tag === "Request" && after.action.turn, 2)
  })

  it("a reply's calls run as written, the history keeps them as `shown` makes them", () => {
    const submitted = next(Loop.submit(Loop.make(), "go"))
    const call = Message.toolCallPart({ id: "a", name: "t", input: { key: "s3cret" } })
    const written = Message.assistant([call])
    const hidden = Message.assistant([Message.toolCallPart({ id: "a", name: "t", input: { key: "[hidden]" } })])
    const tools = next(Loop.receiveCompletion(submitted.state, written, () => hidden))
    assert.deepStrictEqual(tools.action, { _tag: "RunTools", calls: [call] })
    assert.deepStrictEqual(tools.state.pending, [call])
    assert.strictEqual(tools.state.history.at(-1), hidden)
    // A reply without calls is kept as it came.
    const done = next(Loop.receiveCompletion(submitted.state, reply("hello"), () => hidden))
    assert.deepStrictEqual(done.state.history.at(-1), reply("hello"))
  })

  it("a result's images are kept with its text in the history", () => {
    const tools = next(Loop.receiveCompletion(next(Loop.submit(Loop.make(), "look")).state, calling("a")))
    const image = Message.imagePart("image/png", "iVBORw0KGgo=")
    const after = next(Loop.receiveToolOutputs(tools.state, [{ callId: "a", content: "Image a.png", isError: false, images: [image] }]))
    assert.deepStrictEqual(
      History.toArray(after.state.history).at(-1),
      Message.toolResult({ callId: "a", name: "tool_a", content: "Image a.png", isError: false, images: [image] })
    )
  })

  it("refuses out-of-order input and leaves the state as it was", () => {
    const idle = Loop.make()
    assert.deepStrictEqual(Loop.receiveCompletion(idle, reply("x")), { _tag: "Rejected", state: idle, reason: "NotWaitingForCompletion" })
    assert.deepStrictEqual(Loop.receiveToolOutputs(idle, []), { _tag: "Rejected", state: idle, reason: "NotWaitingForTools" })
    const busy = next(Loop.submit(idle, "hi")).state
    assert.deepStrictEqual(Loop.submit(busy, "again"), { _tag: "Rejected", state: busy, reason: "TurnInProgress" })
  })

  it("refuses tool results that miss, repeat or invent a call, so the caller can retry", () => {
    const waiting = next(Loop.receiveCompletion(next(Loop.submit(Loop.make(), "go")).state, calling("a", "b"))).state
    for (
      const outputs of [
        [{ callId: "a", content: "", isError: false }],
        [{ callId: "a", content: "", isError: false }, { callId: "a", content: "", isError: false }],
        [{ callId: "a", content: "", isError: false }, { callId: "c", content: "", isError: false }]
      ]
    ) {
      assert.deepStrictEqual(Loop.receiveToolOutputs(waiting, outputs), { _tag: "Rejected", state: waiting, reason: "InvalidToolResults" })
    }
  })

  it("ends a run that needs more than maxTurns requests with MaxTurnsExceeded, idle and with its results kept", () => {
    let state = next(Loop.submit(Loop.make({ maxTurns: 2 }), "loop")).state
    state = next(Loop.receiveCompletion(state, calling("1"))).state
    state = next(Loop.receiveToolOutputs(state, [{ callId: "1", content: "", isError: false }])).state
    state = next(Loop.receiveCompletion(state, calling("2"))).state
    const step = Loop.receiveToolOutputs(state, [{ callId: "2", content: "r2", isError: false }])
    assert.strictEqual(step._tag, "Rejected")
    assert.strictEqual(step._tag === "Rejected" && step.reason, "MaxTurnsExceeded")
    assert.strictEqual(step.state.status, "Idle")
    assert.strictEqual(step.state.history.length, 5)
    assert.strictEqual(next(Loop.submit(step.state, "again")).action._tag, "Request")
  })

  it("aborting answers the pending calls so the history stays valid, and leaves the loop idle", () => {
    const waiting = next(Loop.receiveCompletion(next(Loop.submit(Loop.make(), "go")).state, calling("a"))).state
    const aborted = Loop.abort(waiting, "Interrupted by the user")
    assert.strictEqual(aborted.status, "Idle")
    assert.deepStrictEqual(aborted.history.at(-1), Message.toolResult({ callId: "a", name: "tool_a", content: "Interrupted by the user", isError: true }))
    assert.strictEqual(next(Loop.submit(aborted, "next")).state.turn, 1)
  })

  it("a resumed history ending with unanswered calls waits for their results again (awaitTools); any other is left as it is", () => {
    const history = History.fromIterable([Message.user("go"), calling("a", "b")])
    const waiting = Loop.awaitTools(Loop.make({ history }))
    assert.strictEqual(waiting.status, "AwaitingTools")
    assert.deepStrictEqual(waiting.pending.map((call) => call.id), ["a", "b"])
    const step = next(Loop.receiveToolOutputs(waiting, [
      { callId: "b", content: "B", isError: false },
      { callId: "a", content: "A", isError: false }
    ]))
    assert.strictEqual(step.action._tag, "Request")
    const idle = Loop.make({ history: History.fromIterable([Message.user("go"), reply("done")]) })
    assert.strictEqual(Loop.awaitTools(idle), idle)
  })

  it("a resumed history ending with results the model has not read asks for its next turn (requestNext); a run in progress is refused", () => {
    const history = History.fromIterable([Message.user("go"), calling("a"), Message.toolResult({ callId: "a", name: "t", content: "A", isError: false })])
    const step = next(Loop.requestNext(Loop.make({ history })))
    assert.deepStrictEqual([step.state.status, step.state.turn, step.action], [
      "AwaitingCompletion",
      1,
      { _tag: "Request", request: { system: undefined, messages: history }, turn: 1 }
    ])
    const waiting = Loop.awaitTools(Loop.make({ history: History.fromIterable([Message.user("go"), calling("a")]) }))
    assert.deepStrictEqual(Loop.requestNext(waiting), { _tag: "Rejected", state: waiting, reason: "TurnInProgress" })
  })

  it("a batch restored with where its run stood goes on counting from there: its turns, tokens, corrections and queued prompt", () => {
    const history = History.fromIterable([Message.user("go"), calling("a")])
    const saved: Loop.Saved = {
      turn: 4,
      progress: { from: 1, usage: { inputTokens: 30, outputTokens: 9 }, finishReason: "tool-calls", retries: 1 },
      then: "and then"
    }
    const restored = Loop.restore(Loop.make({ history, maxTurns: 5 }), [], false, saved)
    assert.deepStrictEqual([restored.status, restored.turn, restored.progress, restored.then], ["AwaitingTools", 4, saved.progress, "and then"])
    const ran = next(Loop.proceed(restored))
    const asked = next(Loop.receiveToolOutputs(ran.state, [{ callId: "a", content: "A", isError: false }]))
    assert.deepStrictEqual(asked.action, { _tag: "Request", request: { system: undefined, messages: asked.state.history }, turn: 5 })
    const answered = next(Loop.receiveCompletion(asked.state, reply("done"), undefined, { usage: { inputTokens: 1, outputTokens: 1 }, finishReason: "stop" }))
    // The queued prompt is submitted once the restored run's reply comes; the progress kept its tally until then.
    assert.strictEqual(answered.action._tag, "Request")
    assert.strictEqual(answered.state.turn, 1)
    // Past maxTurns, counted from the restored turn: a restored run at its limit asks no more.
    const spent = Loop.restore(Loop.make({ history, maxTurns: 4 }), [{ callId: "a", content: "A", isError: false }], false, saved)
    const outputs = next(Loop.proceed(spent))
    assert.strictEqual(Loop.receiveToolOutputs(outputs.state, [{ callId: "a", content: "A", isError: false }])._tag, "Rejected")
  })
})

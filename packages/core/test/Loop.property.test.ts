/**
 * The Loop under random interleavings of its inputs: prompts, replies of 0–3 calls (ids repeated
 * or empty), results in any order (sometimes missing, repeated or invented), parks with some calls
 * finished, answers going on, corrections, aborts, and restarts from what a store saved. Every
 * input goes through the Loop's own functions; after each one the invariants below hold. The
 * interpreter's saves are modelled as runtime/interpreter.ts makes them, so "no turn saved twice"
 * is checked on the histories a store would have received.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import * as History from "../src/History.ts"
import * as Loop from "../src/Loop.ts"
import * as Message from "../src/Message.ts"

/** A command: one input, its parameters read from the digits of one number (so a failing run shrinks). */
const commands = Arbitrary.array(Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 }))), { minLength: 20, maxLength: 60 })

/** Reads small choices off a number, one after the other. */
class Dice {
  #n: number
  constructor(n: number) {
    this.#n = n
  }
  roll(sides: number): number {
    const face = this.#n % sides
    this.#n = Math.floor(this.#n / sides)
    return face
  }
}

const IDS = ["a", "b", "a", "", "c"]
const output = (callId: string): Loop.ToolOutput => ({ callId, content: `result of ${callId}`, isError: false })

/** The outputs for `state`'s pending calls, shuffled; sometimes one is missing, repeated or invented. */
const outputsFor = (state: Loop.State, dice: Dice): Array<Loop.ToolOutput> => {
  const outputs = state.pending.map((call) => output(call.id))
  for (let i = outputs.length - 1; i > 0; i--) {
    const j = dice.roll(i + 1)
    ;[outputs[i], outputs[j]] = [outputs[j]!, outputs[i]!]
  }
  switch (dice.roll(8)) {
    case 0:
      return outputs.slice(1)
    case 1:
      return outputs.length === 0 ? outputs : [...outputs, outputs[0]!]
    case 2:
      return [...outputs, output("invented")]
    default:
      return outputs
  }
}

/** The store as the interpreter writes it: the last snapshot's history and batch. */
interface Store {
  readonly history: History.History
  /** `answered`: a batch whose calls are all answered (the run in flight); `finished`: a batch running or parked. */
  readonly batch: undefined | "answered" | { readonly finished: ReadonlyArray<Loop.ToolOutput> }
}

interface World {
  state: Loop.State
  store: Store | undefined
  /** Every save the store received, with whether it saved a completed turn. */
  readonly saves: Array<{ readonly history: History.History; readonly turn: boolean }>
}

const save = (world: World, batch: Store["batch"], turn: boolean) => {
  world.store = { history: world.state.history, batch }
  world.saves.push({ history: world.state.history, turn })
}

/** What interpreter.ts saves after a step: a completed turn (`feed`), a batch as its calls start, a batch parked. */
const saveAfter = (world: World, step: Loop.Step, feeds: boolean) => {
  const state = step.state
  if (step._tag === "Next" && step.action._tag === "RunTools" && step.action.calls.length > 0) return save(world, { finished: state.finished }, false)
  if (step._tag === "Next" && step.action._tag === "Wait") return save(world, { finished: state.finished }, false)
  if (feeds && state.status !== "AwaitingTools") save(world, state.status === "AwaitingCompletion" ? "answered" : undefined, true)
}

const make = (history?: History.History) => Loop.make({ system: "sys", maxTurns: 4, history })

/** A restart: the session resumes from the store (persistence.ts `resume`, then the first run's `restore`). */
const restart = (world: World, dice: Dice): Loop.State => {
  const store = world.store
  if (store === undefined) return make()
  const state = make(store.history)
  if (store.batch === undefined) return state
  const finished = store.batch === "answered" ? [] : store.batch.finished
  return Loop.restore(Loop.awaitTools(state), finished, dice.roll(2) === 0)
}

/** The current history restored as a store holding it would: a batch at its end waits again, any other is idle or in flight. */
const restoreHere = (state: Loop.State, dice: Dice): Loop.State => {
  const fresh = make(state.history)
  switch (dice.roll(3)) {
    case 0:
      return Loop.awaitTools(fresh)
    case 1: {
      const finished = state.pending.filter(() => dice.roll(2) === 0).map((call) => output(call.id))
      return Loop.restore(fresh, finished, dice.roll(2) === 0)
    }
    default: {
      const last = state.history.at(-1)
      return last?._tag === "AssistantMessage" && Message.toolCalls(last).length > 0 ? Loop.awaitTools(fresh) : fresh
    }
  }
}

const reply = (dice: Dice) => {
  const calls = dice.roll(4)
  const parts: Array<Message.AssistantPart> = [Message.textPart("reply")]
  for (let i = 0; i < calls; i++) parts.push(Message.toolCallPart({ id: IDS[dice.roll(IDS.length)]!, name: "tool", input: { i } }))
  return Message.assistant(parts)
}

/** The calls still waiting: those without a result in `finished`. */
const unfinished = (state: Loop.State) => state.pending.filter((call) => !state.finished.some((output) => output.callId === call.id))

/** Mostly an input the state takes, so runs go deep: the numbers of `apply`'s cases, the likelier repeated. */
const FITTING: Record<Loop.Status, ReadonlyArray<number>> = {
  Idle: [0, 0, 0, 8, 9, 10, 11, 12],
  AwaitingCompletion: [1, 1, 1, 1, 1, 2, 10, 11],
  AwaitingTools: [3, 3, 3, 4, 5, 6, 6, 7, 10, 11, 12],
  AwaitingApproval: [7, 7, 7, 10, 11, 12]
}
const fitting = (state: Loop.State, dice: Dice) => {
  const choices = FITTING[state.status]
  return choices[dice.roll(choices.length)]!
}

/** One input, through the Loop's functions; the step, or the state for `restore`, `abort` and the like. */
const apply = (world: World, n: number): void => {
  const dice = new Dice(n)
  const before = world.state
  const stepped = (step: Loop.Step, feeds: boolean) => {
    checkStep(before, step)
    world.state = step.state
    if (step._tag === "Next" || step.reason === "MaxTurnsExceeded") saveAfter(world, step, feeds)
  }
  const kind = dice.roll(4) === 0 ? dice.roll(13) : fitting(before, dice)
  switch (kind) {
    case 0:
      return stepped(Loop.submit(before, "prompt"), false)
    case 1:
    case 2:
      return stepped(Loop.receiveCompletion(before, reply(dice), undefined, { usage: { inputTokens: 1, outputTokens: 1 }, finishReason: "stop" }), true)
    case 3:
    case 4:
      return stepped(Loop.receiveToolOutputs(before, outputsFor(before, dice), dice.roll(3) === 0), true)
    case 5:
      return stepped(Loop.finish(before, outputsFor(before, dice), "answer"), true)
    case 6:
      return stepped(Loop.park(before, unfinished(before).filter(() => dice.roll(2) === 0).map((call) => output(call.id))), false)
    case 7:
      return stepped(Loop.proceed(before, dice.roll(2) === 0 ? "queued" : undefined), false)
    case 8:
      return stepped(Loop.correct(before, "that did not decode"), false)
    case 9:
      return stepped(Loop.requestNext(before), false)
    case 10: {
      const after = Loop.abort(before, "aborted")
      const appended = History.toArray(after.history).slice(before.history.length)
      assert.isTrue(History.startsWith(after.history, before.history), "an abort only appends")
      assert.deepStrictEqual(appended, before.pending.map((call) => Message.toolResult({ callId: call.id, name: call.name, content: "aborted", isError: true })))
      world.state = after
      // A batch saved waiting ended with its run: the store must not offer it again (Conversation `aborted`).
      if (world.store?.batch !== undefined) save(world, undefined, false)
      return
    }
    case 11: {
      const after = restart(world, dice)
      assert.isTrue(History.startsWith(before.history, after.history), "a restart goes back to what the store saved")
      world.state = after
      return
    }
    default: {
      const after = restoreHere(before, dice)
      assert.isTrue(History.startsWith(after.history, before.history) && after.history.length === before.history.length, "a restore keeps the history")
      world.state = after
      return
    }
  }
}

/** A step: a rejection leaves the state as it was (or idle, its results kept, when out of turns); the history only grows. */
const checkStep = (before: Loop.State, step: Loop.Step) => {
  if (step._tag === "Rejected" && step.reason !== "MaxTurnsExceeded") assert.strictEqual(step.state, before, `rejected (${step.reason}) with the state unchanged`)
  if (step._tag === "Rejected" && step.reason === "MaxTurnsExceeded") assert.deepStrictEqual([step.state.status, step.state.pending, step.state.finished], ["Idle", [], []])
  assert.isTrue(History.startsWith(step.state.history, before.history), "the history only grows")
  if (step._tag === "Next" && step.action._tag === "RunTools") {
    // A batch going on runs every pending call that has no result yet, and only those.
    const ids = (calls: ReadonlyArray<{ readonly id: string }>) => calls.map((call) => call.id)
    const known = new Set((step.action.known ?? []).map((output) => output.callId))
    assert.deepStrictEqual(ids(step.action.calls), ids(step.state.pending.filter((call) => !known.has(call.id))))
  }
}

/**
 * The history as a provider reads it: each message of calls is followed by exactly one result per
 * call before any other message. Gives the calls still unanswered at the end (the batch waiting).
 */
const unanswered = (history: History.History): Array<string> => {
  let open: Array<string> = []
  for (const message of history) {
    switch (message._tag) {
      case "ToolResultMessage": {
        const i = open.indexOf(message.callId)
        assert.isTrue(i >= 0, `the result for ${message.callId} answers a call waiting for it, once`)
        open = [...open.slice(0, i), ...open.slice(i + 1)]
        break
      }
      default:
        assert.deepStrictEqual(open, [], `every call is answered before the next ${message._tag}`)
        if (message._tag === "AssistantMessage") {
          open = Message.toolCalls(message).map((call) => call.id)
          assert.strictEqual(new Set(open).size, open.length, "a message's call ids are unique")
        }
    }
  }
  return open
}

const checkState = (state: Loop.State) => {
  const open = unanswered(state.history)
  const batch = state.status === "AwaitingTools" || state.status === "AwaitingApproval"
  assert.strictEqual(Loop.hasBatch(state), batch)
  // (a), (d): idle or asking, no call waits; with a batch, the pending calls are the last message's
  // unanswered ones, or none for a batch in flight (its results recorded, the next turn due).
  assert.deepStrictEqual(open, state.pending.map((call) => call.id))
  if (!batch) assert.deepStrictEqual([state.pending, state.finished], [[], []])
  // (b) what finished answers a pending call, once.
  const finished = state.finished.map((output) => output.callId)
  assert.strictEqual(new Set(finished).size, finished.length, "no call finished twice")
  for (const id of finished) assert.include(open, id)
  // (c)
  assert.isTrue(state.turn >= 0 && state.turn <= state.maxTurns, `turn ${state.turn} within ${state.maxTurns}`)
}

/** (f) Each save extends the one before; a completed turn's save adds to it: no turn is saved twice. */
const checkSaves = (saves: World["saves"]) => {
  for (let i = 1; i < saves.length; i++) {
    const [previous, save] = [saves[i - 1]!, saves[i]!]
    assert.isTrue(History.startsWith(save.history, previous.history), `save ${i} extends save ${i - 1}`)
    if (save.turn) assert.isTrue(save.history.length > previous.history.length, `save ${i} adds a turn to save ${i - 1}`)
  }
}

describe("Loop properties", () => {
  it.prop("every interleaving of inputs keeps the history one a provider accepts, within its turns, no turn saved twice", [commands], ([commands]) => {
    const world: World = { state: make(), store: undefined, saves: [] }
    for (const n of commands) {
      apply(world, n)
      checkState(world.state)
    }
    checkSaves(world.saves)
  }, { arbitrary: { runs: 200, seed: 38 } })
})

/**
 * bench/history — a long session must not slow down as its history grows.
 *
 * One session runs 10,000 runs in a row (each: the model calls a noop tool, then answers, so four
 * messages join the history per run: 40,000 at the end). The baseline is the same session's own
 * first runs: the median time of runs 1–500 against runs 9,501–10,000, in the same process, after
 * a throwaway session of 2,000 runs has warmed the JIT up (else the first runs look slow). The
 * model is a bare `Model` that answers without reading the history (a real provider serialises the
 * whole conversation on every request; what is measured here is the runtime's own cost per run).
 * Goal: the late runs cost ≤ 1.2× the early ones.
 *
 * Run: node_modules/.bin/node bench/history.ts [--runs=N]
 */
import { Agent, Model, Sandbox, Session, Tool } from "@condukt/core"
import { Effect, Schema, Stream } from "effect"
import { report } from "./report.ts"

const RUNS = Number(process.argv.find((a) => a.startsWith("--runs="))?.slice(7) ?? 10_000)
const WINDOW = Math.min(500, Math.floor(RUNS / 4))
const GOAL = 1.2

const Noop = Tool.make("noop", { description: "Does nothing", parameters: Schema.Struct({}), call: () => Effect.succeed("ok") })

const callThenAnswer: ReadonlyArray<Model.Part> = [
  { _tag: "ToolCall", id: "call_1", name: "noop", input: {} },
  { _tag: "Usage", inputTokens: 10, outputTokens: 5 },
  { _tag: "Finish", reason: "tool-calls" }
]
const answer: ReadonlyArray<Model.Part> = [
  { _tag: "TextDelta", text: "done" },
  { _tag: "Usage", inputTokens: 10, outputTokens: 5 },
  { _tag: "Finish", reason: "stop" }
]

/** Calls the tool after a prompt, answers after the tool's result: it looks only at the last message. */
const bare = Model.Model.of({
  name: "bench:bare",
  stream: (request) => Stream.fromIterable(request.messages.at(-1)?._tag === "UserMessage" ? callThenAnswer : answer)
})

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const agent = Agent.make({ name: "long", model: "bench:bare", tools: [Noop] })

const warmUp = Effect.scoped(Effect.gen(function*() {
  const session = yield* Session.start(agent)
  for (let i = 0; i < 2000; i++) yield* session.run("go")
}))

const program = Effect.gen(function*() {
  yield* warmUp
  const session = yield* Session.start(agent)
  const times: Array<number> = []
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now()
    const result = yield* session.run("go")
    times.push(performance.now() - start)
    if (result.text !== "done") throw new Error(`unexpected final text: ${result.text}`)
  }
  const messages = (yield* session.history).length
  return { times, messages }
}).pipe(Effect.scoped, Effect.provideService(Model.Model, bare), Effect.provide(Sandbox.layerNoop()))

const { messages, times } = await Effect.runPromise(program)
const early = median(times.slice(0, WINDOW))
const late = median(times.slice(-WINDOW))
const ratio = late / early
console.log(`one session, ${RUNS} runs, ${messages} messages in its history at the end`)
console.log(`runs 1-${WINDOW}: ${(early * 1000).toFixed(1)} µs/run (median)`)
console.log(`runs ${RUNS - WINDOW + 1}-${RUNS}: ${(late * 1000).toFixed(1)} µs/run (median)`)
console.log(`ratio ${ratio.toFixed(2)}x (goal <= ${GOAL}x): ${ratio <= GOAL ? "met" : "missed"}`)
report({
  benchmark: `history: runs ${RUNS - WINDOW + 1}-${RUNS} / runs 1-${WINDOW} (median)`,
  ours: `${(late * 1000).toFixed(1)} µs/run`,
  baseline: `${(early * 1000).toFixed(1)} µs/run`,
  ratio,
  goal: `≤ ${GOAL}×`,
  met: ratio <= GOAL
})

/**
 * bench/turns — what one agent turn costs in the framework itself, the model and the tool free.
 *
 * A run is 20 model turns: 19 replies calling a `noop` tool, then a final text. Ours: a session
 * on a scripted `TestModel` (`Session.start` + `session.run`), timed with the session start and
 * stop inside the timed region and without it (the session started, untimed, before each run);
 * every session runs on one LocalSandbox built beforehand (the noop tool never touches it). A
 * diagnostic line runs the same script from a bare `Model` over prebuilt parts, which shows how
 * much of our turn is the TestModel's own plumbing rather than the runtime's. Peer: the Vercel AI SDK's `generateText` on its mock language model, scripted the same way, one
 * trivial tool, 20 steps. Runs are interleaved run by run, in a shuffled order each round, so drift
 * in the machine's load and the garbage one variant leaves for the next hit every variant alike; the numbers are medians over all runs, divided by 20. Goal: ours ≤ 0.3× the AI SDK
 * per turn, the run alone and with the session's start and stop (issue 22).
 *
 * Per session, apart from per turn: a session started, run once (one reply, no tool) and stopped,
 * on a directory without project instructions and on one with an AGENTS.md and a skill (read by
 * the first run), as a checked-out project has them: written an hour ago, not this second (a file
 * modified in the last two seconds is read by every session, `ProjectInstructions.RECENT_MS`).
 * Reported in µs per session; goal: with instructions ≤ 2× without.
 *
 * Run: node_modules/.bin/node bench/turns.ts
 */
import { Agent, Model, type Sandbox, Session, Tool } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { generateText, stepCountIs, tool } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Context, Effect, Exit, Layer, Schema, Scope, Stream } from "effect"
import { z } from "zod"
import { report } from "./report.ts"

const TURNS = 20
const WARMUP = 200
const RUNS = Number(process.env["BENCH_RUNS"] ?? 600)
const GOAL = 0.3

// ---------------------------------------------------------------------------------------------
// Ours
// ---------------------------------------------------------------------------------------------

const Noop = Tool.make("noop", {
  description: "Does nothing",
  parameters: Schema.Struct({}),
  call: () => Effect.succeed("ok")
})

const agent = Agent.make({ name: "bench", model: "test:scripted", tools: [Noop] })

const script = [...Array.from({ length: TURNS - 1 }, () => TestModel.toolCall("noop", {})), TestModel.text("done")]

const check = ({ text }: { readonly text: string }) => {
  if (text !== "done") throw new Error(`unexpected final text: ${text}`)
}

/** Session start, the run and the session's stop, all timed. */
const oursWithStart = (sandbox: Context.Context<Sandbox.Sandbox>): Promise<number> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const start = performance.now()
      yield* Effect.scoped(Effect.flatMap(Session.start(agent), (session) => session.run("go")).pipe(Effect.map(check)))
      return performance.now() - start
    }).pipe(Effect.provide(TestModel.layer(script)), Effect.provide(sandbox))
  )

/** A session's whole life on `sandbox`: start, a run of one reply, stop. */
const oneSession = (sandbox: Context.Context<Sandbox.Sandbox>): Promise<number> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const start = performance.now()
      yield* Effect.scoped(Effect.flatMap(Session.start(agent), (session) => session.run("go")).pipe(Effect.map(check)))
      return performance.now() - start
    }).pipe(Effect.provide(TestModel.layer([TestModel.text("done")])), Effect.provide(sandbox))
  )

/**
 * A diagnostic, not the goal: the same script from a bare `Model` streaming prebuilt parts, to
 * separate the runtime's cost from the TestModel's own (its recorder and its Stream plumbing).
 */
const bareParts: ReadonlyArray<ReadonlyArray<Model.Part>> = [
  ...Array.from({ length: TURNS - 1 }, (_, i): ReadonlyArray<Model.Part> => [
    { _tag: "ToolCall", id: `call_${i + 1}`, name: "noop", input: {} },
    { _tag: "Usage", inputTokens: 10, outputTokens: 5 },
    { _tag: "Finish", reason: "tool-calls" }
  ]),
  [{ _tag: "TextDelta", text: "done" }, { _tag: "Usage", inputTokens: 10, outputTokens: 5 }, { _tag: "Finish", reason: "stop" }]
]

const bareModel = (): Layer.Layer<Model.Model> =>
  Layer.sync(Model.Model, () => {
    let next = 0
    return Model.Model.of({ name: "bench:bare", stream: () => Stream.fromIterable(bareParts[next++] ?? []) })
  })

/** The session is started before the clock starts and stopped after it stops. */
const oursRunOnly = (sandbox: Context.Context<Sandbox.Sandbox>, model: Layer.Layer<Model.Model> = TestModel.layer(script)): Promise<number> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const session = yield* Session.start(agent).pipe(Scope.provide(scope))
      const start = performance.now()
      check(yield* session.run("go"))
      const elapsed = performance.now() - start
      yield* Scope.close(scope, Exit.void)
      return elapsed
    }).pipe(Effect.provide(model), Effect.provide(sandbox))
  )

// ---------------------------------------------------------------------------------------------
// Peer: the AI SDK
// ---------------------------------------------------------------------------------------------

/** What the mock's `doGenerate` resolves to (the provider spec's type, without depending on it). */
type GenerateResult = Awaited<ReturnType<MockLanguageModelV4["doGenerate"]>>

const usage: GenerateResult["usage"] = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 }
}

const replies: Array<GenerateResult> = [
  ...Array.from({ length: TURNS - 1 }, (_, i): GenerateResult => ({
    content: [{ type: "tool-call", toolCallId: `call_${i + 1}`, toolName: "noop", input: "{}" }],
    finishReason: { unified: "tool-calls", raw: "tool_use" },
    usage,
    warnings: []
  })),
  { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: "end_turn" }, usage, warnings: [] }
]

const tools = { noop: tool({ description: "Does nothing", inputSchema: z.object({}), execute: async () => "ok" }) }

const aiSdk = async (): Promise<number> => {
  const start = performance.now()
  const result = await generateText({
    model: new MockLanguageModelV4({ doGenerate: replies }),
    tools,
    prompt: "go",
    stopWhen: stepCountIs(TURNS)
  })
  const elapsed = performance.now() - start
  check(result)
  if (result.steps.length !== TURNS) throw new Error(`AI SDK made ${result.steps.length} steps, not ${TURNS}`)
  return elapsed
}

// ---------------------------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------------------------

interface Variant {
  readonly name: string
  readonly once: () => Promise<number>
  readonly times: Array<number>
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/**
 * The variants in a fresh order each round (a fixed-seed shuffle, so every run of the bench uses
 * the same orders): the garbage one variant leaves is collected during whichever runs next, and
 * in a fixed order the one after the AI SDK (which allocates several times what a session does)
 * would always pay for it.
 */
let seed = 0x2545f491
const shuffled = <A>(variants: ReadonlyArray<A>): ReadonlyArray<A> => {
  const order = [...variants]
  for (let i = order.length - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0
    const j = seed % (i + 1)
    const swap = order[i]!
    order[i] = order[j]!
    order[j] = swap
  }
  return order
}

const main = async () => {
  // One LocalSandbox for every session, provided around them (the noop tool never touches it). Its
  // directory dated an hour ago, as a checked-out project's is: one changed in the last two seconds
  // is listed again by every session's first run (`ProjectInstructions.RECENT_MS`), which is a
  // directory being edited, not the turn this measures (the per-session figures below do the same).
  const cwd = mkdtempSync(join(tmpdir(), "condukt-bench-turns-"))
  const anHourAgo = new Date(Date.now() - 3_600_000)
  utimesSync(cwd, anHourAgo, anHourAgo)
  const scope = Scope.makeUnsafe()
  const sandbox = await Effect.runPromise(Layer.buildWithScope(LocalSandbox.layer({ cwd }).pipe(Layer.provide(Condukt.layer)), scope))
  const variants: Array<Variant> = [
    { name: "AI SDK generateText (peer)", once: aiSdk, times: [] },
    { name: "Condukt session.run", once: () => oursRunOnly(sandbox), times: [] },
    { name: "Condukt start + run + stop", once: () => oursWithStart(sandbox), times: [] },
    { name: "Condukt session.run, bare Model", once: () => oursRunOnly(sandbox, bareModel()), times: [] }
  ]
  for (let i = 0; i < WARMUP; i++) for (const variant of variants) await variant.once()
  for (let i = 0; i < RUNS; i++) for (const variant of shuffled(variants)) variant.times.push(await variant.once())
  // Per session: a directory without instructions, and one with AGENTS.md and a skill.
  const bare = mkdtempSync(join(tmpdir(), "condukt-bench-session-"))
  const project = mkdtempSync(join(tmpdir(), "condukt-bench-project-"))
  writeFileSync(join(project, "AGENTS.md"), "# Project\n\nRun the tests before you commit.\n".repeat(20))
  mkdirSync(join(project, ".agents/skills/release"), { recursive: true })
  writeFileSync(join(project, ".agents/skills/release/SKILL.md"), "---\nname: release\ndescription: Cuts a release\n---\nSteps.\n")
  const hourAgo = new Date(Date.now() - 3_600_000)
  for (const file of ["AGENTS.md", ".agents/skills/release/SKILL.md"]) utimesSync(join(project, file), hourAgo, hourAgo)
  const sandboxOf = (dir: string) => Effect.runPromise(Layer.buildWithScope(LocalSandbox.layer({ cwd: dir }).pipe(Layer.provide(Condukt.layer)), scope))
  const sessions: Array<Variant> = [
    { name: "session, no instructions", once: async () => oneSession(await bareSandbox), times: [] },
    { name: "session, AGENTS.md + a skill", once: async () => oneSession(await projectSandbox), times: [] }
  ]
  const bareSandbox = sandboxOf(bare)
  const projectSandbox = sandboxOf(project)
  for (let i = 0; i < WARMUP; i++) for (const variant of sessions) await variant.once()
  for (let i = 0; i < RUNS; i++) for (const variant of shuffled(sessions)) variant.times.push(await variant.once())
  await Effect.runPromise(Scope.close(scope, Exit.void))
  for (const dir of [cwd, bare, project]) rmSync(dir, { recursive: true, force: true })

  const peer = median(variants[0]!.times) / TURNS
  console.log(`${RUNS} runs of ${TURNS} turns each (19 noop tool calls + final text), ${WARMUP} warm-up runs`)
  for (const variant of variants) {
    const perTurn = median(variant.times) / TURNS
    const p90 = [...variant.times].sort((a, b) => a - b)[Math.floor(variant.times.length * 0.9)]! / TURNS
    console.log(
      `${variant.name.padEnd(32)} ${(perTurn * 1000).toFixed(1).padStart(7)} µs/turn (median; p90 ${(p90 * 1000).toFixed(1)} µs)  ` +
        `ratio ${(perTurn / peer).toFixed(2)}x`
    )
  }
  const ratio = median(variants[1]!.times) / TURNS / peer
  const withStart = median(variants[2]!.times) / TURNS / peer
  console.log(`ratio ${ratio.toFixed(2)}x, with start and stop ${withStart.toFixed(2)}x (goal <= ${GOAL}x): ${ratio <= GOAL && withStart <= GOAL ? "met" : "missed"}`)
  const [without, withInstructions] = sessions.map((variant) => median(variant.times) * 1000)
  for (const [variant, perSession] of [[sessions[0]!, without!], [sessions[1]!, withInstructions!]] as const) {
    console.log(`${variant.name.padEnd(32)} ${perSession.toFixed(1).padStart(7)} µs/session (median: start, one reply, stop)`)
  }
  report({
    benchmark: "turns: a session with AGENTS.md + a skill / without (start, first run, stop; median)",
    ours: `${withInstructions!.toFixed(1)} µs`,
    baseline: `${without!.toFixed(1)} µs`,
    ratio: withInstructions! / without!,
    goal: "≤ 2×",
    met: withInstructions! / without! <= 2
  })
  report({
    benchmark: "turns: session.run / AI SDK generateText (per turn, median)",
    ours: `${(median(variants[1]!.times) / TURNS * 1000).toFixed(1)} µs`,
    baseline: `${(peer * 1000).toFixed(1)} µs`,
    ratio,
    goal: `≤ ${GOAL}×`,
    met: ratio <= GOAL
  })
  report({
    benchmark: "turns: start + run + stop / AI SDK generateText (per turn, median)",
    ours: `${(median(variants[2]!.times) / TURNS * 1000).toFixed(1)} µs`,
    baseline: `${(peer * 1000).toFixed(1)} µs`,
    ratio: withStart,
    goal: `≤ ${GOAL}×`,
    met: withStart <= GOAL
  })
}

await main()

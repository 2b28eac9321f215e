/**
 * bench/abort — how long `session.abort` takes to end a run, from the call to the run's AgentEnd
 * reaching its stream's reader, with every process the run started gone by then (issue 28).
 *
 * Three places a run can be when it is aborted, each aborted ABORTS times, the variants interleaved
 * abort by abort (so drift in the machine's load hits all alike), one session per variant on a
 * LocalSandbox, its model a stand-in that calls the tool below and answers "done" after a tool
 * result:
 * - inside Bash: the run's Bash call runs `echo $$ > fifo && exec sleep 30`; the abort comes once
 *   the bench has read the pid from the fifo (the `sleep` is running);
 * - inside an MCP call: the call is the fixture server's `sample` (packages/mcp/test/fixtures),
 *   which asks the session's model to sample; the abort comes once that request reaches the model
 *   (the server is inside the call, waiting), whose answer is released after the AgentEnd;
 * - inside a sub-agent's Bash: the run calls a sub-agent (`Agent.asTool`) whose run's Bash call
 *   is the one above.
 * After each AgentEnd the `sleep` must be dead (gone or a zombie), read from /proc: a survivor is
 * counted and fails the goal. Baseline: the same command from a raw `child_process.spawn` of bash,
 * killed with SIGTERM once its pid is read, to its `exit` event. Goal: p99 ≤ 100 ms, each variant.
 *
 * Run: node_modules/.bin/node bench/abort.ts [--aborts=N]
 */
import { Agent, type Message, Model, Session, type SessionEvent, Tools } from "@condukt/core"
import { McpServer } from "@condukt/mcp"
import { Condukt, LocalSandbox } from "@condukt/node"
import { Deferred, Effect, Exit, Fiber, Layer, Scope, Stream } from "effect"
import { execFileSync, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { report } from "./report.ts"

const ABORTS = Number(process.argv.find((a) => a.startsWith("--aborts="))?.slice(9) ?? 200)
const WARMUP = 10
const GOAL_MS = 100

const dir = mkdtempSync(join(tmpdir(), "condukt-bench-abort-"))
const fifo = join(dir, "pid.fifo")
execFileSync("mkfifo", [fifo])
const command = `echo $$ > ${fifo} && exec sleep 30`

/** The pid the command writes into the fifo, once it runs. */
const readPid = (): Promise<number> => readFile(fifo, "utf8").then(Number)

/** Whether `pid` is gone or a zombie (dead, not yet reaped). */
const isDead = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const state = stat.charAt(stat.lastIndexOf(")") + 2)
    return state === "Z" || state === "X"
  } catch {
    return true
  }
}

// ---------------------------------------------------------------------------------------------
// The stand-in model: calls the variant's tool after a prompt, answers after a result; a
// sampling request (no tools) signals `sampled` and answers once `release` is done.
// ---------------------------------------------------------------------------------------------

const inputs: Record<string, unknown> = {
  Bash: { command },
  worker: { prompt: "Sleep" },
  "fx.sample": { count: 1, text: "hello", maxTokens: 10 }
}

let sampled = Deferred.makeUnsafe<void>()
let release = Deferred.makeUnsafe<void>()

const reply = (parts: ReadonlyArray<Model.Part>) => Stream.fromIterable(parts)

const model = Model.Model.of({
  name: "bench:abort",
  stream: (request) => {
    if (request.tools.length === 0) {
      const [signal, answer] = [sampled, release]
      return Stream.fromEffect(Effect.andThen(Deferred.succeed(signal, undefined), Deferred.await(answer))).pipe(
        Stream.flatMap(() => reply([{ _tag: "TextDelta", text: "sampled" }, { _tag: "Finish", reason: "stop" }]))
      )
    }
    const last: Message.Message | undefined = request.messages.at(-1)
    const tool = request.tools.find((spec) => spec.name in inputs)!.name
    return last?._tag === "UserMessage"
      ? reply([{ _tag: "ToolCall", id: "call_1", name: tool, input: inputs[tool] }, { _tag: "Finish", reason: "tool-calls" }])
      : reply([{ _tag: "TextDelta", text: "done" }, { _tag: "Finish", reason: "stop" }])
  }
})

const server = McpServer.stdio({
  name: "fx",
  command: process.execPath,
  args: [resolve(import.meta.dirname, "../packages/mcp/test/fixtures/server.ts")],
  sampling: "allow"
})
const bash = Agent.make({ name: "bash", model: "bench:abort", tools: [Tools.Bash] })
const mcp = Agent.make({ name: "mcp", model: "bench:abort", mcpServers: [server] })
const worker = Agent.make({ name: "worker", model: "bench:abort", tools: [Tools.Bash] })
const parent = Agent.make({ name: "parent", model: "bench:abort", tools: [Agent.asTool(worker, { description: "Does the work" })] })

// ---------------------------------------------------------------------------------------------
// One abort
// ---------------------------------------------------------------------------------------------

interface Sample {
  readonly ms: number
  /** The `sleep` was still alive at the AgentEnd. */
  readonly survived: boolean
}

const isEnd = (event: SessionEvent.SessionEvent) => event._tag === "AgentEnd" && event.agentPath === undefined

/** Starts a run on `session`, waits until it is inside (`inside` says when), aborts it, times the AgentEnd. */
const abortOnce = (session: Session.Session, inside: Effect.Effect<number | undefined>): Effect.Effect<Sample> =>
  Effect.gen(function*() {
    const ended = yield* Deferred.make<number>()
    const reading = yield* Effect.forkChild(
      Stream.runForEach(session.stream("go"), (event) => (isEnd(event) ? Deferred.succeed(ended, performance.now()) : Effect.void))
    )
    const pid = yield* inside
    const start = performance.now()
    yield* session.abort
    const end = yield* Deferred.await(ended)
    const survived = pid !== undefined && !isDead(pid)
    yield* Fiber.join(reading)
    return { ms: end - start, survived }
  }).pipe(Effect.orDie)

const insideBash = Effect.promise(readPid)

const insideMcp = Effect.suspend(() => {
  sampled = Deferred.makeUnsafe<void>()
  release = Deferred.makeUnsafe<void>()
  return Effect.as(Deferred.await(sampled), undefined)
})

/** The baseline: the same command from a raw spawn, SIGTERM once its pid is read, to its exit. */
const rawOnce = (): Promise<Sample> =>
  new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", command], { stdio: ["ignore", "ignore", "ignore"] })
    child.once("error", reject)
    void readPid().then((pid) => {
      const start = performance.now()
      child.once("exit", () => resolve({ ms: performance.now() - start, survived: false }))
      process.kill(pid, "SIGTERM")
    })
  })

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0
}

const main = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const sandbox = LocalSandbox.layer({ cwd: dir })
  const start = <R>(agent: Agent.Agent<R>) =>
    Session.start(agent, { sandbox, projectInstructions: false }).pipe(Scope.provide(scope))
  const sessions = {
    bash: yield* start(bash),
    mcp: yield* start(mcp),
    subAgent: yield* start(parent)
  }
  const variants: ReadonlyArray<{ readonly name: string; readonly once: Effect.Effect<Sample> }> = [
    { name: "raw spawn + SIGTERM → exit", once: Effect.promise(rawOnce) },
    { name: "inside Bash", once: abortOnce(sessions.bash, insideBash) },
    {
      name: "inside an MCP call",
      once: Effect.tap(abortOnce(sessions.mcp, insideMcp), () => Deferred.succeed(release, undefined))
    },
    { name: "inside a sub-agent's Bash", once: abortOnce(sessions.subAgent, insideBash) }
  ]
  for (let i = 0; i < WARMUP; i++) for (const variant of variants) yield* variant.once
  const samples = variants.map(() => [] as Array<Sample>)
  for (let i = 0; i < ABORTS; i++) {
    for (const [v, variant] of variants.entries()) samples[v]!.push(yield* variant.once)
  }
  yield* Scope.close(scope, Exit.void)
  return variants.map((variant, v) => ({ name: variant.name, samples: samples[v]! }))
})

const results = await Effect.runPromise(main.pipe(Effect.provide(Layer.mergeAll(Condukt.layer, Layer.succeed(Model.Model, model)))))
rmSync(dir, { recursive: true, force: true })

console.log(`${ABORTS} aborts each, after ${WARMUP} warm-up rounds; abort → AgentEnd at the stream's reader`)
const [raw, ...ours] = results
const rawP99 = percentile(raw!.samples.map((s) => s.ms), 99)
for (const { name, samples } of results) {
  const ms = samples.map((s) => s.ms)
  const survivors = samples.filter((s) => s.survived).length
  console.log(`${name.padEnd(28)} p50 ${percentile(ms, 50).toFixed(1).padStart(6)} ms  p99 ${percentile(ms, 99).toFixed(1).padStart(6)} ms  max ${Math.max(...ms).toFixed(1).padStart(6)} ms  processes left ${survivors}`)
}
for (const { name, samples } of ours) {
  const p99 = percentile(samples.map((s) => s.ms), 99)
  const survivors = samples.filter((s) => s.survived).length
  report({
    benchmark: `abort: ${name}, abort → AgentEnd, no process left (p99)`,
    ours: `${p99.toFixed(1)} ms${survivors === 0 ? "" : `, ${survivors} processes left`}`,
    baseline: `${rawP99.toFixed(1)} ms`,
    ratio: p99 / rawP99,
    goal: `≤ ${GOAL_MS} ms`,
    met: p99 <= GOAL_MS && survivors === 0
  })
}

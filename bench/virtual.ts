/**
 * bench/virtual — what VirtualSandbox costs on top of just-bash.
 *
 * 1. `exec("echo hi")` through VirtualSandbox, called inside one fiber as a session's tool calls
 *    are, against raw just-bash awaited in a loop, in interleaved blocks of 20 calls so drift in
 *    the machine's load hits all alike. The goal (median ratio ≤ 1.1×) is judged against raw
 *    just-bash configured as the sandbox configures it (MountableFs over InMemoryFs, hardened
 *    profile, an AbortSignal so an interrupted call stops): that ratio is what our wrapper costs.
 *    Bare `new Bash().exec("echo hi")` and bare-with-a-signal are printed beside it; the signal
 *    alone costs ~10 % (just-bash then fences every command).
 * 2. Memory per idle VirtualSandbox: heap plus array buffers retained per sandbox, measured over
 *    many live sandboxes after a forced GC (the script re-runs itself with --expose-gc).
 *    Goal: ≤ 150 KB.
 * 3. Throughput with 100 sandboxes, each its own, running `echo hi` concurrently, against one
 *    sandbox running the same number of calls one after the other.
 *
 * Run: node_modules/.bin/node bench/virtual.ts
 */
import { spawnSync } from "node:child_process"
import { Effect } from "effect"
import * as VirtualSandbox from "../packages/sandbox-virtual/src/VirtualSandbox.ts"
import { report } from "./report.ts"

/** The part of just-bash's `Bash` used here; the module is the one VirtualSandbox loads. */
interface RawBash {
  readonly exec: (
    script: string,
    options?: { readonly signal?: AbortSignal; readonly cwd?: string; readonly rawScript?: boolean }
  ) => Promise<unknown>
}
interface RawModule {
  readonly Bash: new(options?: { readonly fs?: unknown; readonly cwd?: string; readonly executionLimitProfile?: string }) => RawBash
  readonly InMemoryFs: new() => { readonly mkdirSync: (path: string, options: { readonly recursive: boolean }) => void }
  readonly MountableFs: new(options: { readonly base: unknown }) => unknown
}
// just-bash is a dependency of the package, not of the workspace root, so it is loaded from there.
const justBash = new URL("../packages/sandbox-virtual/node_modules/just-bash/dist/bundle/index.js", import.meta.url)

const N = 3000
const WARMUP = 300
const BLOCK = 20
const IDLE = 300
const SANDBOXES = 100
const ROUNDS = 20

const median = (times: ReadonlyArray<number>): number => [...times].sort((a, b) => a - b)[times.length >> 1] ?? 0

const line = (name: string, value: string) => console.log(`${name.padEnd(44)} ${value}`)

const verdict = (goal: string, ok: boolean) => console.log(`verdict: ${goal.padEnd(35)} ${ok ? "PASS" : "FAIL"}`)

/** Times `BLOCK` calls of `once` one after the other, each on its own. */
const awaited = (once: () => Promise<unknown>) => async (): Promise<Array<number>> => {
  const times: Array<number> = []
  for (let i = 0; i < BLOCK; i++) {
    const start = performance.now()
    await once()
    times.push(performance.now() - start)
  }
  return times
}

const execOverhead = async (): Promise<{ readonly ratio: number; readonly ours: number; readonly same: number }> => {
  const { Bash, InMemoryFs, MountableFs } = (await import(justBash.href)) as RawModule
  const raw = new Bash()
  // just-bash asked for exactly what VirtualSandbox asks of it: the same filesystem stack, the
  // hardened profile, a cwd, the script kept raw, an AbortSignal. The ratio to it is our wrapper.
  const memory = new InMemoryFs()
  memory.mkdirSync("/home/user", { recursive: true })
  const configured = new Bash({ fs: new MountableFs({ base: memory }), cwd: "/home/user", executionLimitProfile: "hardened" })
  const sandbox = await Effect.runPromise(VirtualSandbox.make())
  // Inside one fiber, as a session's tool calls are: no `runPromise` per call.
  const inFiber = (): Promise<Array<number>> =>
    Effect.runPromise(Effect.gen(function*() {
      const times: Array<number> = []
      for (let i = 0; i < BLOCK; i++) {
        const start = performance.now()
        yield* sandbox.exec("echo hi")
        times.push(performance.now() - start)
      }
      return times
    }))
  const variants = [
    { name: "raw just-bash exec echo hi", block: awaited(() => raw.exec("echo hi")), times: [] as Array<number> },
    {
      name: "raw just-bash exec echo hi, with a signal",
      block: awaited(() => raw.exec("echo hi", { signal: new AbortController().signal })),
      times: [] as Array<number>
    },
    {
      name: "raw just-bash configured as the sandbox",
      block: awaited(() =>
        configured.exec("echo hi", { signal: new AbortController().signal, cwd: "/home/user", rawScript: true })
      ),
      times: [] as Array<number>
    },
    { name: "VirtualSandbox exec echo hi", block: inFiber, times: [] as Array<number> }
  ]
  for (let i = 0; i < WARMUP / BLOCK; i++) for (const variant of variants) await variant.block()
  for (let i = 0; i < N / BLOCK; i++) for (const variant of variants) variant.times.push(...(await variant.block()))
  const [base, withSignal, same, ours] = variants.map((variant) => median(variant.times))
  for (const variant of variants) line(variant.name, `median ${(median(variant.times) * 1000).toFixed(1)} µs`)
  const ratio = ours! / same!
  line("exec ratio VirtualSandbox / bare raw just-bash", `${(ours! / base!).toFixed(3)}×`)
  line("exec ratio VirtualSandbox / raw with a signal", `${(ours! / withSignal!).toFixed(3)}×`)
  line("exec ratio VirtualSandbox / raw configured alike", `${ratio.toFixed(3)}×`)
  return { ratio, ours: ours!, same: same! }
}

const idleMemory = async (): Promise<number> => {
  const gc = (globalThis as { gc?: () => void }).gc!
  const used = () => {
    gc()
    gc()
    const usage = process.memoryUsage()
    return usage.heapUsed + usage.arrayBuffers
  }
  const keep: Array<unknown> = [await Effect.runPromise(VirtualSandbox.make())]
  const before = used()
  for (let i = 0; i < IDLE; i++) keep.push(await Effect.runPromise(VirtualSandbox.make()))
  const perSandbox = (used() - before) / IDLE / 1024
  line(`memory per idle VirtualSandbox (${IDLE} live)`, `${perSandbox.toFixed(1)} KB`)
  return keep.length > 0 ? perSandbox : 0
}

const throughput = async (): Promise<void> => {
  const many = await Effect.runPromise(Effect.forEach(Array.from({ length: SANDBOXES }), () => VirtualSandbox.make()))
  const one = many[0]!
  const calls = SANDBOXES * ROUNDS
  await Effect.runPromise(Effect.forEach(many, (sandbox) => sandbox.exec("echo hi"), { concurrency: "unbounded" }))
  let start = performance.now()
  for (let round = 0; round < ROUNDS; round++) {
    await Effect.runPromise(Effect.forEach(many, (sandbox) => sandbox.exec("echo hi"), { concurrency: "unbounded" }))
  }
  const concurrent = calls / ((performance.now() - start) / 1000)
  start = performance.now()
  for (let i = 0; i < calls; i++) await Effect.runPromise(one.exec("echo hi"))
  const sequential = calls / ((performance.now() - start) / 1000)
  line(`throughput, ${SANDBOXES} sandboxes concurrently`, `${concurrent.toFixed(0)} execs/s`)
  line("throughput, 1 sandbox one call at a time", `${sequential.toFixed(0)} execs/s`)
  line("throughput ratio 100 sandboxes / 1 sandbox", `${(concurrent / sequential).toFixed(2)}×`)
}

const main = async () => {
  if ((globalThis as { gc?: unknown }).gc === undefined) {
    const child = spawnSync(process.execPath, ["--expose-gc", ...process.execArgv, process.argv[1]!], { stdio: "inherit" })
    process.exit(child.status ?? 1)
  }
  const exec = await execOverhead()
  const memory = await idleMemory()
  await throughput()
  verdict("exec overhead ≤ 1.1× just-bash configured alike", exec.ratio <= 1.1)
  verdict("idle memory ≤ 150 KB per sandbox", memory <= 150)
  report({
    benchmark: "virtual: VirtualSandbox exec / just-bash configured alike (median)",
    ours: `${(exec.ours * 1000).toFixed(1)} µs`,
    baseline: `${(exec.same * 1000).toFixed(1)} µs`,
    ratio: exec.ratio,
    goal: "≤ 1.1×",
    met: exec.ratio <= 1.1
  })
  report({
    benchmark: "virtual: memory per idle VirtualSandbox",
    ours: `${memory.toFixed(1)} KB`,
    baseline: "none",
    ratio: null,
    goal: "≤ 150 KB",
    met: memory <= 150
  })
}

main()

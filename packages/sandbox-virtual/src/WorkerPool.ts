/**
 * WorkerPool — worker threads for virtual sandboxes' interpreters, so that one session's
 * CPU-bound script (`while true; do :; done`, `sed` over 10 MB) does not stop every other session
 * and the program's event loop with it (issue 43, docs/decisions/0093).
 *
 * just-bash runs a script on the thread that calls it, and a busy loop or one long command never
 * yields that thread. Given a pool (`VirtualSandbox` option `workers`), a sandbox runs each `exec`
 * on a worker of its own for the call instead, while the filesystem stays on the sandbox's thread:
 * the worker's interpreter reaches it by message (`internal/workerProtocol.ts`), so file tools,
 * snapshots and mounts see a command's writes as they happen. A worker runs one `exec` at a time;
 * the pool starts workers as calls need them, up to `maxWorkers`, keeps them for the next calls, and
 * queues calls beyond that.
 *
 * Ending a call does not depend on the script: an interrupted call is aborted at the interpreter's
 * next statement, and a call whose deadline passes (counted from when it asked, waiting for a
 * busy worker included, a new worker's start not) ends there too; when the worker has not answered `graceMs` later (a command
 * that never reaches a statement boundary), the pool terminates the thread and the call ends
 * anyway — `Timeout` for a deadline, as on the program's thread. Closing the pool's scope
 * terminates every worker; calls still running fail.
 *
 * A spinning worker must not take the cores from the program's thread and from the calls that
 * follow: on Linux, once a call has taken `lowerPriorityAfterMs` of CPU its worker's thread drops
 * to the lowest priority (nice 19), and goes back to normal, or is retired if it cannot, when the
 * call ends; and workers compile their hot code on their own threads, not on V8's shared ones
 * (`startCompilingInPlace`).
 *
 * Node only (`node:worker_threads`), hence its own entry point: `@condukt/sandbox-virtual/WorkerPool`.
 * Without a pool a sandbox needs no platform and runs the interpreter on the caller's thread.
 *
 * @since 0.2.0
 */
import { Effect, type Scope } from "effect"
import type { IFileSystem } from "just-bash"
import { readFileSync } from "node:fs"
import { setPriority } from "node:os"
import * as V8 from "node:v8"
import { Worker } from "node:worker_threads"
import { messageOf } from "./internal/thrown.ts"
import * as Protocol from "./internal/workerProtocol.ts"

/** @since 0.2.0 @category models */
export interface Options {
  /** Workers at most, so calls running at once; more wait for one (default 16). */
  readonly maxWorkers?: number | undefined
  /** Workers started with the pool, so the first calls do not wait for one to start (default 1). */
  readonly warmWorkers?: number | undefined
  /** How long a call's worker may take to stop after its deadline or interruption (default 250 ms). */
  readonly graceMs?: number | undefined
  /**
   * The CPU time a call may take before its worker drops to the lowest scheduling priority
   * (default 10 ms; Linux, where a thread's priority and CPU time are its own). Short calls (an
   * `echo`, a `cat`) never take that much, however long a loaded machine makes them wait; a script
   * that spins does, and then yields the cores to the program's thread and to new calls.
   */
  readonly lowerPriorityAfterMs?: number | undefined
}

/**
 * A pool's calls as the sandbox makes them; `run` settles with just-bash's answer, or rejects with
 * what just-bash rejected with or why the worker was lost.
 *
 * @since 0.2.0
 * @category models
 */
export interface WorkerPool {
  readonly run: (request: Protocol.Request, fs: IFileSystem, signal: AbortSignal) => Promise<Protocol.Answer>
  /** Workers started, busy, and calls waiting for one. */
  readonly stats: () => { readonly workers: number; readonly busy: number; readonly queued: number }
}

interface Job {
  readonly exec: Protocol.Exec
  readonly fs: IFileSystem
  readonly signal: AbortSignal
  readonly resolve: (answer: Protocol.Answer) => void
  readonly reject: (cause: Error) => void
  /** When the call asked (`performance.now()`): its deadline runs from then. */
  readonly queuedAt: number
  onAbort?: () => void
  timer?: ReturnType<typeof setTimeout> | undefined
  lower?: ReturnType<typeof setTimeout> | undefined
  /** The worker's CPU time (ms) when the call started on it, to lower its priority when it computes long. */
  cpuAtStart?: number | undefined
}

interface Slot {
  readonly worker: Worker
  /** The running exec's abort flag, read by the worker between statements (`interpreterWorker.ts`). */
  readonly abort: Int32Array
  job: Job | undefined
  /** Whether the worker started and said its thread id (Linux; undefined elsewhere). */
  ready: boolean
  tid: number | undefined
  /** Whether its priority was lowered for a long call. */
  lowered: boolean
  /** What its first call does once it has started (arms the call's deadline). */
  onReady: (() => void) | undefined
}

// Beside this file in the sources (run as TypeScript) and in the build alike.
const workerUrl = new URL(`./internal/interpreterWorker.${import.meta.url.endsWith(".ts") ? "ts" : "js"}`, import.meta.url)

/** From this size on, a file's bytes are copied once and transferred rather than cloned. */
const transferBytes = 64 * 1024

/**
 * The CPU time (ms) thread `tid` of this process has used, if Linux says: `schedstat`'s nanoseconds
 * on the CPU, else `stat`'s user and system ticks (100 a second: too coarse to tell an `echo`, which
 * a tick may catch, from a spinning script).
 */
const cpuMsOf = (tid: number | undefined): number | undefined => {
  if (tid === undefined) return undefined
  try {
    const ns = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, "latin1").split(" ")[0])
    if (Number.isFinite(ns)) return ns / 1e6
  } catch {
    // No schedstat (a kernel without scheduler statistics): the ticks.
  }
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, "latin1")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const ticks = Number(fields[11]) + Number(fields[12])
    return Number.isFinite(ticks) ? ticks * 10 : undefined
  } catch {
    return undefined
  }
}

/**
 * Whether this process was started with V8's optimizing compiler off its background threads
 * already; then the pool leaves the flag alone.
 */
const compilesInPlace = [...process.execArgv, ...(process.env["NODE_OPTIONS"] ?? "").split(/\s+/)].some((arg) =>
  arg === "--no-concurrent-recompilation" || arg === "--single-threaded"
)

/**
 * Workers starting with V8's optimizing compiles on their own thread. V8 compiles hot code on
 * background threads shared by every isolate of the process, at normal priority: ten spinning
 * interpreters kept them busy re-optimizing (~0.3 s of CPU a second), competing at full priority
 * with the program's thread however low the workers' own priority was. An isolate reads the flag
 * once, when it starts, so it is turned off while workers start and back on after: the program's
 * own isolate keeps its background compiles (docs/decisions/0093).
 */
let starting = 0
const startCompilingInPlace = () => {
  if (!compilesInPlace && starting++ === 0) V8.setFlagsFromString("--no-concurrent-recompilation")
}
const startedCompilingInPlace = () => {
  if (!compilesInPlace && --starting === 0) V8.setFlagsFromString("--concurrent-recompilation")
}

const bounded = (value: number | undefined, fallback: number, max: number): number =>
  value === undefined || !Number.isFinite(value) ? fallback : Math.min(Math.max(Math.floor(value), 0), max)

/** The answer just-bash gives for a passed deadline, for a call whose worker had to be terminated. */
const deadlineAnswer = (deadlineMs: number): Protocol.Answer => ({
  stdout: "",
  stderr: `bash: script exceeded execution deadline (${deadlineMs}ms)\n`,
  exitCode: 124
})

/**
 * A pool the caller closes (`close` terminates every worker; calls still running fail), for a
 * program that keeps one pool for its whole life; `make` ties one to a scope.
 *
 * @since 0.2.0
 * @category constructors
 */
export const makeUnsafe = (options: Options = {}): WorkerPool & { readonly close: () => Promise<void> } => {
  const maxWorkers = bounded(options.maxWorkers, 16, 1024) || 1
  const graceMs = bounded(options.graceMs, 250, 60_000)
  const lowerAfterMs = bounded(options.lowerPriorityAfterMs, 10, 60_000)
  const slots = new Set<Slot>()
  const idle: Array<Slot> = []
  const queue: Array<Job> = []
  let nextId = 0
  let closed = false

  const release = (job: Job) => {
    clearTimeout(job.timer)
    clearTimeout(job.lower)
    if (job.onAbort !== undefined) job.signal.removeEventListener("abort", job.onAbort)
  }

  /** Workers terminated and not yet gone. */
  const ends = new Set<Promise<void>>()

  /** Drops `slot` (lost or terminated); its call, if any, rejects with `cause`. */
  const drop = (slot: Slot, cause: Error | undefined) => {
    if (!slots.delete(slot)) return
    if (!slot.ready) startedCompilingInPlace()
    slot.ready = true
    const at = idle.indexOf(slot)
    if (at >= 0) idle.splice(at, 1)
    const job = slot.job
    slot.job = undefined
    // Kept until the thread is gone, so `close` waits for it too.
    const ending = slot.worker.terminate().then(() => void ends.delete(ending), () => void ends.delete(ending))
    ends.add(ending)
    if (job !== undefined) {
      release(job)
      if (cause !== undefined) job.reject(cause)
    }
    pump()
  }

  /** Sets the worker's thread priority (19 lowest, 0 normal); false when the system refuses. */
  const prioritize = (slot: Slot, priority: number): boolean => {
    if (slot.tid === undefined) return false
    try {
      setPriority(slot.tid, priority)
      return true
    } catch {
      return false
    }
  }

  const answer = (slot: Slot, job: Job, settle: () => void) => {
    release(job)
    slot.job = undefined
    settle()
    // Raising a priority back takes a privilege most processes lack: a worker that cannot get it
    // back is retired, so the next call does not start at the bottom.
    if (slot.lowered) slot.lowered = !prioritize(slot, 0)
    if (slot.lowered) drop(slot, undefined)
    else idle.push(slot)
    pump()
  }

  const serve = (slot: Slot, job: Job, message: Protocol.FsCall) => {
    const reply = (response: Protocol.FsDone | Protocol.FsFailed) => {
      if (slot.job !== job) return
      // A big file goes over as one copy handed to the worker, not cloned through the serializer.
      if (response._tag === "FsDone" && response.value instanceof Uint8Array && response.value.byteLength >= transferBytes) {
        const copy = response.value.slice()
        return slot.worker.postMessage({ ...response, value: copy }, [copy.buffer])
      }
      slot.worker.postMessage(response)
    }
    const method = Protocol.isFsMethod(message.method) ? job.fs[message.method] : undefined
    if (typeof method !== "function" || !Array.isArray(message.args)) {
      return reply({ _tag: "FsFailed", call: message.call, message: `ENOSYS: function not implemented, ${String(message.method)}` })
    }
    Promise.resolve()
      .then(() => Reflect.apply(method, job.fs, message.args) as Promise<unknown>)
      .then(
        (value) => reply({ _tag: "FsDone", call: message.call, value }),
        (cause) => reply({ _tag: "FsFailed", call: message.call, message: messageOf(cause) })
      )
  }

  const spawn = (): Slot => {
    const abort = new SharedArrayBuffer(4)
    startCompilingInPlace()
    const slot: Slot = {
      worker: new Worker(workerUrl, { workerData: { abort } }),
      abort: new Int32Array(abort),
      job: undefined,
      ready: false,
      tid: undefined,
      lowered: false,
      onReady: undefined
    }
    slot.worker.on("message", (message: Protocol.FromWorker) => {
      if (message._tag === "Ready") {
        if (!slot.ready) startedCompilingInPlace()
        slot.ready = true
        slot.tid = message.tid
        const onReady = slot.onReady
        slot.onReady = undefined
        return onReady?.()
      }
      const job = slot.job
      if (job === undefined || message.id !== job.exec.id) return
      if (message._tag === "FsCall") return serve(slot, job, message)
      if (message._tag === "Done") {
        const { exitCode, stderr, stdout } = message
        return answer(slot, job, () => job.resolve({ stdout, stderr, exitCode }))
      }
      answer(slot, job, () => job.reject(new Error(message.message)))
    })
    slot.worker.on("error", (cause) => drop(slot, new Error(`The interpreter's worker failed: ${messageOf(cause)}`)))
    slot.worker.on("exit", (code) => drop(slot, new Error(`The interpreter's worker exited (code ${code})`)))
    slots.add(slot)
    return slot
  }

  const start = (slot: Slot, job: Job) => {
    slot.job = job
    Atomics.store(slot.abort, 0, 0)
    const deadlineMs = job.exec.setup.limits["maxExecutionTimeMs"] ?? 30_000
    // The time spent waiting for a worker counts: the deadline is the call's, not the worker's.
    const leftMs = Math.max(1, Math.ceil(deadlineMs - (performance.now() - job.queuedAt)))
    // The interpreter keeps the deadline itself; this is for a command that never lets it look.
    // Armed once the worker runs: its interpreter counts from then, and a worker's start (a
    // second or more on a loaded machine, after one was terminated at its deadline) is the
    // pool's time, not the call's.
    const arm = () => {
      job.timer = setTimeout(() => {
        if (slot.job !== job) return
        drop(slot, undefined)
        job.resolve(deadlineAnswer(deadlineMs))
      }, leftMs + graceMs)
    }
    if (slot.ready) arm()
    else slot.onReady = arm
    job.onAbort = () => {
      if (slot.job !== job) return
      slot.onReady = undefined
      Atomics.store(slot.abort, 0, 1)
      slot.worker.postMessage({ _tag: "Abort", id: job.exec.id } satisfies Protocol.Abort)
      clearTimeout(job.timer)
      job.timer = setTimeout(() => drop(slot, new Error("The interpreter was stopped")), graceMs)
    }
    job.signal.addEventListener("abort", job.onAbort, { once: true })
    job.cpuAtStart = cpuMsOf(slot.tid)
    // Looked at every half of the allowance of wall time: a call that waits (on files, on a
    // loaded machine) takes no CPU time, one that computes takes it as fast as it is given.
    const look = () => {
      if (slot.job !== job) return
      const cpu = cpuMsOf(slot.tid)
      if (cpu !== undefined && job.cpuAtStart === undefined) job.cpuAtStart = cpu // the worker said its id late
      else if (cpu !== undefined && cpu - job.cpuAtStart! >= lowerAfterMs) return void (slot.lowered = prioritize(slot, 19))
      // Not yet, or the worker has not said its id yet; no CPU time to read at all: not Linux.
      if (cpu !== undefined || !slot.ready) job.lower = setTimeout(look, Math.max(lowerAfterMs / 2, 5))
    }
    job.lower = setTimeout(look, lowerAfterMs)
    slot.worker.postMessage(
      (leftMs >= deadlineMs
        ? job.exec
        : { ...job.exec, setup: { ...job.exec.setup, limits: { ...job.exec.setup.limits, maxExecutionTimeMs: leftMs } } }) satisfies Protocol.ToWorker
    )
  }

  const pump = () => {
    while (!closed && queue.length > 0) {
      const slot = idle.pop() ?? (slots.size < maxWorkers ? spawn() : undefined)
      if (slot === undefined) return
      const job = queue.shift()!
      release(job)
      start(slot, job)
    }
  }

  for (let i = bounded(options.warmWorkers, 1, maxWorkers); i > 0; i--) idle.push(spawn())

  return {
    run: (request, fs, signal) =>
      new Promise<Protocol.Answer>((resolve, reject) => {
        if (closed) return reject(new Error("The interpreter's worker pool is closed"))
        if (signal.aborted) return reject(new Error("The interpreter was stopped"))
        const job: Job = { exec: { _tag: "Exec", id: nextId++, ...request }, fs, signal, resolve, reject, queuedAt: performance.now() }
        // A call still waiting for a worker leaves the queue when it is interrupted.
        job.onAbort = () => {
          const at = queue.indexOf(job)
          if (at >= 0) queue.splice(at, 1)
          reject(new Error("The interpreter was stopped"))
        }
        signal.addEventListener("abort", job.onAbort, { once: true })
        // A call that never gets a worker still ends at its deadline.
        const deadlineMs = request.setup.limits["maxExecutionTimeMs"] ?? 30_000
        job.timer = setTimeout(() => {
          const at = queue.indexOf(job)
          if (at < 0) return
          queue.splice(at, 1)
          release(job)
          resolve(deadlineAnswer(deadlineMs))
        }, deadlineMs)
        queue.push(job)
        pump()
      }),
    stats: () => ({ workers: slots.size, busy: slots.size - idle.length, queued: queue.length }),
    close: async () => {
      closed = true
      for (const job of queue.splice(0)) {
        release(job)
        job.reject(new Error("The interpreter's worker pool is closed"))
      }
      for (const slot of [...slots]) drop(slot, new Error("The interpreter's worker pool is closed"))
      // Every thread gone, those ended earlier (a passed deadline, an interrupt) included.
      await Promise.all([...ends])
    }
  }
}

/**
 * A pool whose workers live as long as the scope.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<WorkerPool, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.sync(() => makeUnsafe(options)), (pool) => Effect.promise(() => pool.close()))

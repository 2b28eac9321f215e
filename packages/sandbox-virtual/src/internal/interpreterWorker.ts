/**
 * interpreterWorker — the worker thread of a `WorkerPool`: it runs just-bash for one `exec` at a
 * time, so a script that never yields (`while true; do :; done`, `sed` over 10 MB) spins this
 * thread and not the program's.
 *
 * The interpreter's filesystem is a proxy: every call goes to the sandbox's thread as an `FsCall`
 * and comes back as that filesystem's answer (`workerProtocol.ts`). Paths are resolved here, as
 * just-bash's own filesystems resolve them (pure string work). A call's `Bash` is built for it,
 * with the sandbox's limits and the call's deadline, and dropped after: `exec` is stateless.
 *
 * An abort (the shared flag, or an `Abort` message once this thread reads one) aborts the call's
 * signal, which just-bash checks between statements; a command that never reaches one is the
 * pool's to end (it terminates the thread).
 */
import { Bash, type IFileSystem, InMemoryFs } from "just-bash"
import { readlinkSync } from "node:fs"
import { parentPort, workerData } from "node:worker_threads"
import * as Rm from "./rm.ts"
import { messageOf } from "./thrown.ts"
import * as Timeout from "./timeout.ts"
import * as Protocol from "./workerProtocol.ts"

const port = parentPort!
/** Captured before any command runs: defense in depth patches globals while one does. */
const post = (message: Protocol.FromWorker): void => port.postMessage(message)
const paths = new InMemoryFs()
/**
 * Set to 1 by the pool to abort the running exec. A message cannot do it: a script that never
 * yields keeps this thread from reading one, while just-bash reads `signal.aborted` between
 * statements, so the running exec's signal reads this shared flag too.
 */
const abortFlag = new Int32Array((workerData as { readonly abort: SharedArrayBuffer }).abort)
const nativeAborted = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!

/**
 * A signal that is aborted when its controller is, or when the pool raises the flag; reading it
 * also ends the script's `timeout`s whose deadline passed (`timeout.ts`).
 */
const signalOf = (controller: AbortController): AbortSignal => {
  const signal = controller.signal
  Object.defineProperty(signal, "aborted", {
    get: () => {
      Timeout.poll()
      return abortFlag[0] === 1 || nativeAborted.call(signal) as boolean
    }
  })
  return signal
}

let nextCall = 0
const pending = new Map<number, { readonly resolve: (value: unknown) => void; readonly reject: (error: Error) => void }>()
const running = new Map<number, AbortController>()

/** The filesystem of exec `id`, every call made on the sandbox's thread. */
const proxyOf = (id: number, methods: ReadonlyArray<Protocol.FsMethod>, known: ReadonlyArray<Protocol.Known>): IFileSystem => {
  const forward = (method: Protocol.FsMethod) => (...args: ReadonlyArray<unknown>): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const call = nextCall++
      pending.set(call, { resolve, reject })
      post({ _tag: "FsCall", id, call, method, args })
    })
  /** As `forward`, handing `bytes` (made here for this call, used by nothing else) over uncopied. */
  const handOver = (method: Protocol.FsMethod, bytes: Uint8Array) => (...args: ReadonlyArray<unknown>): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const call = nextCall++
      pending.set(call, { resolve, reject })
      port.postMessage({ _tag: "FsCall", id, call, method, args } satisfies Protocol.FsCall, [bytes.buffer as ArrayBuffer])
    })
  const proxy: Record<string, unknown> = {
    resolvePath: (base: string, path: string) => paths.resolvePath(base, path),
    // Only wrapped for untrusted extension commands, never called by the interpreter.
    getAllPaths: () => []
  }
  for (const method of methods) proxy[method] = forward(method)
  if (methods.includes("readFileBuffer")) textHere(proxy, forward, handOver)
  lookupsHere(proxy, known)
  return proxy as unknown as IFileSystem
}

/** Where just-bash looks a command up (`$PATH`), twice a command: `exists`, then `stat`. */
const commandDirectory = /^\/(?:usr\/)?bin\//
const mutating: ReadonlyArray<Protocol.FsMethod> = [
  "writeFile",
  "appendFile",
  "mkdir",
  "rm",
  "cp",
  "mv",
  "chmod",
  "symlink",
  "link",
  "utimes"
]

/**
 * A call remembers what it learnt of `/usr/bin` and `/bin` until it changes a file, starting from
 * what the sandbox's thread answered with the call: a loop of commands would otherwise cross
 * threads twice a command to find the same stub. Any change the call makes forgets it all (it may
 * be `rm /usr/bin/ls`); a change another tool makes meanwhile is seen by the next call.
 */
const lookupsHere = (proxy: Record<string, unknown>, answered: ReadonlyArray<Protocol.Known>) => {
  const known = new Map<string, Promise<unknown>>()
  // What the sandbox's thread answered before the call (`commandLookups.ts`), as if asked here.
  for (const { failure, key, value } of answered) {
    const answer = failure === undefined ? Promise.resolve(value) : Promise.reject(new Error(failure))
    answer.catch(() => undefined)
    known.set(key, answer)
  }
  for (const method of ["exists", "stat"] as const) {
    const ask = proxy[method] as ((path: string) => Promise<unknown>) | undefined
    if (ask === undefined) continue
    proxy[method] = (path: string) => {
      if (!commandDirectory.test(path)) return ask(path)
      const key = Protocol.lookupKey(method, path)
      const answer = known.get(key) ?? ask(path)
      known.set(key, answer)
      return answer
    }
  }
  for (const method of mutating) {
    const change = proxy[method] as ((...args: ReadonlyArray<unknown>) => Promise<unknown>) | undefined
    if (change === undefined) continue
    proxy[method] = (...args: ReadonlyArray<unknown>) => {
      known.clear()
      return change(...args).finally(() => known.clear())
    }
  }
}

type Forward = (method: Protocol.FsMethod) => (...args: ReadonlyArray<unknown>) => Promise<unknown>
type HandOver = (method: Protocol.FsMethod, bytes: Uint8Array) => (...args: ReadonlyArray<unknown>) => Promise<unknown>
type Encoding = string | null | undefined

const utf8 = new TextDecoder()
const utf8Bytes = new TextEncoder()
const encodingOf = (options: unknown): Encoding =>
  typeof options === "string" ? options : (options as { readonly encoding?: Encoding } | undefined)?.encoding
const isUtf8 = (encoding: Encoding) => encoding == null || encoding === "utf8" || encoding === "utf-8"
const latin1Of = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1")

/**
 * Text is decoded and encoded here, as just-bash's in-memory filesystem would (`TextDecoder`,
 * latin1 for bytes), so the sandbox's thread only hands bytes over: a `sed` over a 10 MB file
 * would otherwise decode 10 MB on that thread each time. Other encodings go over as they are.
 */
const textHere = (proxy: Record<string, unknown>, forward: Forward, handOver: HandOver) => {
  const bytesOf = forward("readFileBuffer") as (path: string) => Promise<Uint8Array>
  const readFile = forward("readFile")
  const writeFile = forward("writeFile")
  const appendFile = forward("appendFile")
  proxy["readFile"] = (path: string, options?: unknown) => {
    const encoding = encodingOf(options)
    if (isUtf8(encoding)) return bytesOf(path).then((bytes) => utf8.decode(bytes))
    if (encoding === "binary" || encoding === "latin1") return bytesOf(path).then(latin1Of)
    return readFile(path, options)
  }
  proxy["readFileBytes"] = (path: string) => bytesOf(path).then(latin1Of)
  const encoded = (method: "writeFile" | "appendFile", write: ReturnType<Forward>) =>
  (path: string, content: unknown, options?: unknown) => {
    if (typeof content !== "string" || !isUtf8(encodingOf(options))) return write(path, content, options)
    const bytes = utf8Bytes.encode(content)
    return handOver(method, bytes)(path, bytes, options)
  }
  proxy["writeFile"] = encoded("writeFile", writeFile)
  proxy["appendFile"] = encoded("appendFile", appendFile)
}

const run = async (exec: Protocol.Exec): Promise<void> => {
  const controller = new AbortController()
  const signal = signalOf(controller)
  running.set(exec.id, controller)
  try {
    const bash = new Bash({
      fs: proxyOf(exec.id, exec.setup.methods, exec.known),
      cwd: exec.setup.cwd,
      // The call's env exported, as a process's environment is (just-bash exports only these).
      env: { ...exec.env, HOME: exec.env?.["HOME"] ?? exec.setup.home },
      executionLimitProfile: "hardened",
      defenseInDepth: exec.setup.defenseInDepth,
      executionLimits: exec.setup.limits,
      customCommands: [Rm.command, Timeout.command]
    })
    const result = await bash.exec(
      exec.command,
      exec.env === undefined
        ? { signal, cwd: exec.cwd, rawScript: true }
        : { signal, cwd: exec.cwd, env: { ...exec.env }, rawScript: true }
    )
    post({ _tag: "Done", id: exec.id, stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode })
  } catch (cause) {
    post({ _tag: "Rejected", id: exec.id, message: messageOf(cause) })
  } finally {
    running.delete(exec.id)
  }
}

/** This thread's id ("<pid>/task/<tid>"), where Linux says it. */
const threadId = (): number | undefined => {
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/")[2])
    return Number.isSafeInteger(tid) && tid > 0 ? tid : undefined
  } catch {
    return undefined
  }
}

/**
 * The interpreter run once before this worker says it is ready: its first `exec` loads and
 * compiles the commands it uses, tens of milliseconds the first call would otherwise pay out of
 * its deadline (which the pool counts from "Ready").
 */
await new Bash({ fs: new InMemoryFs(), executionLimitProfile: "hardened", customCommands: [Rm.command, Timeout.command] })
  .exec("echo warm > /dev/null", { rawScript: true })
  .catch(() => undefined)

post({ _tag: "Ready", tid: threadId() })

port.on("message", (message: Protocol.ToWorker) => {
  switch (message._tag) {
    case "Exec":
      void run(message)
      return
    case "Abort":
      running.get(message.id)?.abort()
      return
    case "FsDone":
    case "FsFailed": {
      const waiting = pending.get(message.call)
      if (waiting === undefined) return
      pending.delete(message.call)
      if (message._tag === "FsDone") waiting.resolve(message.value)
      else waiting.reject(new Error(message.message))
    }
  }
})

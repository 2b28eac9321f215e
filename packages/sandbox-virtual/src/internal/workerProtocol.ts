/**
 * workerProtocol — the messages between a virtual sandbox's thread and the worker that runs its
 * interpreter (`WorkerPool`, `interpreterWorker.ts`).
 *
 * The filesystem never leaves the sandbox's thread: the worker's interpreter works on a proxy
 * whose every call is an `FsCall` answered by the sandbox's own filesystem (host mounts included)
 * with `FsDone` or `FsFailed`. So `writeFile`, `snapshot` and mounts, done on that thread, see what
 * a command wrote the moment it wrote it. Both ends are trusted code; what a script controls
 * (paths, contents) only travels as arguments, copied by the structured clone.
 *
 * just-bash's filesystem errors carry their meaning in the message ("ENOENT: no such file…",
 * `fsError.ts`), and the structured clone keeps an Error's message, so an `Error` is rebuilt from
 * its message on the other side.
 */

/** What the worker's `Bash` is built with: the sandbox's settings and the call's deadline. */
export interface Setup {
  readonly cwd: string
  readonly home: string
  /** just-bash's `executionLimits`, the call's deadline as `maxExecutionTimeMs`. */
  readonly limits: Readonly<Record<string, number>>
  readonly defenseInDepth: boolean
  /** The filesystem methods the sandbox's filesystem has (two are optional in just-bash's interface). */
  readonly methods: ReadonlyArray<FsMethod>
}

/** One `exec`: the script and its per-call options, as the sandbox asks a pool for it. */
export interface Request {
  readonly setup: Setup
  readonly command: string
  readonly cwd: string
  readonly env: Readonly<Record<string, string>> | undefined
  /** Command lookups answered before the call (`commandLookups.ts`), so they need not cross back. */
  readonly known: ReadonlyArray<Known>
}

/** A lookup's answer: `exists` or `stat` of a command's stub, its value or its failure's message. */
export interface Known {
  readonly key: string
  readonly value?: unknown
  readonly failure?: string
}

/** The key of a remembered lookup. */
export const lookupKey = (method: "exists" | "stat", path: string): string => `${method} ${path}`

/** What just-bash answered. */
export interface Answer {
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number
}

/** A request sent to a worker. */
export interface Exec extends Request {
  readonly _tag: "Exec"
  readonly id: number
}

/** Stop the running exec at its next statement (the call was interrupted). */
export interface Abort {
  readonly _tag: "Abort"
  readonly id: number
}

export interface FsDone {
  readonly _tag: "FsDone"
  readonly call: number
  readonly value: unknown
}

export interface FsFailed {
  readonly _tag: "FsFailed"
  readonly call: number
  readonly message: string
}

/** To the worker. */
export type ToWorker = Exec | Abort | FsDone | FsFailed

/** A filesystem call of the running exec, to be made on the sandbox's filesystem. */
export interface FsCall {
  readonly _tag: "FsCall"
  readonly id: number
  readonly call: number
  readonly method: FsMethod
  readonly args: ReadonlyArray<unknown>
}

export interface Done extends Answer {
  readonly _tag: "Done"
  readonly id: number
}

/** just-bash rejected instead of answering (a refused redirect, a bug). */
export interface Rejected {
  readonly _tag: "Rejected"
  readonly id: number
  readonly message: string
}

/** The worker started; `tid` is its thread's id on Linux (for its scheduling priority), else undefined. */
export interface Ready {
  readonly _tag: "Ready"
  readonly tid: number | undefined
}

/** From the worker. */
export type FromWorker = Ready | FsCall | Done | Rejected

/** The asynchronous methods of just-bash's `IFileSystem` the proxy forwards. */
export const fsMethods = [
  "readFile",
  "readFileBytes",
  "readFileBuffer",
  "writeFile",
  "appendFile",
  "exists",
  "stat",
  "mkdir",
  "readdir",
  "readdirWithFileTypes",
  "rm",
  "cp",
  "mv",
  "chmod",
  "symlink",
  "link",
  "readlink",
  "lstat",
  "realpath",
  "utimes"
] as const

export type FsMethod = typeof fsMethods[number]

const knownMethods: ReadonlySet<string> = new Set(fsMethods)

/** Whether `method` is one the proxy forwards (a worker's message is checked before it is obeyed). */
export const isFsMethod = (method: unknown): method is FsMethod => typeof method === "string" && knownMethods.has(method)

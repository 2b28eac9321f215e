/**
 * VirtualSandbox — a sandbox with no host underneath: files live in memory (just-bash's
 * `InMemoryFs`, see docs/decisions/0007) and commands run in just-bash, a bash interpreter
 * written in TypeScript whose commands (ls, grep, sed, awk, jq, …) are functions over that memory.
 * No host process is ever spawned and there is no network.
 *
 * Each `make` (each layer build, so each session) owns a fresh filesystem: two sandboxes never
 * see each other's files. Host directories can be mounted read-only or read-write, at start
 * (`mounts`) or at run time (`mount`, the Mount tool); they are the only way out of memory. What a
 * runtime mount may expose is the sandbox's to say (`mountRoots`, default the process's working
 * directory, docs/decisions/0052), so a model's Mount call never reaches past it.
 *
 * `exec` is stateless, like LocalSandbox: every call is a fresh shell (cd, export and functions do
 * not carry over) with the call's own cwd and env. just-bash keeps stdout and stderr apart and
 * does not interleave them (not even for `2>&1` around a group), so `output` is stdout followed
 * by stderr. Limits are just-bash's hardened profile unless overridden (`Limits`); a breach ends
 * the command with just-bash's message naming the resource and the next call runs normally.
 * `exec` does not fail for what a command does; it fails with `Timeout` when the call's timeout
 * passes (busy loops included), `NotFound` or `Failed` for a bad cwd, and `Failed` for a bug in
 * the interpreter (`internal/shell.ts` has the details).
 *
 * Files written through `writeFile` and by commands count against one byte budget
 * (`maxFileSystemBytes`); read-write mounts write to the host and do not. The in-memory tree can
 * be exported (`snapshot`) and restored (`make({ snapshot })`), mounts excluded.
 */
import { GlobPattern, Sandbox } from "@condukt/core"
import { Context, type Duration, Effect, Layer, Result, Stream } from "effect"
import { InMemoryFs, MountableFs } from "just-bash"
import * as FsError from "./internal/fsError.ts"
// internal/hostMount.ts, or under the `browser` condition hostMount.browser.ts (package.json's `imports`).
import * as HostMount from "#hostMount"
import * as Layout from "./internal/layout.ts"
import * as Rm from "./internal/rm.ts"
import * as Search from "./internal/search.ts"
import * as Shell from "./internal/shell.ts"
import * as SnapshotTree from "./internal/snapshotTree.ts"
import type * as Snapshot from "./Snapshot.ts"
import type { WorkerPool } from "./WorkerPool.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * Resource limits; each one left out keeps just-bash's hardened value (in brackets).
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  /** Wall time of one `exec` [30 seconds]. */
  readonly wallTime?: Duration.Input | undefined
  /** stdout plus stderr of one `exec` [10 MiB]. */
  readonly maxOutputBytes?: number | undefined
  /** Iterations of one loop: bash, awk, sed and jq loops alike [10,000]. */
  readonly maxLoopIterations?: number | undefined
  /** Commands one `exec` may run [10,000]. */
  readonly maxCommands?: number | undefined
  /** Bytes of file content the in-memory filesystem holds [128 MiB]. */
  readonly maxFileSystemBytes?: number | undefined
}

/** @since 0.1.0 @category models */
export interface Mount {
  /** The host directory (relative paths start at the process's cwd). */
  readonly hostPath: string
  /** Where it appears in the sandbox (relative paths start at the sandbox's cwd). */
  readonly path: string
  readonly mode: Sandbox.MountMode
}

/** @since 0.1.0 @category models */
export interface Options {
  /** The working directory, created if missing (default `/home/user`). */
  readonly cwd?: string | undefined
  /** A tree to start from, as `snapshot` gave it. */
  readonly snapshot?: Snapshot.Snapshot | undefined
  /** Files to write at start (after `snapshot`), path → content; relative paths start at `cwd`. */
  readonly files?: Readonly<Record<string, string | Uint8Array>> | undefined
  readonly mounts?: ReadonlyArray<Mount> | undefined
  /**
   * The host directories a mount at run time (`mount`, the Mount tool) may expose: one of them or
   * a directory below, judged on real paths (relative ones start at the process's cwd). Default:
   * the process's working directory; `[]` refuses every runtime mount. `mounts` are not checked.
   */
  readonly mountRoots?: ReadonlyArray<string> | undefined
  readonly limits?: Limits | undefined
  /**
   * just-bash's defense in depth (default `true`): while a command runs, JavaScript globals that
   * could escape the interpreter (`Function`, `eval`, Node's module loader…) are patched to refuse.
   * A second wall behind the interpreter, not the sandbox itself. It needs Node's module loader:
   * under Bun, which has none to patch, every command fails until this is `false`.
   */
  readonly defenseInDepth?: boolean | undefined
  /**
   * Worker threads to run commands on (`WorkerPool.make`, Node only), so a CPU-bound script spins
   * a worker and not this thread; the files stay here. Default: none, the interpreter runs on the
   * caller's thread (docs/decisions/0093).
   */
  readonly workers?: WorkerPool | undefined
}

/**
 * The Sandbox service plus what only a virtual sandbox can do.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service extends Sandbox.Service {
  /** The in-memory tree as JSON-ready data; mounted directories are not in it. */
  readonly snapshot: Effect.Effect<Snapshot.Snapshot, Sandbox.SandboxError>
}

/**
 * The virtual sandbox itself, for what the `Sandbox` contract has no word for (`snapshot`).
 *
 * @since 0.1.0
 * @category services
 */
export class VirtualSandbox extends Context.Service<VirtualSandbox, Service>()(
  "@condukt/sandbox-virtual/VirtualSandbox"
) {}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/** just-bash's hardened `maxFileSystemBytes`, which its own option only applies to its default filesystem. */
const defaultMaxFileSystemBytes = 128 * 1024 * 1024
const encoder = new TextEncoder()

const executionLimits = (limits: Limits | undefined): Shell.ExecutionLimits => {
  const out: Shell.ExecutionLimits = {}
  if (limits?.wallTime !== undefined) out.maxExecutionTimeMs = Sandbox.timeoutMillis(limits.wallTime)
  if (limits?.maxOutputBytes !== undefined) out.maxOutputSize = limits.maxOutputBytes
  if (limits?.maxCommands !== undefined) out.maxCommandCount = limits.maxCommands
  if (limits?.maxLoopIterations !== undefined) {
    out.maxLoopIterations = limits.maxLoopIterations
    out.maxAwkIterations = limits.maxLoopIterations
    out.maxSedIterations = limits.maxLoopIterations
    out.maxJqIterations = limits.maxLoopIterations
  }
  return out
}

const fail = (method: string, reason: Sandbox.Reason) => new Sandbox.SandboxError({ method, reason })

const parentOf = (path: string): string => path.slice(0, path.lastIndexOf("/")) || "/"

/** Chunks of `readStream`, views of the file's bytes (no copy). */
const chunkBytes = 256 * 1024
function* chunksOf(bytes: Uint8Array): Generator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += chunkBytes) yield bytes.subarray(at, at + chunkBytes)
}

/**
 * Builds a virtual sandbox: its own in-memory filesystem, the seed content, the mounts, and a
 * just-bash interpreter over them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("VirtualSandbox.make")(function*(options: Options = {}) {
  const budget = options.limits?.maxFileSystemBytes ?? defaultMaxFileSystemBytes
  const memory = new InMemoryFs(undefined, { maxTotalBytes: budget })
  const fs = new MountableFs({ base: memory })
  const cwd = fs.resolvePath("/", options.cwd ?? Layout.home)
  const toMake = (reason: Sandbox.Reason) => fail("make", reason)
  yield* Effect.mapError(Layout.install(memory, cwd), toMake)
  if (options.snapshot !== undefined) {
    yield* Effect.mapError(SnapshotTree.restore(memory, options.snapshot, budget), toMake)
  }
  for (const [path, content] of Object.entries(options.files ?? {})) {
    yield* Effect.try({
      try: () => memory.writeFileSync(fs.resolvePath(cwd, path), content),
      catch: (cause) => toMake(FsError.reasonOf(cause, path, "write to", budget))
    })
  }
  const shell = Shell.make({
    fs,
    cwd,
    home: Layout.home,
    limits: executionLimits(options.limits),
    budgetBytes: budget,
    commands: [Rm.command],
    defenseInDepth: options.defenseInDepth ?? true,
    workers: options.workers
  })

  const locate = (path: string) => fs.resolvePath(cwd, path)

  /** How `absolute` exists: a file, a directory, or not at all (symlinks followed). */
  const kindOf = (method: string, given: string, absolute: string, action: string) =>
    Effect.tryPromise({
      try: () => fs.stat(absolute),
      catch: (cause) => fail(method, FsError.reasonOf(cause, given, action, budget))
    }).pipe(
      Effect.map((stat) => (stat.isDirectory ? "directory" as const : "file" as const)),
      Effect.catchReason("SandboxError", "NotFound", () => Effect.succeed("missing" as const))
    )

  const notADirectory = (method: string, given: string, action: string) =>
    fail(method, new Sandbox.Failed({ description: `Cannot ${action} ${given}: not a directory` }))

  /** `given` as a directory to start from (exec's cwd, glob's base, grep's path). */
  const locateDirectory = (method: string, given: string, action: string, filesToo = false) =>
    Effect.gen(function*() {
      const absolute = locate(given)
      const kind = yield* kindOf(method, given, absolute, action)
      if (kind === "missing") return yield* fail(method, new Sandbox.NotFound({ path: given }))
      if (kind === "file" && !filesToo) return yield* notADirectory(method, given, action)
      return { absolute, kind }
    })

  /** Whether the nearest existing ancestor of `absolute` is a file, so nothing can be below it. */
  const belowFile = (method: string, given: string, absolute: string, action: string) =>
    Effect.gen(function*() {
      let ancestor = parentOf(absolute)
      let kind = yield* kindOf(method, given, ancestor, action)
      while (kind === "missing") {
        ancestor = parentOf(ancestor)
        kind = yield* kindOf(method, given, ancestor, action)
      }
      return kind === "file"
    })

  // just-bash holds every file whole, so the stream is that file cut up, not a read per chunk;
  // host mounts refuse pipes, devices and files bigger than the budget (`internal/hostMount.ts`).
  const readWhole = Effect.fn("VirtualSandbox.readStream")(function*(path: string) {
    const target = locate(path)
    return yield* Effect.tryPromise({
      try: () => fs.readFileBuffer(target),
      catch: (cause) => fail("readStream", FsError.reasonOf(cause, path, "read", budget))
    }).pipe(
      Effect.catchReason("SandboxError", "NotFound", (reason) =>
        Effect.flatMap(belowFile("readStream", path, target, "read"), (blocked) =>
          Effect.fail(blocked ? notADirectory("readStream", path, "read") : fail("readStream", reason))))
    )
  })

  const readStream = (path: string) => Stream.unwrap(Effect.map(readWhole(path), (bytes) => Stream.fromIterable(chunksOf(bytes))))

  const writeFile = Effect.fn("VirtualSandbox.writeFile")(function*(path: string, content: string | Uint8Array) {
    const target = locate(path)
    // just-bash's in-memory filesystem would replace a directory by the file, or write below a
    // file, without complaint; the contract (and LocalSandbox) refuse both.
    if ((yield* kindOf("writeFile", path, target, "write to")) === "directory") {
      return yield* fail("writeFile", new Sandbox.IsDirectory({ path }))
    }
    if (yield* belowFile("writeFile", path, target, "write to")) return yield* notADirectory("writeFile", path, "write to")
    yield* Effect.tryPromise({
      try: () =>
        fs.mkdir(parentOf(target), { recursive: true })
          .then(() => fs.writeFile(target, typeof content === "string" ? encoder.encode(content) : content)),
      catch: (cause) => fail("writeFile", FsError.reasonOf(cause, path, "write to", budget))
    })
  })

  // No span of its own: one around the interpreter's promise measured ~40 µs an `echo` (~12 %),
  // and the Bash tool that calls this has its own (bench/virtual.ts).
  const exec = (command: string, execOptions?: Sandbox.ExecOptions) => {
    const run = (directory: string) =>
      shell.run(command, {
        cwd: directory,
        env: execOptions?.env,
        timeoutMs: execOptions?.timeout === undefined ? undefined : Sandbox.timeoutMillis(execOptions.timeout)
      })
    return execOptions?.cwd === undefined
      ? run(cwd)
      : Effect.flatMap(locateDirectory("exec", execOptions.cwd, "run a command in"), ({ absolute }) => run(absolute))
  }

  const glob = Effect.fn("VirtualSandbox.glob")(function*(pattern: string, globOptions?: Sandbox.GlobOptions) {
    const given = globOptions?.cwd ?? "."
    const base = yield* locateDirectory("glob", given, "list files in")
    const absolutePattern = pattern.startsWith("/")
    // Rooted at `/` below, so the pattern itself is relative to it.
    const compiled = GlobPattern.make(absolutePattern ? pattern.replace(/^\/+/, "") : pattern, { dot: true })
    if (Result.isFailure(compiled)) {
      return yield* fail("glob", new Sandbox.InvalidPattern({ pattern, description: compiled.failure }))
    }
    const root = absolutePattern ? "/" : base.absolute
    const start = fs.resolvePath(root, compiled.success.base || ".")
    if ((yield* kindOf("glob", given, start, "list files in")) !== "directory") return []
    const found = yield* Search.files(fs, start, compiled.success.base, compiled.success)
    const limited = found.slice(0, Sandbox.clampLimit(globOptions?.limit, Sandbox.DEFAULT_GLOB_LIMIT))
    return absolutePattern ? limited.map((path) => `/${path}`) : limited
  })

  const grep = Effect.fn("VirtualSandbox.grep")(function*(pattern: string, grepOptions?: Sandbox.GrepOptions) {
    const compiled = Sandbox.compilePattern(pattern, grepOptions?.caseSensitive ?? true)
    if (Result.isFailure(compiled)) {
      return yield* fail("grep", new Sandbox.InvalidPattern({ pattern, description: compiled.failure }))
    }
    const filter = GlobPattern.make(grepOptions?.glob ?? "**/*")
    if (Result.isFailure(filter)) {
      return yield* fail("grep", new Sandbox.InvalidPattern({ pattern: grepOptions?.glob ?? "", description: filter.failure }))
    }
    const given = grepOptions?.path ?? "."
    const root = yield* locateDirectory("grep", given, "search", true)
    const files = root.kind === "file"
      ? [root.absolute]
      : (yield* Search.files(fs, root.absolute, "", filter.success)).map((path) => Search.join(root.absolute, path))
    const inside = cwd === "/" ? "/" : `${cwd}/`
    return yield* Search.grep(fs, {
      files,
      pattern: compiled.success,
      limit: Sandbox.clampLimit(grepOptions?.limit, Sandbox.DEFAULT_GREP_LIMIT),
      report: (absolute) => (absolute.startsWith(inside) ? absolute.slice(inside.length) : absolute)
    })
  })

  /** The host directories mounted so far (the sandbox's `hostDirectories`). */
  const hostDirectories: Array<string> = []
  /** Mounts `hostPath` (checked or not, by the caller) at `path`; failures name `given`. */
  const attach = Effect.fnUntraced(function*(hostPath: string, path: string, mode: Sandbox.MountMode, given: string) {
    const mounted = yield* Effect.mapError(HostMount.open(hostPath, mode, budget, given), (reason) => fail("mount", reason))
    yield* Effect.try({
      try: () => fs.mount(locate(path), mounted),
      catch: (cause) => {
        // MountableFs words it "Cannot mount at '<path>': inside existing mount '<mount>'".
        const why = FsError.messageOf(cause)
          .replace(/^Cannot mount at root '\/'$/, "the root cannot be a mount point")
          .replace(/^Cannot mount at '[^']*': /, "")
        return fail("mount", new Sandbox.Failed({ description: `Cannot mount ${given} at ${path}: ${why}`, cause }))
      }
    })
    hostDirectories.push(HostMount.resolve(hostPath))
  })

  // The real path is what gets mounted, so a symlink swapped after the check cannot redirect it.
  // The default root is read when a mount asks: most sandboxes never mount at run time.
  const mount = Effect.fn("VirtualSandbox.mount")(function*(hostPath: string, path: string, mode: Sandbox.MountMode) {
    const roots = options.mountRoots ?? HostMount.defaultRoots()
    const real = yield* Effect.mapError(HostMount.admit(hostPath, roots), (reason) => fail("mount", reason))
    yield* attach(real, path, mode, hostPath)
  })

  for (const { hostPath, path, mode } of options.mounts ?? []) {
    yield* Effect.mapError(attach(hostPath, path, mode, hostPath), (error) => fail("make", error.reason))
  }

  const service: Service = {
    ...Sandbox.make({ cwd, hostDirectories: () => [...hostDirectories], readStream, writeFile, exec, glob, grep, mount }),
    snapshot: Effect.mapError(SnapshotTree.capture(memory, budget), (reason) => fail("snapshot", reason))
  }
  return service
})

/**
 * The virtual sandbox as a layer, both as the `Sandbox` every tool uses and as `VirtualSandbox`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Sandbox.Sandbox | VirtualSandbox, Sandbox.SandboxError> =>
  Layer.effectContext(
    Effect.map(make(options), (service) => Context.make(Sandbox.Sandbox, service).pipe(Context.add(VirtualSandbox, service)))
  )

/**
 * The in-memory tree of the provided virtual sandbox.
 *
 * @since 0.1.0
 * @category combinators
 */
export const snapshot: Effect.Effect<Snapshot.Snapshot, Sandbox.SandboxError, VirtualSandbox> = VirtualSandbox.use(
  (sandbox) => sandbox.snapshot
)

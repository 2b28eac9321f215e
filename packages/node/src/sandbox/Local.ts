/**
 * LocalSandbox — the host as a sandbox: files on the local disk under `cwd`, commands run by a
 * real `bash -c`, each in its own process group that dies with the call.
 *
 * With `allowedPaths`, every path a call names (a file, an exec or glob `cwd`, a grep `path`, a
 * glob's static base) is resolved as the kernel would (Alloy 0.12.5 semantics, see
 * `@condukt/core/RealPath`) and refused unless it lands inside an allowed root; the real path is the
 * one opened. That is a guard against a confused model, not a sandbox: `exec` runs with the
 * user's rights and can reach anything they can. Without `allowedPaths`, paths are only resolved
 * against `cwd`. Runtime mounting is not supported.
 *
 * Confined (`confine`), the file methods follow the commands' rules (`ConfinedPaths`, read off the
 * same bwrap mounts): every path is resolved to its real path, refused (`OutsideAllowedPaths`,
 * naming the rule) where a confined command could not read it, or write it for `writeFile`, and
 * checked again on what the kernel opened; `glob`, `grep` and `list` skip what they refuse.
 *
 * `glob` is a `GlobPattern` walk (`internal/walkFiles.ts`, docs/decisions/0008): files only, dot
 * entries included, sorted, relative to its `cwd`, symlinks neither entered nor reported. `grep`
 * is `internal/grepFiles.ts`: RE2 per line, files streamed, dot entries and binary files skipped,
 * symlinks not followed, paths relative to the sandbox cwd (absolute outside it), unreadable files
 * reported as skipped. Limits of either are clamped to 1..100,000, never refused.
 */
import * as NodeFs from "node:fs"
import { Effect, FileSystem, Layer, Path, type PlatformError, Result, Stream } from "effect"
import * as GlobPattern from "@condukt/core/GlobPattern"
import * as GrepFiles from "../internal/grepFiles.ts"
import * as ProcessGroup from "../internal/processGroup.ts"
import * as RealPath from "@condukt/core/RealPath"
import * as RegularFile from "../internal/regularFile.ts"
import * as Tracing from "@condukt/core/Tracing"
import * as WalkFiles from "../internal/walkFiles.ts"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import * as Confine from "./Confine.ts"
import * as ConfinedPaths from "./ConfinedPaths.ts"
import * as LocalConfine from "./LocalConfine.ts"
import * as Sandbox from "@condukt/core/Sandbox"

/** @since 0.1.0 @category models */
export interface Options {
  /** The directory relative paths start from; defaults to the process's cwd. */
  readonly cwd?: string | undefined
  /** When set, files and directories outside these roots (relative ones join `cwd`) are refused. */
  readonly allowedPaths?: ReadonlyArray<string> | undefined
  /** Output kept per `exec` call (default: the process runner's 10 MiB). */
  readonly maxOutputBytes?: number | undefined
  /**
   * Runs every command inside an OS sandbox (bubblewrap): writes only under the cwd and
   * `allowedPaths`, credentials hidden, no network (or an allow list of hosts), the host's
   * processes out of sight, a process limit (`Confine`); `Tools.Command` too, unless it opts out
   * (`Sandbox.runConfined`). Fails the build where it cannot be had. Default: off.
   */
  readonly confine?: boolean | Confine.Options | undefined
}

const defaultTimeoutMs = 120_000

const errnoOf = (error: PlatformError.PlatformError): string | undefined => {
  const cause = error.reason.cause
  return typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined
}

/** "ENOTDIR: not a directory, open '/x'" → "not a directory". */
const describe = (error: PlatformError.PlatformError): string => {
  const cause = error.reason.cause
  return shortMessage(cause instanceof Error ? cause.message : error.reason.description ?? error.message)
}

const shortMessage = (text: string): string => /^[A-Z]+: ([^,]+)/.exec(text)?.[1] ?? text

/** Maps a filesystem failure on `given` (the path as the caller wrote it) to a reason. */
const reasonOf = (error: PlatformError.PlatformError, given: string, action: string): Sandbox.Reason => {
  // Without an errno code, Effect's own classification of the failure still tells the common two.
  const code = errnoOf(error) ??
    (error.reason._tag === "NotFound" ? "ENOENT" : error.reason._tag === "PermissionDenied" ? "EACCES" : undefined)
  return Sandbox.reasonOfErrno(code, given, `Cannot ${action} ${given}: ${describe(error)}`, error)
}

const fail = (method: string, reason: Sandbox.Reason) => new Sandbox.SandboxError({ method, reason })

/** What one LocalSandbox knows; the operations below are shared by every instance. */
interface Host {
  readonly fs: FileSystem.FileSystem
  readonly path: Path.Path
  readonly cwd: string
  readonly roots: ReadonlyArray<string> | undefined
  readonly maxOutputBytes: number | undefined
  readonly budget: ProcessBudget.Service
  /** The environment every command starts from, read from the host once per layer value (`make`: per call). */
  readonly env: Readonly<Record<string, string>>
  /** Set when commands run confined. */
  readonly confined: Confine.Plan | undefined
  /** Set when commands run confined: what the file methods may touch, by the commands' mounts. */
  readonly paths: ConfinedPaths.Paths | undefined
}

/**
 * The real path of `walked` (absolute, `..` in place): one realpath(3) when it exists, the
 * component walk otherwise (a file not created yet).
 */
const realPathOf = (host: Host, walked: string, expanded: string): Effect.Effect<string, Sandbox.TooManySymlinks> =>
  Effect.try(() => NodeFs.realpathSync.native(walked)).pipe(
    Effect.catch(() => Effect.mapError(RealPath.resolve(host.fs, walked), () => new Sandbox.TooManySymlinks({ path: expanded })))
  )

/**
 * The path to open for `given`: checked against the roots when there are any, and, on a confined
 * sandbox, against what its commands may do there (`access`: what the method does with it).
 */
const locate = (host: Host, method: string, given: string, access?: ConfinedPaths.Access): Effect.Effect<string, Sandbox.SandboxError> => {
  const expanded = host.path.resolve(host.cwd, given)
  const paths = host.paths
  const confined = access !== undefined && paths !== undefined
  if (host.roots === undefined && !confined) return Effect.succeed(expanded)
  // `..` is left in place so the walk applies it to the real directory, as the kernel does.
  const walked = host.path.isAbsolute(given) ? given : `${host.cwd}/${given}`
  const real = host.roots === undefined ? realPathOf(host, walked, expanded) : RealPath.check(host.fs, walked, expanded, host.roots)
  const checked = confined ? Effect.flatMap(real, (found) => Effect.fromResult(ConfinedPaths.check(paths, found, expanded, access))) : real
  return Effect.mapError(checked, (reason) => fail(method, reason))
}

/** `given` located, and required to be a directory (an exec, glob or grep starting point). */
const locateDirectory = (host: Host, method: string, given: string, action: string, access?: ConfinedPaths.Access) =>
  Effect.gen(function*() {
    const located = yield* locate(host, method, given, access)
    const info = yield* Effect.mapError(host.fs.stat(located), (error) => fail(method, reasonOf(error, given, action)))
    return { located, type: info.type }
  })

// Files are opened by `internal/regularFile.ts`: without blocking, regular files only.
const readStream = (host: Host, file: string): Stream.Stream<Uint8Array, Sandbox.SandboxError> =>
  Stream.unwrap(Effect.map(locate(host, "readStream", file, "read"), (located) =>
    Stream.mapError(
      RegularFile.stream(located, file, ConfinedPaths.openedCheck(host.paths, host.path.resolve(host.cwd, file), "read")),
      (reason) => fail("readStream", reason)
    )))

const writeFile = Effect.fn("LocalSandbox.writeFile")(function*(host: Host, file: string, content: string | Uint8Array) {
  const located = yield* locate(host, "writeFile", file, "write")
  yield* Effect.mapError(
    host.fs.makeDirectory(host.path.dirname(located), { recursive: true }),
    (error) => fail("writeFile", reasonOf(error, file, "write to"))
  )
  yield* Effect.mapError(
    RegularFile.write(located, file, content, ConfinedPaths.openedCheck(host.paths, host.path.resolve(host.cwd, file), "write")),
    (reason) => fail("writeFile", reason)
  )
})

/** `bash -c script`, confined when the sandbox is. */
const run = (host: Host, directory: string, script: string, options: Omit<ProcessGroup.RunOptions, "file" | "args">) =>
  host.confined === undefined
    ? ProcessGroup.run({ file: "bash", args: ["-c", script], ...options })
    : Confine.run(host.confined, directory, script, options)

// Combinators, not a generator, and a span only under a real tracer (`@condukt/core/Tracing`): a
// call waiting for a process permit holds all of this for as long as it waits.
const exec = (host: Host, command: string, execOptions?: Sandbox.ExecOptions): Effect.Effect<Sandbox.ExecResult, Sandbox.SandboxError> => {
  const given = execOptions?.cwd ?? "."
  const timeoutMs = execOptions?.timeout === undefined
    ? defaultTimeoutMs
    : Sandbox.timeoutMillis(execOptions.timeout)
  // No stat of the directory first: the child's chdir is the check, and a spawn that fails is
  // diagnosed afterwards (`execFailure`). A stat per call is a thread-pool round trip that 1,000
  // concurrent calls pay for nothing (bench/exec.ts, docs/decisions/0030).
  const ran = Effect.flatMap(locate(host, "exec", given), (cwd) =>
    Effect.matchEffect(
      // The timeout is the process's: it starts once a permit is held, however long the wait was.
      host.budget.withPermit(
        run(host, cwd, command, {
          cwd,
          env: execOptions?.env === undefined ? host.env : { ...host.env, ...execOptions.env },
          timeoutMs,
          maxOutputBytes: host.maxOutputBytes
        })
      ),
      {
        // The default "." is named as the directory it is, should the cwd be removed later.
        onFailure: (error) => execFailure(host, execOptions?.cwd ?? host.cwd, error, timeoutMs),
        onSuccess: (result) => Effect.succeed({ output: result.output, exitCode: result.exitCode, truncated: result.truncated })
      }
    ))
  return Tracing.span(ran, "LocalSandbox.exec")
}

/** A host program, no shell, confined (the sandbox's `runConfined`, for `Tools.Command`). */
const runConfined = (host: Host, confined: Confine.Plan, file: string, args: ReadonlyArray<string>, options: Sandbox.RunConfinedOptions) => {
  const timeoutMs = options.timeout === undefined ? defaultTimeoutMs : Sandbox.timeoutMillis(options.timeout)
  return host.budget.withPermit(
    Confine.run(confined, options.cwd, 'exec "$@"', {
      cwd: options.cwd,
      env: options.env === undefined ? host.env : { ...host.env, ...options.env },
      timeoutMs,
      maxOutputBytes: host.maxOutputBytes
    }, ["confined", file, ...args])
  ).pipe(Effect.mapBoth({
    onFailure: (error) =>
      fail(
        "runConfined",
        error._tag === "ProcessRunnerError" && error.reason._tag === "TimedOut"
          ? new Sandbox.Timeout({ timeoutMs, output: error.reason.output, truncated: error.reason.truncated })
          : new Sandbox.Failed({ description: error.message, cause: error })
      ),
    onSuccess: (result): Sandbox.ExecResult => ({ output: result.output, exitCode: result.exitCode, truncated: result.truncated })
  }))
}

const execFailure = (
  host: Host,
  given: string,
  error: ProcessGroup.RunError | ProcessBudget.PermitTimeout,
  timeoutMs: number
): Effect.Effect<never, Sandbox.SandboxError> => {
  if (error._tag === "PermitTimeout") {
    return Effect.fail(fail("exec", new Sandbox.Failed({ description: error.message, cause: error })))
  }
  const reason = error.reason
  if (reason._tag === "TimedOut") {
    return Effect.fail(fail("exec", new Sandbox.Timeout({ timeoutMs, output: reason.output, truncated: reason.truncated })))
  }
  // Most often the directory: name it as the caller wrote it, as every other method does.
  return Effect.flatMap(locateDirectory(host, "exec", given, "run a command in"), (directory) =>
    Effect.fail(fail(
      "exec",
      directory.type === "Directory"
        ? new Sandbox.Failed({ description: `Cannot run the command: ${error.message}`, cause: error })
        : new Sandbox.Failed({ description: `Cannot run a command in ${given}: not a directory` })
    )))
}

const glob = Effect.fn("LocalSandbox.glob")(function*(host: Host, pattern: string, globOptions?: Sandbox.GlobOptions) {
  const given = globOptions?.cwd ?? "."
  const base = yield* locateDirectory(host, "glob", given, "list", "list")
  if (base.type !== "Directory") {
    return yield* fail("glob", new Sandbox.Failed({ description: `Cannot list files in ${given}: not a directory` }))
  }
  const absolutePattern = pattern.startsWith("/")
  // Rooted at `/` below, so the pattern itself is relative to it.
  const compiled = GlobPattern.make(absolutePattern ? pattern.replace(/^\/+/, "") : pattern, { dot: true })
  if (Result.isFailure(compiled)) {
    return yield* fail("glob", new Sandbox.InvalidPattern({ pattern, description: compiled.failure }))
  }
  const matcher = compiled.success
  // The pattern's literal directories are opened directly (symlinks and `..` followed, as the
  // kernel would), so with roots they are checked like any path the model names.
  const start = yield* locate(host, "glob", host.path.resolve(absolutePattern ? "/" : base.located, matcher.base || "."), "list")
  const state = matcher.base === ""
    ? matcher.root
    : matcher.base.split("/").reduce<GlobPattern.State | undefined>(
      (reached, name) => reached === undefined ? undefined : matcher.enter(reached, name),
      matcher.root
    )
  if (state === undefined) return []
  const found = yield* WalkFiles.walk(start, given, matcher, state, matcher.base, ConfinedPaths.walkFence(host.paths)).pipe(
    // A base that is missing or unreadable holds no match, as for fast-glob and the shell.
    Effect.orElseSucceed(() => [])
  )
  const limited = found.slice(0, Sandbox.clampLimit(globOptions?.limit, Sandbox.DEFAULT_GLOB_LIMIT))
  return absolutePattern ? limited.map((path) => `/${path}`) : limited
})

const grep = Effect.fn("LocalSandbox.grep")(function*(host: Host, pattern: string, grepOptions?: Sandbox.GrepOptions) {
  const compiled = GrepFiles.compile(pattern, grepOptions?.caseSensitive ?? true)
  if (Result.isFailure(compiled)) {
    return yield* fail("grep", new Sandbox.InvalidPattern({ pattern, description: compiled.failure }))
  }
  const given = grepOptions?.path ?? "."
  const root = yield* locateDirectory(host, "grep", given, "search", "list")
  if (root.type !== "Directory" && root.type !== "File") {
    return yield* fail("grep", new Sandbox.Failed({ description: `Cannot search ${given}: not a regular file` }))
  }
  // A file is searched only where it may be read (a directory only has to lead somewhere readable).
  if (root.type === "File" && host.paths !== undefined) yield* locate(host, "grep", given, "read")
  const opened = ConfinedPaths.openedCheck(host.paths, given, "read")
  return yield* Effect.mapError(
    GrepFiles.search({
      root: root.located,
      rootIsFile: root.type === "File",
      display: given,
      glob: grepOptions?.glob ?? "**/*",
      pattern: compiled.success,
      limit: Sandbox.clampLimit(grepOptions?.limit, Sandbox.DEFAULT_GREP_LIMIT),
      report: (absolute) => RealPath.isWithin(absolute, host.cwd) ? host.path.relative(host.cwd, absolute) : absolute,
      fence: ConfinedPaths.walkFence(host.paths),
      admits: opened === undefined ? undefined : (fd) => opened(fd) === undefined
    }),
    (reason) => fail("grep", reason)
  )
})

/** A failed `node:fs` call on `given` as a reason, its errno read as `reasonOf` reads it. */
const reasonOfThrown = (cause: unknown, given: string, action: string): Sandbox.Reason => {
  const code = typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : undefined
  return Sandbox.reasonOfErrno(code, given, `Cannot ${action} ${given}: ${shortMessage(cause instanceof Error ? cause.message : String(cause))}`, cause)
}

const entryType = (entry: NodeFs.Dirent): Sandbox.DirectoryEntry["type"] =>
  entry.isFile() ? "file" : entry.isDirectory() ? "directory" : entry.isSymbolicLink() ? "symlink" : "other"

// `list` and `stat` are one system call each, made synchronously as the walk's are
// (`internal/walkFiles.ts`): a session's first run asks a few of them for its project
// instructions, and a thread-pool round trip each would cost more than the call itself.
const list = (host: Host, given: string): Effect.Effect<ReadonlyArray<Sandbox.DirectoryEntry>, Sandbox.SandboxError> =>
  Effect.flatMap(locate(host, "list", given, "list"), (located) =>
    Effect.try({
      try: () =>
        ConfinedPaths.visibleEntries(host.paths, located, NodeFs.readdirSync(located, { withFileTypes: true }))
          .map((entry) => ({ name: entry.name, type: entryType(entry) })),
      catch: (cause) => fail("list", reasonOfThrown(cause, given, "list"))
    }))

const stat = (host: Host, given: string): Effect.Effect<Sandbox.FileInfo, Sandbox.SandboxError> =>
  Effect.flatMap(locate(host, "stat", given, "list"), (located) =>
    Effect.try({
      try: (): Sandbox.FileInfo => {
        const info = NodeFs.statSync(located)
        return { type: info.isFile() ? "file" : info.isDirectory() ? "directory" : "other", size: info.size, modified: info.mtimeMs }
      },
      catch: (cause) => fail("stat", reasonOfThrown(cause, given, "stat"))
    }))

/**
 * Builds the service over the host filesystem and processes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options = {}) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const cwd = yield* resolveCwd(fs, path, options)
  const env = ProcessGroup.baseEnv()
  const confined = yield* LocalConfine.confinement(options, cwd, env)
  yield* LocalConfine.hold(confined)
  return build(fs, path, yield* ProcessBudget.ProcessBudget, cwd, options, env, confined)
})

/**
 * The real path of the configured cwd (the process's by default), which must be an existing
 * directory: a missing one fails the build with `NotFound` naming it, not every later call with
 * `NotFound "."` (docs/decisions/0052; it is not created: a mistyped path must not become an
 * empty workspace).
 */
const resolveCwd = (fs: FileSystem.FileSystem, path: Path.Path, options: Options) =>
  Effect.try({
    // Both read the process's cwd, which throws once that directory has been removed.
    try: () => path.resolve(options.cwd ?? process.cwd()),
    catch: () =>
      fail("make", new Sandbox.Failed({ description: `Cannot resolve ${options.cwd ?? "the working directory"}: the process's working directory no longer exists` }))
  }).pipe(Effect.flatMap((given) =>
    // An existing directory's real path is one realpath(3) away; the component walk is the
    // fallback, and then the stat tells what is wrong with the path.
    fs.realPath(given).pipe(
      Effect.catch(() => Effect.mapError(RealPath.resolve(fs, given), (reason) => fail("make", reason))),
      Effect.tap((real) =>
        fs.stat(real).pipe(
          Effect.mapError((error) => fail("make", reasonOf(error, given, "open the working directory"))),
          Effect.filterOrFail(
            (info) => info.type === "Directory",
            () => fail("make", new Sandbox.Failed({ description: `Cannot use ${given} as the working directory: not a directory` }))
          )
        ))
    )
  ))

const build = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  budget: ProcessBudget.Service,
  cwd: string,
  options: Options,
  env: Readonly<Record<string, string>>,
  confinement: LocalConfine.Confinement | undefined
): Sandbox.Service => {
  const confined = confinement?.plan
  const host: Host = {
    fs,
    path,
    cwd,
    roots: options.allowedPaths?.map((root) => path.resolve(cwd, root)),
    maxOutputBytes: options.maxOutputBytes,
    budget,
    env,
    confined,
    paths: confinement?.paths
  }
  const directories = [cwd, ...(host.roots ?? [])]
  return Sandbox.make({
    cwd,
    hostDirectories: () => directories,
    readStream: (file) => readStream(host, file),
    writeFile: (file, content) => writeFile(host, file, content),
    exec: (command, execOptions) => exec(host, command, execOptions),
    ...(confined === undefined ? {} : { runConfined: (file, args, runOptions) => runConfined(host, confined, file, args, runOptions) }),
    glob: (pattern, globOptions) => glob(host, pattern, globOptions),
    grep: (pattern, grepOptions) => grep(host, pattern, grepOptions),
    list: (directory) => list(host, directory),
    stat: (file) => stat(host, file)
  })
}

/**
 * The Local sandbox as a layer over the host's services: the filesystem, paths, and the program's
 * process budget (`Condukt.layer` provides all three). A cwd that cannot be resolved, does not
 * exist or is not a directory fails the build with a `SandboxError` naming it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<Sandbox.Sandbox, Sandbox.SandboxError, FileSystem.FileSystem | Path.Path | ProcessBudget.ProcessBudget> => {
  // Every session built from this layer value shares one service over the same directory (it
  // holds no state of its own), so the cwd's real path is resolved, and the host environment
  // commands start from read, once per layer value, not once per session (sessions start by the
  // thousand: bench/sessions.ts; and reading `process.env` makes new strings each time, ~0.5 KB a
  // session), and what is remembered per sandbox (the project instructions) is remembered across
  // them. A build under other host services gets its own. A failure is not kept: the next build
  // tries again.
  let cwd: string | undefined
  let env: Readonly<Record<string, string>> | undefined
  let confined: { readonly confinement: LocalConfine.Confinement | undefined } | undefined
  let shared: { readonly services: ReadonlyArray<unknown>; readonly service: Sandbox.Service } | undefined
  return Layer.effect(
    Sandbox.Sandbox,
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const budget = yield* ProcessBudget.ProcessBudget
      if (shared !== undefined && shared.services[0] === fs && shared.services[1] === path && shared.services[2] === budget) {
        yield* LocalConfine.hold(confined?.confinement)
        return shared.service
      }
      cwd ??= yield* resolveCwd(fs, path, options)
      env ??= ProcessGroup.baseEnv()
      confined ??= { confinement: yield* LocalConfine.confinement(options, cwd, env) }
      yield* LocalConfine.hold(confined.confinement)
      const service = build(fs, path, budget, cwd, options, env, confined.confinement)
      shared = { services: [fs, path, budget], service }
      return service
    })
  )
}

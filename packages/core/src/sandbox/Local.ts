/**
 * LocalSandbox — the host as a sandbox: files on the local disk under `cwd`, commands run by a
 * real `bash -c`, each in its own process group that dies with the call.
 *
 * With `allowedPaths`, every path a call names (a file, an exec or glob `cwd`, a grep `path`, a
 * glob's static base) is resolved as the kernel would (Alloy 0.12.5 semantics, see
 * `internal/realPath.ts`) and refused unless it lands inside an allowed root; the real path is the
 * one opened. That is a guard against a confused model, not a sandbox: `exec` runs with the
 * user's rights and can reach anything they can. Without `allowedPaths`, paths are only resolved
 * against `cwd`. Runtime mounting is not supported.
 *
 * `glob` is fast-glob: files only, dot entries included, sorted, relative to its `cwd`, symlinked
 * directories not entered. `grep` is `internal/grepFiles.ts`: JavaScript RegExp per line, dot
 * entries and binary files skipped, symlinks not followed, paths relative to the sandbox cwd
 * (absolute outside it). Limits of either are clamped to 1..100,000, never refused.
 */
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { Effect, FileSystem, Layer, Path, type PlatformError, Result, Scope } from "effect"
import FastGlob from "fast-glob"
import * as GrepFiles from "../internal/grepFiles.ts"
import * as ProcessGroup from "../internal/processGroup.ts"
import * as RealPath from "../internal/realPath.ts"
import * as Sandbox from "../Sandbox.ts"

/** @since 0.1.0 @category models */
export interface Options {
  /** The directory relative paths start from; defaults to the process's cwd. */
  readonly cwd?: string | undefined
  /** When set, files and directories outside these roots (relative ones join `cwd`) are refused. */
  readonly allowedPaths?: ReadonlyArray<string> | undefined
  /** Output kept per `exec` call (default: the process runner's 10 MiB). */
  readonly maxOutputBytes?: number | undefined
}

const defaultTimeoutMs = 120_000
const defaultGlobLimit = 1000
const defaultGrepLimit = 200
/** Glob and grep limits are clamped to 1..maxLimit rather than refused: a limit is a request. */
const maxLimit = 100_000

const clampLimit = (limit: number | undefined, fallback: number): number =>
  limit === undefined || Number.isNaN(limit) ? fallback : Math.min(maxLimit, Math.max(1, Math.floor(limit)))

const errnoOf = (error: PlatformError.PlatformError): string | undefined => {
  const cause = error.reason.cause
  return typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined
}

/** "ENOTDIR: not a directory, open '/x'" → "not a directory". */
const describe = (error: PlatformError.PlatformError): string => {
  const cause = error.reason.cause
  const text = cause instanceof Error ? cause.message : error.reason.description ?? error.message
  return /^[A-Z]+: ([^,]+)/.exec(text)?.[1] ?? text
}

/** Maps a filesystem failure on `given` (the path as the caller wrote it) to a reason. */
const reasonOf = (error: PlatformError.PlatformError, given: string, action: string): Sandbox.Reason => {
  const code = errnoOf(error)
  if (code === "ENOENT" || (code === undefined && error.reason._tag === "NotFound")) {
    return new Sandbox.NotFound({ path: given })
  }
  if (code === "EISDIR") return new Sandbox.IsDirectory({ path: given })
  if (code === "EACCES" || code === "EPERM" || (code === undefined && error.reason._tag === "PermissionDenied")) {
    return new Sandbox.PermissionDenied({ path: given })
  }
  if (code === "EROFS") return new Sandbox.ReadOnly({ path: given })
  if (code === "ELOOP") return new Sandbox.TooManySymlinks({ path: given })
  return new Sandbox.Failed({ description: `Cannot ${action} ${given}: ${describe(error)}`, cause: error })
}

const fail = (method: string, reason: Sandbox.Reason) => new Sandbox.SandboxError({ method, reason })

/**
 * Builds the service over the host filesystem and processes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("LocalSandbox.make")(function*(options: Options = {}) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const cwd = yield* Effect.mapError(
    RealPath.resolve(fs, path.resolve(options.cwd ?? process.cwd())),
    (reason) => fail("make", reason)
  )
  const roots = options.allowedPaths?.map((root) => path.resolve(cwd, root))

  /** The path to open for `given`: checked against the roots when there are any. */
  const locate = (method: string, given: string): Effect.Effect<string, Sandbox.SandboxError> => {
    const expanded = path.resolve(cwd, given)
    if (roots === undefined) return Effect.succeed(expanded)
    // `..` is left in place so the walk applies it to the real directory, as the kernel does.
    const walked = path.isAbsolute(given) ? given : `${cwd}/${given}`
    return Effect.mapError(RealPath.check(fs, walked, expanded, roots), (reason) => fail(method, reason))
  }

  /** `given` located, and required to be a directory (an exec, glob or grep starting point). */
  const locateDirectory = (method: string, given: string, action: string) =>
    Effect.gen(function*() {
      const located = yield* locate(method, given)
      const info = yield* Effect.mapError(fs.stat(located), (error) => fail(method, reasonOf(error, given, action)))
      return { located, type: info.type }
    })

  const readFile = Effect.fn("LocalSandbox.readFile")(function*(file: string) {
    const located = yield* locate("readFile", file)
    return yield* Effect.mapError(fs.readFile(located), (error) => fail("readFile", reasonOf(error, file, "read")))
  })

  const writeFile = Effect.fn("LocalSandbox.writeFile")(function*(file: string, content: string | Uint8Array) {
    const located = yield* locate("writeFile", file)
    const failure = (error: PlatformError.PlatformError) => fail("writeFile", reasonOf(error, file, "write to"))
    yield* Effect.mapError(fs.makeDirectory(path.dirname(located), { recursive: true }), failure)
    yield* Effect.mapError(
      typeof content === "string" ? fs.writeFileString(located, content) : fs.writeFile(located, content),
      failure
    )
  })

  const exec = Effect.fn("LocalSandbox.exec")(function*(command: string, execOptions?: Sandbox.ExecOptions) {
    const given = execOptions?.cwd ?? "."
    const directory = yield* locateDirectory("exec", given, "run a command in")
    if (directory.type !== "Directory") {
      return yield* fail("exec", new Sandbox.Failed({ description: `Cannot run a command in ${given}: not a directory` }))
    }
    const timeoutMs = execOptions?.timeout === undefined
      ? defaultTimeoutMs
      : Sandbox.timeoutMillis(execOptions.timeout)
    const result = yield* Effect.mapError(
      ProcessGroup.run({
        file: "bash",
        args: ["-c", command],
        cwd: directory.located,
        env: { ...ProcessGroup.baseEnv(), ...execOptions?.env },
        timeoutMs,
        maxOutputBytes: options.maxOutputBytes
      }),
      (error) =>
        fail(
          "exec",
          error._tag === "TimedOut"
            ? new Sandbox.Timeout({ timeoutMs: error.timeoutMs })
            : new Sandbox.Failed({ description: `Cannot run the command: ${error.description}`, cause: error })
        )
    )
    return { output: result.output, exitCode: result.exitCode, truncated: result.truncated }
  })

  const glob = Effect.fn("LocalSandbox.glob")(function*(pattern: string, globOptions?: Sandbox.GlobOptions) {
    const given = globOptions?.cwd ?? "."
    const base = yield* locateDirectory("glob", given, "list")
    if (base.type !== "Directory") {
      return yield* fail("glob", new Sandbox.Failed({ description: `Cannot list files in ${given}: not a directory` }))
    }
    if (roots !== undefined) {
      // fast-glob reads each static prefix directly (following symlinks) before walking the
      // rest without them, so those prefixes are exactly what may lead outside.
      for (const task of FastGlob.generateTasks(pattern)) {
        yield* locate("glob", path.resolve(base.located, task.base))
      }
    }
    const found = yield* Effect.tryPromise({
      try: () =>
        FastGlob(pattern, {
          cwd: base.located,
          dot: true,
          onlyFiles: true,
          followSymbolicLinks: false,
          suppressErrors: true
        }),
      catch: (cause) =>
        fail("glob", new Sandbox.Failed({ description: `Cannot list ${pattern} in ${given}: ${String(cause)}`, cause }))
    })
    return found.sort().slice(0, clampLimit(globOptions?.limit, defaultGlobLimit))
  })

  const grep = Effect.fn("LocalSandbox.grep")(function*(pattern: string, grepOptions?: Sandbox.GrepOptions) {
    const compiled = GrepFiles.compile(pattern, grepOptions?.caseSensitive ?? true)
    if (Result.isFailure(compiled)) {
      return yield* fail("grep", new Sandbox.InvalidPattern({ pattern, description: compiled.failure }))
    }
    const given = grepOptions?.path ?? "."
    const root = yield* locateDirectory("grep", given, "search")
    if (root.type !== "Directory" && root.type !== "File") {
      return yield* fail("grep", new Sandbox.Failed({ description: `Cannot search ${given}: not a regular file` }))
    }
    return yield* Effect.mapError(
      GrepFiles.search({
        root: root.located,
        rootIsFile: root.type === "File",
        display: given,
        glob: grepOptions?.glob ?? "**/*",
        pattern: compiled.success,
        limit: clampLimit(grepOptions?.limit, defaultGrepLimit),
        report: (absolute) => RealPath.isWithin(absolute, cwd) ? path.relative(cwd, absolute) : absolute
      }),
      (reason) => fail("grep", reason)
    )
  })

  return Sandbox.make({ cwd, readFile, writeFile, exec, glob, grep })
})

/**
 * The Local sandbox as a layer, its Node services included.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Sandbox.Sandbox> =>
  Layer.effect(Sandbox.Sandbox, Effect.flatMap(hostServices, (services) => Effect.provideContext(make(options), services))).pipe(
    Layer.orDie
  )

// FileSystem and Path hold no resources, so one instance serves every LocalSandbox in the process:
// a session starting its own sandbox does not rebuild the Node services (bench/sessions.ts).
const hostServices = Layer.buildWithMemoMap(
  Layer.mergeAll(NodeFileSystem.layer, NodePath.layer),
  Layer.makeMemoMapUnsafe(),
  Scope.makeUnsafe()
)

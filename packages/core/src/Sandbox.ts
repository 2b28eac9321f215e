/**
 * Sandbox — the one seam through which tools touch files and processes.
 *
 * A backend supplies a few primitives (`readStream`, `writeFile`, `exec`, and optionally `glob`,
 * `grep`, `mount`); `make` derives the rest once (`readFile` as bytes and `read` as UTF-8 text,
 * both bounded; `edit` with occurrence semantics) and answers `NotSupported` for a missing optional
 * capability, so every tool works the same on every backend. Paths are relative to the sandbox's
 * `cwd` unless absolute.
 *
 * File operations touch regular files only: a named pipe, a device or a socket is refused
 * (`NotRegularFile`) before a byte moves, and no backend may block a thread finding that out
 * (docs/decisions/0010). A whole-file read is bounded (`DEFAULT_MAX_FILE_BYTES` unless the caller
 * asks for more); a caller that wants a window of a big file streams it.
 *
 * The contract refuses to guess: no encoding detection, no retries, no shell fallback for glob.
 * What `glob` and `grep` take and give, their limits and grep's pattern dialect live in
 * `SandboxSearch`, errors in `SandboxError`; this module re-exports both.
 */
import { Context, Duration, Effect, Layer, type Scope, Stream } from "effect"
import {
  Failed,
  IsDirectory,
  NotFound,
  NotSupported,
  PermissionDenied,
  ReadOnly,
  type Reason,
  SandboxError,
  TooLarge,
  TooManySymlinks
} from "./SandboxError.ts"
import type { GlobOptions, GrepOptions, GrepResult } from "./SandboxSearch.ts"

export * from "./SandboxError.ts"
export * from "./SandboxSearch.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface ExecOptions {
  /** Working directory, relative to the sandbox cwd. */
  readonly cwd?: string | undefined
  /** Extra environment variables for this call only (they never persist). */
  readonly env?: Readonly<Record<string, string>> | undefined
  /**
   * Wall-clock limit of the command's run, from its start (a wait for a process permit before it
   * is not counted); the whole process tree is killed when it runs out.
   */
  readonly timeout?: Duration.Input | undefined
}

/** How `runConfined` runs a program. @since 0.1.0 @category models */
export interface RunConfinedOptions {
  /** The absolute host directory it runs in. */
  readonly cwd: string
  /** Variables added to the sandbox's environment for this run. */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Wall-clock limit of the run, from its start, as `ExecOptions.timeout`. */
  readonly timeout?: Duration.Input | undefined
}

/** @since 0.1.0 @category models */
export interface ExecResult {
  /** stdout and stderr, interleaved as written. */
  readonly output: string
  readonly exitCode: number
  /** True when the backend stopped collecting output at its byte cap. */
  readonly truncated: boolean
  /**
   * The backend's sentence when it stopped the command at one of its limits (commands run, loop
   * iterations, output size): kept apart so that no cut of a long output can hide it.
   */
  readonly limit?: string | undefined
}

/** @since 0.1.0 @category models */
export interface EditResult {
  readonly occurrences: number
  /** The content after the edit (the unchanged content unless `occurrences` is 1). */
  readonly content: string
}

/** @since 0.1.0 @category models */
export interface ReadOptions {
  /** The most bytes the caller takes; a bigger file fails with `TooLarge` (default `DEFAULT_MAX_FILE_BYTES`). */
  readonly maxBytes?: number | undefined
}

/** @since 0.1.0 @category models */
export type MountMode = "read-only" | "read-write"

/** One entry of a directory, as `list` gives it: its type is the entry's own (a link is not followed). */
export interface DirectoryEntry {
  readonly name: string
  readonly type: "file" | "directory" | "symlink" | "other"
}

/** What `stat` tells of a path (links followed): enough to see that a file changed since it was read. */
export interface FileInfo {
  readonly type: "file" | "directory" | "other"
  readonly size: number
  /** When its content last changed, in milliseconds since the epoch (fractional where the backend keeps more). */
  readonly modified: number
}

/** The optional capabilities: a backend may lack them; the service always answers (NotSupported). */
export interface Capabilities {
  readonly glob: (pattern: string, options?: GlobOptions) => Effect.Effect<ReadonlyArray<string>, SandboxError>
  readonly grep: (pattern: string, options?: GrepOptions) => Effect.Effect<GrepResult, SandboxError>
  readonly mount: (hostPath: string, path: string, mode: MountMode) => Effect.Effect<void, SandboxError>
  /** The entries of a directory, in no particular order (a missing one: `NotFound`). */
  readonly list: (path: string) => Effect.Effect<ReadonlyArray<DirectoryEntry>, SandboxError>
  /** The type, size and modification time of a path (a missing one: `NotFound`). */
  readonly stat: (path: string) => Effect.Effect<FileInfo, SandboxError>
}

/** What a backend must (and may) implement; `make` turns it into the full service. */
export interface Primitives extends Partial<Capabilities> {
  readonly cwd: string
  /**
   * The host directories the sandbox's files are, as they are now (a local sandbox's cwd and
   * allowed paths, a virtual one's mounts): what its session's MCP servers are told as their roots.
   * Absent: the cwd alone.
   */
  readonly hostDirectories?: (() => ReadonlyArray<string>) | undefined
  /**
   * Present only on a sandbox that confines the commands it runs (a LocalSandbox with `confine`):
   * runs a host program (`file` with `args`, no shell) in the host directory `cwd`, fenced as the
   * sandbox fences its commands. `Tools.Command` runs through it unless it opts out.
   */
  readonly runConfined?: ((file: string, args: ReadonlyArray<string>, options: RunConfinedOptions) => Effect.Effect<ExecResult, SandboxError>) | undefined
  /**
   * The file's bytes from start to end, chunk by chunk, read as the stream is pulled. A missing
   * file, a directory or anything but a regular file fails before the first chunk, and finding
   * that out never blocks a thread (open without blocking, then check what was opened).
   */
  readonly readStream: (path: string) => Stream.Stream<Uint8Array, SandboxError>
  /** Writes the file, creating its parent directories; refuses anything but a regular file (or a new one). */
  readonly writeFile: (path: string, content: string | Uint8Array) => Effect.Effect<void, SandboxError>
  readonly exec: (command: string, options?: ExecOptions) => Effect.Effect<ExecResult, SandboxError>
}

/** @since 0.1.0 @category models */
export interface Service extends Omit<Primitives, keyof Capabilities>, Capabilities {
  /** The whole file, at most `maxBytes` of it (`TooLarge` past that). */
  readonly readFile: (path: string, options?: ReadOptions) => Effect.Effect<Uint8Array, SandboxError>
  /** The whole file as UTF-8 text, bounded as `readFile`; invalid UTF-8 fails with a `Failed` reason giving the file's size. */
  readonly read: (path: string, options?: ReadOptions) => Effect.Effect<string, SandboxError>
  /**
   * Replaces `oldText` by `newText` when it occurs exactly once; reports the count either way.
   * The file is read whole, so one over `DEFAULT_MAX_FILE_BYTES` fails with `TooLarge`.
   */
  readonly edit: (path: string, oldText: string, newText: string) => Effect.Effect<EditResult, SandboxError>
  /**
   * Runs `onChange` after each change of `hostDirectories` (a runtime `mount`), before the mount
   * returns, for as long as the calling scope lasts. Absent: they never change (`make` gives it to
   * a backend with both `hostDirectories` and `mount`).
   */
  readonly watchHostDirectories?: ((onChange: Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>) | undefined
}

/**
 * The session's sandbox. Tools reach it through their call context; tests swap it by `Layer`.
 *
 * @since 0.1.0
 * @category services
 */
export class Sandbox extends Context.Service<Sandbox, Service>()("@condukt/core/Sandbox") {}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

const decoder = new TextDecoder("utf-8", { fatal: true })
const encoder = new TextEncoder()

/**
 * Decodes UTF-8 strictly; the failure names the file and its size (`size`, when `bytes` is only a
 * part of it). Text too long for a JavaScript string (~512 MiB) is said to be that, not invalid.
 */
export const decodeUtf8 = (
  method: string,
  path: string,
  bytes: Uint8Array,
  size: number = bytes.length
): Effect.Effect<string, SandboxError> =>
  Effect.try({
    try: () => decoder.decode(bytes),
    catch: (cause) =>
      new SandboxError({
        method,
        reason: new Failed({
          // A strict decoder throws TypeError for bad bytes; anything else is V8's string length limit.
          description: cause instanceof TypeError
            ? `Cannot read ${path}: the file is not valid UTF-8 text (${size} bytes)`
            : `Cannot read ${path}: the file is too large to hold as text (${size} bytes)`,
          cause
        })
      })
  })

const countOccurrences = (haystack: string, needle: string): number => {
  if (needle.length === 0) return 0
  let count = 0
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) count++
  return count
}

const notSupported = (operation: string) => () =>
  Effect.fail(new SandboxError({ method: operation, reason: new NotSupported({ operation }) }))

/**
 * How much a whole-file read (`readFile`, `read`, `edit`) takes when the caller names no bound:
 * 16 MiB, far more than any source file, far less than what would hurt the process.
 *
 * @since 0.1.0
 * @category models
 */
export const DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024

/** Collects `stream` whole, failing with `TooLarge` as soon as it passes `maxBytes`. */
const collectBounded = (stream: Stream.Stream<Uint8Array, SandboxError>, path: string, maxBytes: number) =>
  Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    return Stream.runForEach(stream, (chunk) => {
      size += chunk.length
      if (size > maxBytes) return Effect.fail(new SandboxError({ method: "readFile", reason: new TooLarge({ path, maxBytes }) }))
      chunks.push(chunk)
      return Effect.void
    }).pipe(Effect.map(() => {
      if (chunks.length === 1) return chunks[0]!
      const bytes = new Uint8Array(size)
      let at = 0
      for (const chunk of chunks) {
        bytes.set(chunk, at)
        at += chunk.length
      }
      return bytes
    }))
  })

/** A `mount` that tells its watchers of each mount it made, and how to watch it. */
const watched = (mount: Capabilities["mount"]): Pick<Service, "mount" | "watchHostDirectories"> => {
  const watchers = new Set<{ readonly onChange: Effect.Effect<void> }>()
  return {
    mount: (hostPath, path, mode) =>
      Effect.tap(mount(hostPath, path, mode), () => Effect.forEach([...watchers], (watcher) => watcher.onChange, { discard: true })),
    watchHostDirectories: (onChange) =>
      Effect.asVoid(Effect.acquireRelease(Effect.sync(() => {
        const watcher = { onChange }
        watchers.add(watcher)
        return watcher
      }), (watcher) => Effect.sync(() => watchers.delete(watcher))))
  }
}

/**
 * Builds the full service from a backend's primitives.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (primitives: Primitives): Service => {
  const readFile = (path: string, options?: ReadOptions) =>
    collectBounded(primitives.readStream(path), path, options?.maxBytes ?? DEFAULT_MAX_FILE_BYTES)
  const read = (path: string, options?: ReadOptions) =>
    Effect.flatMap(readFile(path, options), (bytes) => decodeUtf8("read", path, bytes))
  return {
    cwd: primitives.cwd,
    ...(primitives.hostDirectories === undefined ? {} : { hostDirectories: primitives.hostDirectories }),
    ...(primitives.runConfined === undefined ? {} : { runConfined: primitives.runConfined }),
    readStream: primitives.readStream,
    readFile,
    writeFile: primitives.writeFile,
    exec: primitives.exec,
    glob: primitives.glob ?? notSupported("glob"),
    grep: primitives.grep ?? notSupported("grep"),
    mount: primitives.mount ?? notSupported("mount"),
    list: primitives.list ?? notSupported("list"),
    stat: primitives.stat ?? notSupported("stat"),
    read,
    edit: (path, oldText, newText) =>
      Effect.flatMap(read(path), (content) => {
        const occurrences = countOccurrences(content, oldText)
        if (occurrences !== 1) return Effect.succeed({ occurrences, content })
        const index = content.indexOf(oldText)
        const next = content.slice(0, index) + newText + content.slice(index + oldText.length)
        return Effect.as(primitives.writeFile(path, encoder.encode(next)), { occurrences, content: next })
      }),
    // Last: its `mount` replaces the backend's.
    ...(primitives.hostDirectories === undefined || primitives.mount === undefined ? {} : watched(primitives.mount))
  }
}

const unused = (method: string) => () =>
  Effect.die(new Error(`Sandbox.${method} was called on a no-op sandbox; give the test a real one`))

/**
 * A sandbox for tests that must have one but use none of it: it holds no file (a read fails with
 * `NotFound`, as the project instructions a session looks for at start do), writing and exec die
 * saying so, the optional capabilities are absent. Pass the primitives a test does use.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeNoop = (primitives: Partial<Primitives> = {}): Service =>
  make({
    cwd: "/",
    readStream: (path) => Stream.fail(new SandboxError({ method: "readStream", reason: new NotFound({ path }) })),
    writeFile: unused("writeFile"),
    exec: unused("exec"),
    ...primitives
  })

/**
 * `makeNoop` as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNoop = (primitives: Partial<Primitives> = {}): Layer.Layer<Sandbox> =>
  Layer.succeed(Sandbox, makeNoop(primitives))

/**
 * A sandbox layer from primitives, for custom backends and tests.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (primitives: Primitives): Layer.Layer<Sandbox> => Layer.succeed(Sandbox, make(primitives))

// ---------------------------------------------------------------------------------------------
// What every backend shares: errno reasons and timeouts (search limits and grep's dialect: SandboxSearch)
// ---------------------------------------------------------------------------------------------

/**
 * The reason for a failed file operation on `path`, from its errno code; anything without a
 * reason of its own is `Failed` with `description` (a backend words it, naming path and action).
 *
 * @since 0.1.0
 * @category constructors
 */
export const reasonOfErrno = (code: string | undefined, path: string, description: string, cause?: unknown): Reason => {
  switch (code) {
    case "ENOENT":
      return new NotFound({ path })
    case "EISDIR":
      return new IsDirectory({ path })
    case "EACCES":
    case "EPERM":
      return new PermissionDenied({ path })
    case "EROFS":
      return new ReadOnly({ path })
    case "ELOOP":
      return new TooManySymlinks({ path })
    default:
      return new Failed({ description, cause })
  }
}

/** Converts a `Duration.Input` timeout to whole milliseconds. */
export const timeoutMillis = (timeout: Duration.Input): number => Duration.toMillis(Duration.fromInputUnsafe(timeout))

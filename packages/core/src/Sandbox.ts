/**
 * Sandbox — the one seam through which tools touch files and processes.
 *
 * A backend supplies a few primitives (`readFile`, `writeFile`, `exec`, and optionally `glob`,
 * `grep`, `mount`); `make` derives the rest once (`read` as UTF-8 text, `edit` with occurrence
 * semantics) and answers `NotSupported` for a missing optional capability, so every tool works the
 * same on every backend. Paths are relative to the sandbox's `cwd` unless absolute.
 *
 * The contract refuses to guess: no encoding detection, no retries, no shell fallback for glob.
 */
import { Context, Duration, Effect, Layer, Result, Schema } from "effect"

// ---------------------------------------------------------------------------------------------
// Reasons: facts about what went wrong, each with the fields a caller can act on
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category errors */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { path: Schema.String }) {
  override get message() {
    return `File not found: ${this.path}`
  }
}

/** @since 0.1.0 @category errors */
export class IsDirectory extends Schema.TaggedError<IsDirectory>()("IsDirectory", { path: Schema.String }) {
  override get message() {
    return `${this.path} is a directory, not a file`
  }
}

/** @since 0.1.0 @category errors */
export class PermissionDenied extends Schema.TaggedError<PermissionDenied>()("PermissionDenied", {
  path: Schema.String
}) {
  override get message() {
    return `Permission denied: ${this.path}`
  }
}

/** @since 0.1.0 @category errors */
export class OutsideAllowedPaths extends Schema.TaggedError<OutsideAllowedPaths>()("OutsideAllowedPaths", {
  path: Schema.String,
  allowed: Schema.Array(Schema.String)
}) {
  override get message() {
    return `Path ${this.path} is outside allowed directories`
  }
}

/** @since 0.1.0 @category errors */
export class TooManySymlinks extends Schema.TaggedError<TooManySymlinks>()("TooManySymlinks", {
  path: Schema.String
}) {
  override get message() {
    return `Path ${this.path} cannot be resolved: too many levels of symbolic links`
  }
}

/** @since 0.1.0 @category errors */
export class ReadOnly extends Schema.TaggedError<ReadOnly>()("ReadOnly", { path: Schema.String }) {
  override get message() {
    return `${this.path} is on a read-only filesystem`
  }
}

/**
 * The call ran out of time and its processes were stopped; `output` is what the command printed
 * until then (absent when a backend cannot tell), `truncated` when that passed the byte cap.
 *
 * @since 0.1.0
 * @category errors
 */
export class Timeout extends Schema.TaggedError<Timeout>()("Timeout", {
  timeoutMs: Schema.Finite,
  output: Schema.optional(Schema.String),
  truncated: Schema.optional(Schema.Boolean)
}) {
  override get message() {
    return `Timed out after ${this.timeoutMs}ms`
  }
}

/** @since 0.1.0 @category errors */
export class NotSupported extends Schema.TaggedError<NotSupported>()("NotSupported", {
  operation: Schema.String
}) {
  override get message() {
    return `The active sandbox does not support ${this.operation}`
  }
}

/** @since 0.1.0 @category errors */
export class InvalidPattern extends Schema.TaggedError<InvalidPattern>()("InvalidPattern", {
  pattern: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `Invalid pattern ${this.pattern}: ${this.description}`
  }
}

/** Anything the backend could not classify; `description` is safe to show, `cause` is for logs. */
export class Failed extends Schema.TaggedError<Failed>()("Failed", {
  description: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return this.description
  }
}

/** @since 0.1.0 @category errors */
export const Reason = Schema.Union([
  NotFound,
  IsDirectory,
  PermissionDenied,
  OutsideAllowedPaths,
  TooManySymlinks,
  ReadOnly,
  Timeout,
  NotSupported,
  InvalidPattern,
  Failed
])
export type Reason = typeof Reason.Type

/**
 * The one error of the seam: which backend and method failed, and why (`reason`). Its `message`
 * is the reason's sentence, written to be read by a model as well as a person.
 *
 * @since 0.1.0
 * @category errors
 */
export class SandboxError extends Schema.TaggedError<SandboxError>()("SandboxError", {
  method: Schema.String,
  reason: Reason
}) {
  override get message() {
    return this.reason.message
  }
}

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface ExecOptions {
  /** Working directory, relative to the sandbox cwd. */
  readonly cwd?: string | undefined
  /** Extra environment variables for this call only (they never persist). */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Wall-clock limit; the whole process tree is killed when it runs out. */
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
export interface GlobOptions {
  readonly cwd?: string | undefined
  readonly limit?: number | undefined
}

/** @since 0.1.0 @category models */
export interface GrepOptions {
  /** Directory or file to search, relative to the sandbox cwd. */
  readonly path?: string | undefined
  /** Glob filter on the files searched (default every non-hidden file). */
  readonly glob?: string | undefined
  readonly caseSensitive?: boolean | undefined
  readonly limit?: number | undefined
}

/** @since 0.1.0 @category models */
export interface GrepMatch {
  readonly path: string
  readonly lineNumber: number
  readonly line: string
}

/** @since 0.1.0 @category models */
export interface EditResult {
  readonly occurrences: number
  /** The content after the edit (the unchanged content unless `occurrences` is 1). */
  readonly content: string
}

/** @since 0.1.0 @category models */
export type MountMode = "read-only" | "read-write"

/** The optional capabilities: a backend may lack them; the service always answers (NotSupported). */
export interface Capabilities {
  readonly glob: (pattern: string, options?: GlobOptions) => Effect.Effect<ReadonlyArray<string>, SandboxError>
  readonly grep: (pattern: string, options?: GrepOptions) => Effect.Effect<ReadonlyArray<GrepMatch>, SandboxError>
  readonly mount: (hostPath: string, path: string, mode: MountMode) => Effect.Effect<void, SandboxError>
}

/** What a backend must (and may) implement; `make` turns it into the full service. */
export interface Primitives extends Partial<Capabilities> {
  readonly cwd: string
  readonly readFile: (path: string) => Effect.Effect<Uint8Array, SandboxError>
  /** Writes the file, creating its parent directories. */
  readonly writeFile: (path: string, content: string | Uint8Array) => Effect.Effect<void, SandboxError>
  readonly exec: (command: string, options?: ExecOptions) => Effect.Effect<ExecResult, SandboxError>
}

/** @since 0.1.0 @category models */
export interface Service extends Omit<Primitives, keyof Capabilities>, Capabilities {
  /** The file as UTF-8 text; invalid UTF-8 fails with a `Failed` reason giving the file's size. */
  readonly read: (path: string) => Effect.Effect<string, SandboxError>
  /** Replaces `oldText` by `newText` when it occurs exactly once; reports the count either way. */
  readonly edit: (path: string, oldText: string, newText: string) => Effect.Effect<EditResult, SandboxError>
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

/** Decodes UTF-8 strictly; the failure names the file and its size. */
export const decodeUtf8 = (method: string, path: string, bytes: Uint8Array): Effect.Effect<string, SandboxError> =>
  Effect.try({
    try: () => decoder.decode(bytes),
    catch: () =>
      new SandboxError({
        method,
        reason: new Failed({ description: `Cannot read ${path}: the file is not valid UTF-8 text (${bytes.length} bytes)` })
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
 * Builds the full service from a backend's primitives.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (primitives: Primitives): Service => {
  const read = (path: string) => Effect.flatMap(primitives.readFile(path), (bytes) => decodeUtf8("read", path, bytes))
  return {
    cwd: primitives.cwd,
    readFile: primitives.readFile,
    writeFile: primitives.writeFile,
    exec: primitives.exec,
    glob: primitives.glob ?? notSupported("glob"),
    grep: primitives.grep ?? notSupported("grep"),
    mount: primitives.mount ?? notSupported("mount"),
    read,
    edit: (path, oldText, newText) =>
      Effect.flatMap(read(path), (content) => {
        const occurrences = countOccurrences(content, oldText)
        if (occurrences !== 1) return Effect.succeed({ occurrences, content })
        const index = content.indexOf(oldText)
        const next = content.slice(0, index) + newText + content.slice(index + oldText.length)
        return Effect.as(primitives.writeFile(path, encoder.encode(next)), { occurrences, content: next })
      })
  }
}

const unused = (method: string) => () =>
  Effect.die(new Error(`Sandbox.${method} was called on a no-op sandbox; give the test a real one`))

/**
 * A sandbox for tests that must have one but use none of it: every primitive dies saying so, the
 * optional capabilities are absent. Pass the primitives a test does use.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeNoop = (primitives: Partial<Primitives> = {}): Service =>
  make({ cwd: "/", readFile: unused("readFile"), writeFile: unused("writeFile"), exec: unused("exec"), ...primitives })

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
// What every backend shares: limits and the grep pattern dialect
// ---------------------------------------------------------------------------------------------

/** `glob`'s limit when none is given. */
export const DEFAULT_GLOB_LIMIT = 1000
/** `grep`'s limit when none is given. */
export const DEFAULT_GREP_LIMIT = 200
/** The largest `glob` or `grep` limit honoured. */
export const MAX_LIMIT = 100_000

/**
 * A `glob` or `grep` limit as backends apply it: a limit is a request, so it is clamped to
 * 1..`MAX_LIMIT`, never refused.
 *
 * @since 0.1.0
 * @category combinators
 */
export const clampLimit = (limit: number | undefined, fallback: number): number =>
  limit === undefined || Number.isNaN(limit) ? fallback : Math.min(MAX_LIMIT, Math.max(1, Math.floor(limit)))

// V8 words it "Invalid regular expression: /<source>/<flags>: <reason>"; the reason is what helps.
const v8Prefix = /^Invalid regular expression: \/[\s\S]*\/[a-z]*: /

/**
 * `grep`'s pattern dialect, the same on every backend: a JavaScript RegExp, case-insensitive on
 * request; the failure is the engine's reason alone (`Unterminated group`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const compilePattern = (pattern: string, caseSensitive: boolean): Result.Result<RegExp, string> =>
  Result.try({
    try: () => new RegExp(pattern, caseSensitive ? "" : "i"),
    catch: (error) => (error instanceof Error ? error.message : String(error)).replace(v8Prefix, "")
  })

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

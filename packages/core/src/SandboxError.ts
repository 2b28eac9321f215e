/**
 * SandboxError — the one error of the Sandbox seam and its reasons: facts about what went wrong
 * (`NotFound`, `NotRegularFile`, `TooLarge`, `Timeout`…), each with the fields a caller can act on
 * and a message a model can read. `Sandbox` re-exports them all.
 */
import { Schema } from "effect"


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

const fileKinds = {
  FIFO: "a named pipe",
  CharacterDevice: "a character device",
  BlockDevice: "a block device",
  Socket: "a socket"
} as const

/**
 * The path names something that is neither a regular file nor a directory: reading or writing it
 * could block for ever (a named pipe) or never end (`/dev/zero`), so it is refused.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotRegularFile extends Schema.TaggedError<NotRegularFile>()("NotRegularFile", {
  path: Schema.String,
  kind: Schema.Literals(["FIFO", "CharacterDevice", "BlockDevice", "Socket", "Unknown"])
}) {
  /** What the path is, as the end of a sentence: "a named pipe, not a regular file". */
  get description() {
    return this.kind === "Unknown" ? "not a regular file" : `${fileKinds[this.kind]}, not a regular file`
  }
  override get message() {
    return `${this.path} is ${this.description}`
  }
}

/**
 * The file holds more bytes than the caller's bound (`maxBytes`); nothing past the bound was kept.
 *
 * @since 0.1.0
 * @category errors
 */
export class TooLarge extends Schema.TaggedError<TooLarge>()("TooLarge", {
  path: Schema.String,
  maxBytes: Schema.Finite
}) {
  override get message() {
    return `${this.path} is larger than ${this.maxBytes} bytes`
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

/**
 * The path lies outside what the sandbox lets its file methods touch: its `allowed` directories,
 * or a rule of its own, which `description` then states as the whole sentence (a confined
 * LocalSandbox's: "Path … is denied by the sandbox's confinement (denyRead): …").
 *
 * @since 0.1.0
 * @category errors
 */
export class OutsideAllowedPaths extends Schema.TaggedError<OutsideAllowedPaths>()("OutsideAllowedPaths", {
  path: Schema.String,
  allowed: Schema.Array(Schema.String),
  description: Schema.optional(Schema.String)
}) {
  override get message() {
    return this.description ?? `Path ${this.path} is outside allowed directories`
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
  NotRegularFile,
  TooLarge,
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

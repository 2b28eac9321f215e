/**
 * fsError — what a just-bash filesystem failure means, for the virtual sandbox.
 *
 * just-bash's filesystems throw plain `Error`s whose message starts with a Node-style code
 * ("EROFS: read-only file system, write '/a.txt'"); there is no `code` property, and the quoted
 * path is relative to the mounted filesystem, not the sandbox. So the code is read from the
 * message, and the path reported is always the one the caller wrote.
 */
import { Sandbox } from "@condukt/core"
import { messageOf } from "./thrown.ts"

/** @since 0.1.0 @category models */
export interface Errno {
  /** "EROFS", "ENOENT", … */
  readonly code: string
  /** The words after the code: "read-only file system". */
  readonly description: string
  /** The operation named after the comma, when there is one: "write", "mkdir". */
  readonly operation: string | undefined
}

const errnoPattern = /^(E[A-Z]+): ([^,]*)(?:, ([a-z]+))?/

/**
 * The Node-style code of a thrown filesystem error, if it has one.
 *
 * @since 0.1.0
 * @category constructors
 */
export const errnoOf = (cause: unknown): Errno | undefined => {
  const message = cause instanceof Error ? cause.message : undefined
  const match = message === undefined ? null : errnoPattern.exec(message)
  return match === null ? undefined : { code: match[1]!, description: match[2]!, operation: match[3] }
}

/** A thrown value as one line of text (`thrown.ts`). */
export { messageOf }

/**
 * A host-mount operation refused before it touched the host (`hostMount.ts`): the file is not a
 * regular one, or too big to read whole. The message is Node-shaped, so just-bash and `errnoOf`
 * read it like any other failure ("EINVAL: not a regular file (a named pipe), read '/fifo'").
 *
 * @since 0.1.0
 * @category models
 */
export class Refused extends Error {
  readonly refusal: Refusal
  constructor(refusal: Refusal, message: string) {
    super(message)
    this.refusal = refusal
  }
}

/** Why `Refused`. */
export type Refusal =
  | { readonly _tag: "NotRegularFile"; readonly kind: Sandbox.NotRegularFile["kind"] }
  | { readonly _tag: "TooLarge"; readonly maxBytes: number }

/** What a full in-memory filesystem is called in every message. */
export const noSpace = (budgetBytes: number): string =>
  `no space left in the sandbox (its filesystem holds at most ${budgetBytes} bytes)`

/**
 * Maps a failure on `given` (the path as the caller wrote it) to a reason; `action` words the
 * unclassified case ("Cannot <action> <given>: …"), as LocalSandbox does.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reasonOf = (cause: unknown, given: string, action: string, budgetBytes: number): Sandbox.Reason => {
  if (cause instanceof Refused) {
    return cause.refusal._tag === "NotRegularFile"
      ? new Sandbox.NotRegularFile({ path: given, kind: cause.refusal.kind })
      : new Sandbox.TooLarge({ path: given, maxBytes: cause.refusal.maxBytes })
  }
  const errno = errnoOf(cause)
  const why = errno?.code === "ENOSPC"
    ? noSpace(budgetBytes)
    : errno?.code === "ENOTDIR"
    ? "not a directory"
    : errno?.description ?? messageOf(cause)
  return Sandbox.reasonOfErrno(errno?.code, given, `Cannot ${action} ${given}: ${why}`, cause)
}

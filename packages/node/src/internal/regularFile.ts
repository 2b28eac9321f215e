/**
 * regularFile — opening a host file that has to be a regular file, without ever blocking a thread.
 *
 * open(2) on a named pipe waits for the other end, pinning a libuv thread until it comes (maybe
 * never); reading a device such as `/dev/zero` never ends. So a file is opened with O_NONBLOCK (a
 * pipe then opens at once, or fails with ENXIO when opened for writing with no reader) and fstat
 * on the descriptor says what was opened. Checking the path before opening it would leave a window
 * in which another process swaps it. O_NONBLOCK changes nothing for a regular file.
 *
 * Effect's FileSystem takes only string flags, so it cannot pass O_NONBLOCK: this is the one place
 * LocalSandbox opens files with node:fs. It refuses everything but regular files (directories
 * with `IsDirectory`, the rest with `NotRegularFile`).
 */
import { Effect, Stream } from "effect"
import * as NodeFs from "node:fs"
import * as Sandbox from "@condukt/core/Sandbox"

const { O_CREAT, O_NONBLOCK, O_RDONLY, O_WRONLY } = NodeFs.constants

/** Bytes per read: big enough that a 400 MB file is ~1,600 reads, small enough to be nothing in memory. */
export const CHUNK_BYTES = 256 * 1024

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

/** "ENOTDIR: not a directory, open '/x'" → "not a directory". */
const describe = (cause: unknown): string => {
  const text = cause instanceof Error ? cause.message : String(cause)
  return /^[A-Z]+: ([^,]+)/.exec(text)?.[1] ?? text
}

const reasonOf = (cause: unknown, given: string, action: string): Sandbox.Reason =>
  // A named pipe opened for writing without a reader: the open itself says what it is.
  codeOf(cause) === "ENXIO"
    ? new Sandbox.NotRegularFile({ path: given, kind: "FIFO" })
    : Sandbox.reasonOfErrno(codeOf(cause), given, `Cannot ${action} ${given}: ${describe(cause)}`, cause)

const kindOf = (stats: NodeFs.Stats): Sandbox.NotRegularFile["kind"] =>
  stats.isFIFO()
    ? "FIFO"
    : stats.isCharacterDevice()
    ? "CharacterDevice"
    : stats.isBlockDevice()
    ? "BlockDevice"
    : stats.isSocket()
    ? "Socket"
    : "Unknown"

/**
 * What is asked of a descriptor once opened, before anything is read or written through it: a
 * refusal, or undefined (a confined sandbox's rules, checked on the path the kernel opened).
 */
export type Check = (fd: number) => Sandbox.Reason | undefined

/** `located` opened with `flags | O_NONBLOCK`, closed with the scope, passed by `check`, and required to be a regular file. */
const openRegular = (located: string, flags: number, given: string, action: string, check: Check | undefined) =>
  Effect.gen(function*() {
    const handle = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => NodeFs.promises.open(located, flags | O_NONBLOCK, 0o666),
        catch: (cause) => reasonOf(cause, given, action)
      }),
      (handle) => Effect.ignore(Effect.tryPromise(() => handle.close()))
    )
    const refused = check?.(handle.fd)
    if (refused !== undefined) return yield* Effect.fail(refused)
    const stats = yield* Effect.tryPromise({ try: () => handle.stat(), catch: (cause) => reasonOf(cause, given, action) })
    if (stats.isDirectory()) return yield* Effect.fail(new Sandbox.IsDirectory({ path: given }))
    if (!stats.isFile()) return yield* Effect.fail(new Sandbox.NotRegularFile({ path: given, kind: kindOf(stats) }))
    return handle
  })

/**
 * The bytes of the regular file at `located`, `CHUNK_BYTES` at a time, read as they are pulled;
 * failures name `given`, the path as the caller wrote it. `check` is asked first.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stream = (located: string, given: string, check?: Check): Stream.Stream<Uint8Array, Sandbox.Reason> =>
  Stream.unwrap(Effect.map(openRegular(located, O_RDONLY, given, "read", check), (handle) =>
    Stream.unfold(0, (position) =>
      Effect.tryPromise({
        try: () => handle.read(new Uint8Array(CHUNK_BYTES), 0, CHUNK_BYTES, position),
        catch: (cause) => reasonOf(cause, given, "read")
      }).pipe(Effect.map(({ buffer, bytesRead }) =>
        bytesRead === 0 ? undefined : [buffer.subarray(0, bytesRead), position + bytesRead] as const
      ))
    )))

/**
 * Replaces the content of the regular file at `located` (creating it), refusing anything else
 * (and what `check` refuses) before a byte is written or the file cut.
 *
 * @since 0.1.0
 * @category constructors
 */
export const write = (located: string, given: string, content: string | Uint8Array, check?: Check): Effect.Effect<void, Sandbox.Reason> =>
  Effect.scoped(Effect.gen(function*() {
    const handle = yield* openRegular(located, O_WRONLY | O_CREAT, given, "write to", check)
    // Truncated only now: opening with O_TRUNC would cut the file before knowing it may be written.
    yield* Effect.tryPromise({
      try: () => handle.truncate(0).then(() => handle.writeFile(content)),
      catch: (cause) => reasonOf(cause, given, "write to")
    })
  }))

/**
 * hostMount — a host directory as a filesystem the virtual sandbox can mount: read-only through
 * just-bash's `OverlayFs` in read-only mode (every write fails with EROFS, nothing is kept in
 * memory), read-write through its `ReadWriteFs` (writes go straight to the host directory).
 *
 * Both keep `allowSymlinks` off, so a link inside the directory cannot lead out of it, and both
 * resolve `..` inside the virtual tree, so `/mnt/x/../..` never reaches the host. The host
 * directory is checked here first so the caller gets a typed reason, not just-bash's message.
 *
 * just-bash reads and writes host files whole, with Node's promise API: a named pipe would pin a
 * libuv thread until a writer comes (four of them hang every later file operation in the process)
 * and a huge file would be read into memory at once. So every read and write through a mount is
 * preceded by a stat: anything but a regular file (or a file still to be created) is refused, and
 * a file over `maxReadBytes` is not read (`FsError.Refused`). The stat and the open are two steps;
 * only a host process can swap the file between them, and a virtual sandbox starts none.
 *
 * A mount at run time is first admitted here (`admit`): its real path must be one of the sandbox's
 * `mountRoots` or lie below one (docs/decisions/0052).
 *
 * This is the one module of the package that touches the host filesystem directly.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { Sandbox } from "@condukt/core"
import { Effect } from "effect"
import type { BufferEncoding, FileContent, FsStat, IFileSystem } from "just-bash"
import { OverlayFs, ReadWriteFs } from "just-bash"
import { messageOf, Refused } from "./fsError.ts"

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

// The file-type bits of `st_mode` (stat(2)); just-bash's FsStat carries the raw mode.
const fileTypes: ReadonlyArray<readonly [number, Sandbox.NotRegularFile["kind"], string]> = [
  [0o010000, "FIFO", "a named pipe"],
  [0o020000, "CharacterDevice", "a character device"],
  [0o060000, "BlockDevice", "a block device"],
  [0o140000, "Socket", "a socket"]
]

const refusedKind = (stat: FsStat, path: string, operation: string): Refused => {
  const [, kind, name] = fileTypes.find(([bits]) => (stat.mode & 0o170000) === bits) ?? [0, "Unknown", "unknown type"]
  return new Refused({ _tag: "NotRegularFile", kind }, `EINVAL: not a regular file (${name}), ${operation} '${path}'`)
}

type Mounted = OverlayFs | ReadWriteFs

/** `inner` with every read and write of a file checked first (see the module comment). */
class Guarded implements IFileSystem {
  private readonly inner: Mounted
  private readonly maxReadBytes: number
  constructor(inner: Mounted, maxReadBytes: number) {
    this.inner = inner
    this.maxReadBytes = maxReadBytes
  }

  /** Resolves when `path` may be read whole; a missing path is left to the read itself to report. */
  private readable(path: string): Promise<void> {
    return this.inner.stat(path).then((stat) => {
      if (stat.isDirectory) return undefined
      if (!stat.isFile) return Promise.reject(refusedKind(stat, path, "read"))
      if (stat.size <= this.maxReadBytes) return undefined
      return Promise.reject(
        new Refused(
          { _tag: "TooLarge", maxBytes: this.maxReadBytes },
          `EFBIG: file too large (over ${this.maxReadBytes} bytes), read '${path}'`
        )
      )
    }, () => undefined)
  }

  /** Resolves when `path` may be written: a regular file, a directory (the write says EISDIR), or nothing yet. */
  private writable(path: string): Promise<void> {
    return this.inner.stat(path).then(
      (stat) => (stat.isFile || stat.isDirectory ? undefined : Promise.reject(refusedKind(stat, path, "write"))),
      () => undefined
    )
  }

  readFile(path: string, options?: Parameters<IFileSystem["readFile"]>[1]) {
    return this.readable(path).then(() => this.inner.readFile(path, options))
  }
  readFileBytes(path: string) {
    return this.readable(path).then(() => this.inner.readFileBytes(path))
  }
  readFileBuffer(path: string) {
    return this.readable(path).then(() => this.inner.readFileBuffer(path))
  }
  writeFile(path: string, content: FileContent, options?: Parameters<IFileSystem["writeFile"]>[2]) {
    return this.writable(path).then(() => this.inner.writeFile(path, content, options))
  }
  appendFile(path: string, content: FileContent, options?: Parameters<IFileSystem["appendFile"]>[2] | BufferEncoding) {
    return this.writable(path).then(() => this.inner.appendFile(path, content, options))
  }
  cp(src: string, dest: string, options?: Parameters<IFileSystem["cp"]>[2]) {
    return this.readable(src).then(() => this.writable(dest)).then(() => this.inner.cp(src, dest, options))
  }
  exists(path: string) {
    return this.inner.exists(path)
  }
  stat(path: string) {
    return this.inner.stat(path)
  }
  lstat(path: string) {
    return this.inner.lstat(path)
  }
  mkdir(path: string, options?: Parameters<IFileSystem["mkdir"]>[1]) {
    return this.inner.mkdir(path, options)
  }
  readdir(path: string) {
    return this.inner.readdir(path)
  }
  readdirWithFileTypes(path: string) {
    return this.inner.readdirWithFileTypes(path)
  }
  rm(path: string, options?: Parameters<IFileSystem["rm"]>[1]) {
    return this.inner.rm(path, options)
  }
  mv(src: string, dest: string) {
    return this.inner.mv(src, dest)
  }
  resolvePath(base: string, path: string) {
    return this.inner.resolvePath(base, path)
  }
  getAllPaths() {
    return this.inner.getAllPaths()
  }
  chmod(path: string, mode: number) {
    return this.inner.chmod(path, mode)
  }
  symlink(target: string, linkPath: string) {
    return this.inner.symlink(target, linkPath)
  }
  link(existingPath: string, newPath: string) {
    return this.inner.link(existingPath, newPath)
  }
  readlink(path: string) {
    return this.inner.readlink(path)
  }
  realpath(path: string) {
    return this.inner.realpath(path)
  }
  utimes(path: string, atime: Date, mtime: Date) {
    return this.inner.utimes(path, atime, mtime)
  }
}

/**
 * The real path of `hostPath` (resolved against the process's cwd, every symlink followed), or the
 * resolved path itself when it does not exist: mounting it will say so.
 */
const realPath = (hostPath: string): Effect.Effect<string> => {
  const resolved = NodePath.resolve(hostPath)
  return Effect.orElseSucceed(Effect.tryPromise(() => NodeFs.promises.realpath(resolved)), () => resolved)
}

/** True when `real` is `root` or lies below it (a directory boundary, not a string prefix). */
const isWithin = (real: string, root: string): boolean =>
  real === root || real.startsWith(root.endsWith("/") ? root : root + "/")

/** The absolute host directory a mount of `hostPath` opens (relative paths start at the process's cwd). */
export const resolve = (hostPath: string): string => NodePath.resolve(hostPath)

/**
 * The process's working directory, the one root runtime mounts have when the sandbox names none.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultRoots = (): ReadonlyArray<string> => [NodePath.resolve(".")]

/**
 * The real path of `hostPath` when it is one of `roots` or lies below one, both judged on real
 * paths (relative ones start at the process's cwd); `OutsideAllowedPaths` naming `hostPath` and
 * the roots as given otherwise.
 *
 * @since 0.1.0
 * @category constructors
 */
export const admit = (hostPath: string, roots: ReadonlyArray<string>): Effect.Effect<string, Sandbox.OutsideAllowedPaths> =>
  Effect.gen(function*() {
    const real = yield* realPath(hostPath)
    const realRoots = yield* Effect.forEach(roots, realPath)
    if (realRoots.some((root) => isWithin(real, root))) return real
    return yield* new Sandbox.OutsideAllowedPaths({ path: hostPath, allowed: [...roots] })
  })

/**
 * The filesystem for `hostPath` (resolved against the process's cwd) in `mode`; no file bigger
 * than `maxReadBytes` is read through it. Failures name `given`, the path as the caller wrote it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = (
  hostPath: string,
  mode: Sandbox.MountMode,
  maxReadBytes: number,
  given: string = hostPath
): Effect.Effect<IFileSystem, Sandbox.Reason> => {
  const root = NodePath.resolve(hostPath)
  return Effect.tryPromise({
    try: () => NodeFs.promises.stat(root),
    catch: (cause) => Sandbox.reasonOfErrno(codeOf(cause), given, `Cannot mount ${given}: ${messageOf(cause)}`, cause)
  }).pipe(
    Effect.filterOrFail(
      (stat) => stat.isDirectory(),
      () => new Sandbox.Failed({ description: `Cannot mount ${given}: not a directory` })
    ),
    Effect.flatMap(() =>
      Effect.try({
        try: (): IFileSystem =>
          new Guarded(
            mode === "read-only" ? new OverlayFs({ root, readOnly: true, mountPoint: "/" }) : new ReadWriteFs({ root }),
            maxReadBytes
          ),
        catch: (cause) => new Sandbox.Failed({ description: `Cannot mount ${given}: ${messageOf(cause)}`, cause })
      })
    )
  )
}

/**
 * hostMount — a host directory as a filesystem the virtual sandbox can mount: read-only through
 * just-bash's `OverlayFs` in read-only mode (every write fails with EROFS, nothing is kept in
 * memory), read-write through its `ReadWriteFs` (writes go straight to the host directory).
 *
 * Both keep `allowSymlinks` off, so a link inside the directory cannot lead out of it, and both
 * resolve `..` inside the virtual tree, so `/mnt/x/../..` never reaches the host. The host
 * directory is checked here first so the caller gets a typed reason, not just-bash's message.
 * This is the one module of the package that touches the host filesystem directly.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { Sandbox } from "@condukt/core"
import { Effect } from "effect"
import { type IFileSystem, OverlayFs, ReadWriteFs } from "just-bash"
import { messageOf } from "./fsError.ts"

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

/**
 * The filesystem for `hostPath` (resolved against the process's cwd) in `mode`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = (hostPath: string, mode: Sandbox.MountMode): Effect.Effect<IFileSystem, Sandbox.Reason> => {
  const root = NodePath.resolve(hostPath)
  return Effect.tryPromise({
    try: () => NodeFs.promises.stat(root),
    catch: (cause) => Sandbox.reasonOfErrno(codeOf(cause), hostPath, `Cannot mount ${hostPath}: ${messageOf(cause)}`, cause)
  }).pipe(
    Effect.filterOrFail(
      (stat) => stat.isDirectory(),
      () => new Sandbox.Failed({ description: `Cannot mount ${hostPath}: not a directory` })
    ),
    Effect.flatMap(() =>
      Effect.try({
        try: (): IFileSystem =>
          mode === "read-only"
            ? new OverlayFs({ root, readOnly: true, mountPoint: "/" })
            : new ReadWriteFs({ root }),
        catch: (cause) => new Sandbox.Failed({ description: `Cannot mount ${hostPath}: ${messageOf(cause)}`, cause })
      })
    )
  )
}

/**
 * Undumpable — the launcher's Node, copied once per program to a file its user can execute but not
 * read, so that the launcher runs non-dumpable (docs/decisions/0070).
 *
 * The kernel marks a process non-dumpable when it executes a file it cannot read, and no process
 * then attaches to it without `CAP_SYS_PTRACE` — which no confined command has: neither `ptrace`
 * nor `/proc/<pid>/mem`, `environ`, `fd/*`, nor `pidfd_getfd`. Node has no `prctl` to do it itself.
 * A command the launcher spawns executes `bash`, readable, and so is dumpable as ever.
 */
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const copies = new Map<string, string>()

/**
 * The execute-only copy of the Node at `node` (a real path), made the first time it is asked for
 * (on disk, ~100 MB, tens of milliseconds) in a directory only this user can enter, removed when
 * the program exits. Throws when it cannot be made.
 *
 * @since 0.1.0
 * @category constructors
 */
export const node = (source: string): string => {
  const found = copies.get(source)
  if (found !== undefined) return found
  const directory = NodeFs.mkdtempSync(path.join(os.tmpdir(), "condukt-node-"))
  process.once("exit", () => NodeFs.rmSync(directory, { recursive: true, force: true }))
  const copy = path.join(directory, "node")
  NodeFs.copyFileSync(source, copy, NodeFs.constants.COPYFILE_FICLONE)
  NodeFs.chmodSync(copy, 0o111)
  copies.set(source, copy)
  return copy
}

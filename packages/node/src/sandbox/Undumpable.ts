/**
 * Undumpable — the launcher's Node, copied to a file its user can execute but not read, so that
 * the launcher runs non-dumpable (docs/decisions/0070).
 *
 * The kernel marks a process non-dumpable when it executes a file it cannot read, and no process
 * then attaches to it without `CAP_SYS_PTRACE` — which no confined command has: neither `ptrace`
 * nor `/proc/<pid>/mem`, `environ`, `fd/*`, nor `pidfd_getfd`. Node has no `prctl` to do it itself.
 * A command the launcher spawns executes `bash`, readable, and so is dumpable as ever.
 */
import { execFileSync } from "node:child_process"
import * as NodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const copies = new Map<string, string>()

/**
 * The execute-only copy of `source` in `root` (made there when missing, and then run once: a
 * `noexec` mount cannot hold it), or the reason it cannot be had there.
 */
const copyIn = (root: string, source: string, uid: number): string => {
  const directory = path.join(root, `condukt-node-${uid}`)
  NodeFs.mkdirSync(directory, { recursive: true, mode: 0o700 })
  const own = NodeFs.lstatSync(directory)
  if (!own.isDirectory() || own.uid !== uid || (own.mode & 0o077) !== 0) {
    throw new Error(`${directory} is not this user's own private directory`)
  }
  const info = NodeFs.statSync(source)
  // Named `node` still (its process's name), in a directory of its own.
  const version = path.join(directory, `${info.ino}-${info.size}-${Math.trunc(info.mtimeMs)}`)
  NodeFs.mkdirSync(version, { recursive: true, mode: 0o700 })
  const copy = path.join(version, "node")
  const made = NodeFs.statSync(copy, { throwIfNoEntry: false })
  if (made === undefined || made.size !== info.size || (made.mode & 0o777) !== 0o111) {
    const partial = path.join(directory, `.${process.pid}-${Math.random().toString(36).slice(2)}`)
    try {
      NodeFs.copyFileSync(source, partial, NodeFs.constants.COPYFILE_FICLONE)
      NodeFs.chmodSync(partial, 0o111)
      execFileSync(partial, ["-e", ""], { stdio: "ignore", env: {} })
    } catch (error) {
      // A copy cut short (a full disk) or one that cannot run: nothing of it is left behind.
      NodeFs.rmSync(partial, { force: true })
      throw error
    }
    NodeFs.renameSync(partial, copy)
  }
  return copy
}

/**
 * The execute-only copy of the Node at `source` (a real path). One per Node binary and user, kept
 * (~100 MB on disk, made in tens of milliseconds) in `condukt-node-<uid>` under the temporary
 * directory — or under `~/.cache` where that one cannot execute it (`noexec`) — a directory only
 * this user may enter, shared by this user's programs, so none leaves one behind; named by the
 * binary's inode, size and time, so an upgraded Node gets its own. Made under a name of its own,
 * then renamed: two programs making it at once both succeed. Throws, saying why for each place,
 * when it cannot be had.
 *
 * @since 0.1.0
 * @category constructors
 */
export const node = (source: string): string => {
  const found = copies.get(source)
  if (found !== undefined) return found
  const uid = process.getuid?.() ?? 0
  const failures: Array<string> = []
  for (const root of [os.tmpdir(), path.join(os.homedir(), ".cache")]) {
    try {
      const copy = copyIn(root, source, uid)
      copies.set(source, copy)
      return copy
    } catch (error) {
      failures.push(`${root}: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  throw new Error(`no execute-only copy of ${source} could be made (${failures.join("; ")})`)
}

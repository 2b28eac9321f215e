/**
 * reaper — the process groups a program started do not outlive it, even when it dies without a
 * word (`kill -9`, the OOM killer): a cluster runner that dies while a Bash call runs must not
 * leave its `sleep 1000` behind (issue 25). Linux's PR_SET_PDEATHSIG is out of Node's reach and
 * would only reach the group's leader, not its grandchildren; so one small watcher per program, an
 * `awk` started on the first group, in a group of its own and no child of this process, holds the
 * read end of a pipe from this process: `processGroup.ts` and `spawnGroup.ts` write `+<pgid>` when a group starts and `-<pgid>`
 * once it is dead. When this process dies, however it dies, the kernel closes the pipe: awk reads
 * EOF and sends SIGKILL to every group still listed. A program that ends its groups itself (every
 * scope closed) leaves an empty list. Costs one write per start and end, no poll; where awk cannot
 * be started the guard is off and nothing else changes.
 */
import { spawn } from "node:child_process"
import type { Writable } from "node:stream"

/** Lists the groups (`+pgid`, `-pgid`); at EOF kills those left, in one `kill`. */
const PROGRAM =
  `{ if (substr($0, 1, 1) == "+") groups[substr($0, 2)] = 1; else delete groups[substr($0, 2)] }
END { list = ""; for (g in groups) list = list " -" g; if (list != "") system("kill -KILL" list " 2>/dev/null") }`

/** The watcher, `off` where it could not be started. */
let watcher: Writable | "off" | undefined

const started = (): Writable | "off" => {
  if (watcher !== undefined) return watcher
  try {
    // Started in the background by a shell that exits at once: awk is no child of this program
    // (a program counting its children, to find what it left, does not find it), in the shell's
    // new group, reading the pipe on descriptor 3 (Node destroys a child's stdin when it exits).
    const child = spawn("/bin/sh", ["-c", `awk "$1" <&3 3<&- &`, "sh", PROGRAM], {
      detached: true,
      stdio: ["ignore", "ignore", "ignore", "pipe"],
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", LC_ALL: "C" }
    })
    const pipe = child.stdio[3] as Writable | null
    child.once("error", () => (watcher = "off"))
    // No reader left (awk could not start, or was killed on its own): the guard is off.
    pipe?.on("error", () => (watcher = "off"))
    // It must not keep this program's event loop alive.
    child.unref()
    ;(pipe as unknown as { unref?: () => void } | null)?.unref?.()
    watcher = pipe ?? "off"
  } catch {
    watcher = "off"
  }
  return watcher
}

const write = (line: string): void => {
  const pipe = started()
  if (pipe !== "off" && pipe.writable) pipe.write(line)
}

/** Group `pgid` started: it is killed if this process dies before `forget(pgid)`. */
export const watch = (pgid: number): void => write(`+${pgid}\n`)

/** Group `pgid` is dead (its leader exited, SIGKILL sent to the rest). */
export const forget = (pgid: number): void => {
  if (watcher !== undefined && watcher !== "off") write(`-${pgid}\n`)
}

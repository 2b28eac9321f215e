/**
 * reaper — the process groups a program started do not outlive it, even when it dies without a
 * word (`kill -9`, the OOM killer): a cluster runner that dies while a Bash call runs must not
 * leave its `sleep 1000` behind (issue 25). Linux's PR_SET_PDEATHSIG is out of Node's reach and
 * would only reach the group's leader, not its grandchildren; so one small watcher per program, a
 * `awk` started on the first group, in a group of its own, holds the read end of a pipe from this
 * process: `processGroup.ts` and `spawnGroup.ts` write `+<pgid>` when a group starts and `-<pgid>`
 * once it is dead. When this process dies, however it dies, the kernel closes the pipe: awk reads
 * EOF and sends SIGKILL to every group still listed. A program that ends its groups itself (every
 * scope closed) leaves an empty list. Costs one write per start and end, no poll; where awk cannot
 * be started the guard is off and nothing else changes.
 */
import { type ChildProcess, spawn } from "node:child_process"

/** Lists the groups (`+pgid`, `-pgid`); at EOF kills those left, in one `kill`. */
const PROGRAM =
  `{ if (substr($0, 1, 1) == "+") groups[substr($0, 2)] = 1; else delete groups[substr($0, 2)] }
END { list = ""; for (g in groups) list = list " -" g; if (list != "") system("kill -KILL" list " 2>/dev/null") }`

/** The watcher, `off` where it could not be started. */
let watcher: ChildProcess | "off" | undefined

const ignore = (): void => {}

const started = (): ChildProcess | "off" => {
  if (watcher !== undefined) return watcher
  try {
    const child = spawn("awk", [PROGRAM], {
      detached: true,
      stdio: ["pipe", "ignore", "ignore"],
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", LC_ALL: "C" }
    })
    child.once("error", () => (watcher = "off"))
    // awk gone (killed on its own): writes would fail; the guard is off.
    child.once("exit", () => (watcher = "off"))
    child.stdin?.on("error", ignore)
    // It must not keep this program's event loop alive, nor does it need to be waited for.
    child.unref()
    ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
    watcher = child
  } catch {
    watcher = "off"
  }
  return watcher
}

const write = (line: string): void => {
  const child = started()
  if (child !== "off" && child.stdin?.writable === true) child.stdin.write(line)
}

/** Group `pgid` started: it is killed if this process dies before `forget(pgid)`. */
export const watch = (pgid: number): void => write(`+${pgid}\n`)

/** Group `pgid` is dead (its leader exited, SIGKILL sent to the rest). */
export const forget = (pgid: number): void => {
  if (watcher !== undefined && watcher !== "off") write(`-${pgid}\n`)
}

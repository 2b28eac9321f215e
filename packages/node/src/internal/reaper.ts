/**
 * reaper — the process groups a program started do not outlive it, even when it dies without a
 * word (`kill -9`, the OOM killer): a cluster runner that dies while a Bash call runs must not
 * leave its `sleep 1000` behind (issue 25). Linux's PR_SET_PDEATHSIG is out of Node's reach and
 * would only reach the group's leader, not its grandchildren; so one small watcher per program, an
 * `awk` started on the first group, in a session of its own and no child of this process, holds the
 * read end of a pipe from this process: `processGroup.ts` and `spawnGroup.ts` write `+<pgid>` when a
 * group starts and `-<pgid>` once it is dead. When this process dies, however it dies, the kernel
 * closes the pipe: awk reads EOF and sends SIGKILL to every group still listed, in one `kill`. A
 * program that ends its groups itself (every scope closed) leaves an empty list. Costs one write per
 * start and end, no poll; where awk cannot be started the guard is off and nothing else changes.
 *
 * A group id outlives its group: a program killed between a group's end and its `-<pgid>` leaves
 * the id listed, and Linux gives a free id to the next process. So `+<pgid>` carries the leader's
 * start time (`/proc/<pgid>/stat`, read while the leader cannot have been reaped yet), and at EOF a
 * group whose id now names a process started at another time is left alone. And a group runs
 * nothing before it is listed: processGroup.ts's `LISTED` waits for the word sent after `+<pgid>`
 * (docs/decisions/0065, its last amendment).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import type { Writable } from "node:stream"

/**
 * Lists the groups (`+pgid start`, `-pgid`); at EOF kills those left, but for an id now held by a
 * process started at another time (a leader gone, its group empty, its id given again). `start` is
 * field 22 of `/proc/<pid>/stat`, counted after the command's closing parenthesis (which may hold
 * spaces); empty where there is no /proc: then the group is killed as listed.
 */
const PROGRAM = `function started(g,    file, line, fields) {
  file = "/proc/" g "/stat"; line = ""
  if ((getline line < file) <= 0) line = ""
  close(file)
  if (line == "") return ""
  sub(/.*\\) /, "", line)
  return split(line, fields, " ") >= 20 ? fields[20] : ""
}
substr($1, 1, 1) == "+" { groups[substr($1, 2)] = $2; next }
{ delete groups[substr($1, 2)] }
END {
  list = ""
  for (g in groups) {
    now = started(g)
    if (groups[g] == "" || now == "" || now == groups[g]) list = list " -" g
  }
  if (list != "") system("kill -KILL" list " 2>/dev/null")
}`

/** The start time of process `pid` (`/proc/<pid>/stat`, field 22), or "" where it cannot be read. */
const startOf = (pid: number): string => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ", 20)[19] ?? ""
  } catch {
    return ""
  }
}

/** The watcher, `off` where it could not be started. */
let watcher: Writable | "off" | undefined

/** The watcher's pid once its shell has said it (what a test that finds a group left names). */
let watcherPid: number | undefined

const started = (): Writable | "off" => {
  if (watcher !== undefined) return watcher
  try {
    // Started in the background by a shell that exits at once: awk is no child of this program
    // (a program counting its children, to find what it left, does not find it), reading the pipe
    // on descriptor 3 (Node destroys a child's stdin when it exits). `setsid` makes it the leader of
    // a session and group of its own: a group id listed by another program's watcher and given
    // again to the shell's group would otherwise name this awk once the shell is gone. Only the
    // shell writes to the stdout pipe (awk's pid); awk does not hold it.
    const child = spawn(
      "/bin/sh",
      ["-c", `if command -v setsid >/dev/null; then setsid awk "$1" <&3 3<&- >/dev/null & else awk "$1" <&3 3<&- >/dev/null & fi; echo $!`, "sh", PROGRAM],
      {
        detached: true,
        stdio: ["ignore", "pipe", "ignore", "pipe"],
        env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", LC_ALL: "C" }
      }
    )
    const pipe = child.stdio[3] as Writable | null
    child.once("error", () => (watcher = "off"))
    child.stdout?.once("data", (chunk: Buffer) => (watcherPid = Number.parseInt(chunk.toString(), 10)))
    // No reader left (awk could not start, or was killed on its own): the guard is off.
    pipe?.on("error", () => (watcher = "off"))
    // None of it may keep this program's event loop alive.
    child.unref()
    for (const stream of [pipe, child.stdout]) (stream as unknown as { unref?: () => void } | null)?.unref?.()
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

/** Group `pgid` started (its leader not yet reaped): it is killed if this process dies before `forget(pgid)`. */
export const watch = (pgid: number): void => write(`+${pgid} ${startOf(pgid)}\n`)

/** Group `pgid` is dead (its leader exited, SIGKILL sent to the rest). */
export const forget = (pgid: number): void => {
  if (watcher !== undefined && watcher !== "off") write(`-${pgid}\n`)
}

/** The watcher's state, for tests and diagnostics: not started, off, or on (with its pid once known). */
export const status = (): string =>
  watcher === undefined ? "unstarted" : watcher === "off" || !watcher.writable ? "off" : `on ${watcherPid ?? "?"}`

/** The awk program, for tests that run it on input of their own. */
export const program: string = PROGRAM

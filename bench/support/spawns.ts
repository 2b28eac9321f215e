/**
 * Raw spawns — the baselines the process benchmarks compare against: a bare
 * `child_process.spawn("bash", ["-c", "true"])` awaited to exit, and a bound on how many run at
 * once that is nothing but a counter and a FIFO (the process budget's bound without our code).
 * The children of the current process, read from /proc, tell a benchmark that nothing survived.
 * Not a benchmark itself: bench/run.ts runs only the files directly in bench/.
 */
import { spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"

/**
 * One raw `bash -c true`, resolved when it exits. Its stdin is /dev/null, as the process runner's:
 * Node's default stdin is a socket pair, and bash on a socket with SHLVL unset or 0 takes itself
 * for an ssh login and sources ~/.bashrc (2 s a spawn with a pyenv init on our machine).
 */
export const rawSpawn = (): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", "true"], { stdio: ["ignore", "pipe", "pipe"] })
    // Read to EOF and wait for the pipes to close, as the process runner does: a permit released at
    // `exit` let closed-but-unreaped pipes pile up while spawns block the loop (10,000 in a row
    // ended in EMFILE).
    child.stdout?.resume()
    child.stderr?.resume()
    child.once("error", reject)
    child.once("close", resolve)
  })

/** `once` with at most `max` running at a time, served in arrival order. */
export const bounded = (max: number, once: () => Promise<unknown>): () => Promise<unknown> => {
  let free = max
  const waiting: Array<() => void> = []
  const release = () => {
    const next = waiting.shift()
    if (next === undefined) free++
    else next()
  }
  return async () => {
    if (free > 0) free--
    else await new Promise<void>((resolve) => waiting.push(resolve))
    try {
      return await once()
    } finally {
      release()
    }
  }
}

/** The pids whose parent is this process (zombies included: they were not reaped). */
export const children = (): Array<number> =>
  readdirSync("/proc").filter((name) => /^\d+$/.test(name)).flatMap((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      // The fields after the command name, which is in parentheses and may hold spaces: state, ppid…
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      return ppid === process.pid ? [Number(pid)] : []
    } catch {
      // Gone between the listing and the read.
      return []
    }
  })

/** The median of some numbers (the upper one of an even count). */
export const median = (values: ReadonlyArray<number>): number => [...values].sort((a, b) => a - b)[values.length >> 1] ?? 0

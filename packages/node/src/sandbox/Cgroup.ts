/**
 * Cgroup — the process limit of a confined command (`Confine.Options.maxProcesses`): each command
 * runs in a control group of its own whose `pids.max` bounds how many tasks (processes and
 * threads) it may hold at once, so a fork bomb stops at the limit and the host stays responsive.
 * RLIMIT_NPROC (`ulimit -u`) would not do: it counts the user's processes everywhere, and binds
 * no one running as root (CI does).
 *
 * Where: cgroup v2 (`pids.max` in a delegated subtree: the parent of this process's own cgroup, or
 * the directory given, whose `cgroup.subtree_control` has, or can be given, `pids`) or v1 (the
 * `pids` hierarchy, under this process's own cgroup there, or the directory given). The shell that
 * starts bwrap writes its own pid into the command's `cgroup.procs` before anything forks, so
 * nothing the command starts is ever outside it; when the command ends (however: exit, timeout,
 * interruption) what is left in it is killed and the directory removed.
 */
import * as NodeFs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"

/** Where this process makes its commands' control groups. */
export interface Place {
  readonly version: 1 | 2
  /** The directory the commands' cgroups are made in. */
  readonly directory: string
}

const readOr = (file: string, otherwise: string): string => {
  try {
    return NodeFs.readFileSync(file, "utf8")
  } catch {
    return otherwise
  }
}

/** The mount points of the cgroup2 hierarchy and of the v1 `pids` one, with the path each mounts. */
const mounts = (): { readonly v2?: { point: string; root: string }; readonly pids?: { point: string; root: string } } => {
  let v2: { point: string; root: string } | undefined
  let pids: { point: string; root: string } | undefined
  for (const line of readOr("/proc/self/mountinfo", "").split("\n")) {
    // id parent major:minor root point options [optional…] - type source superOptions
    const fields = line.split(" ")
    const dash = fields.indexOf("-")
    if (dash < 0) continue
    const [type, , superOptions = ""] = fields.slice(dash + 1)
    const mount = { root: fields[3]!, point: fields[4]! }
    if (type === "cgroup2") v2 ??= mount
    if (type === "cgroup" && superOptions.split(",").includes("pids")) pids ??= mount
  }
  return { ...(v2 === undefined ? {} : { v2 }), ...(pids === undefined ? {} : { pids }) }
}

/** This process's cgroup in a hierarchy, as a directory under its mount point. */
const under = (mount: { point: string; root: string }, own: string): string =>
  path.join(mount.point, mount.root !== "/" && own.startsWith(mount.root) ? own.slice(mount.root.length) : own)

const hasPids = (file: string): boolean => readOr(file, "").trim().split(/\s+/).includes("pids")

/** `directory` as a v2 place: `pids` must be available there and given to its children. */
const v2At = (directory: string): Place | string => {
  if (!hasPids(path.join(directory, "cgroup.controllers"))) return `the pids controller is not available in ${directory}`
  if (!hasPids(path.join(directory, "cgroup.subtree_control"))) {
    try {
      NodeFs.writeFileSync(path.join(directory, "cgroup.subtree_control"), "+pids")
    } catch (error) {
      return `the pids controller cannot be enabled for ${directory}'s children (${error instanceof Error ? error.message : String(error)})`
    }
  }
  return { version: 2, directory }
}

/**
 * Where this process can make its commands' cgroups — `given`, or found from `/proc/self` (v2
 * first, then v1's `pids` hierarchy) — or why there is no such place.
 *
 * @since 0.1.0
 * @category constructors
 */
export const find = (given: string | undefined): Place | string => {
  if (given !== undefined) {
    if (!NodeFs.existsSync(given)) return `${given} does not exist`
    if (NodeFs.existsSync(path.join(given, "cgroup.controllers"))) return v2At(given)
    return NodeFs.existsSync(path.join(given, "pids.max")) || NodeFs.existsSync(path.join(given, "tasks"))
      ? { version: 1, directory: given }
      : `${given} is not a cgroup directory with the pids controller`
  }
  const { pids, v2 } = mounts()
  const own = readOr("/proc/self/cgroup", "").split("\n").map((line) => line.split(":"))
  const whys: Array<string> = []
  const unified = own.find(([id]) => id === "0")?.[2]
  if (v2 !== undefined && unified !== undefined) {
    // A process sits in a leaf: its commands' cgroups are made beside it, in its parent.
    const mine = under(v2, unified)
    const found = v2At(unified === "/" ? mine : path.dirname(mine))
    if (typeof found !== "string") return found
    whys.push(`cgroup v2: ${found}`)
  } else {
    whys.push("no cgroup v2 hierarchy is mounted")
  }
  const v1 = own.find(([id, controllers]) => id !== "0" && (controllers ?? "").split(",").includes("pids"))?.[2]
  if (pids !== undefined && v1 !== undefined) return { version: 1, directory: under(pids, v1) }
  whys.push("no cgroup v1 pids hierarchy is mounted")
  return whys.join("; ")
}

let made = 0

/**
 * Makes a command's cgroup with its limit; the path is the one its pid is written to.
 * `suffix` ends the name (`-launcher`: a sandbox's launcher's, `Launcher`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (place: Place, maxProcesses: number, suffix = ""): string => {
  const directory = path.join(place.directory, `condukt-${process.pid}-${++made}${suffix}`)
  NodeFs.mkdirSync(directory)
  try {
    NodeFs.writeFileSync(path.join(directory, "pids.max"), String(maxProcesses))
  } catch (error) {
    NodeFs.rmdirSync(directory)
    throw error
  }
  return directory
}

/** Whether process `pid` is alive (a signal 0 reaches it, or it exists but is not ours). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Removes the empty cgroups a program that died without cleaning up (killed mid-command) left in
 * `place`: those named after a process that is gone.
 *
 * @since 0.1.0
 * @category destructors
 */
export const sweep = (place: Place): void => {
  let names: ReadonlyArray<string> = []
  try {
    names = NodeFs.readdirSync(place.directory)
  } catch {
    return
  }
  for (const name of names) {
    const owner = /^condukt-(\d+)-\d+(?:-launcher)?$/.exec(name)?.[1]
    if (owner === undefined || alive(Number(owner))) continue
    try {
      NodeFs.rmdirSync(path.join(place.directory, name))
    } catch {
      // Still busy, or not ours to remove: left as it is.
    }
  }
}

/**
 * Whether a command's cgroup can be made in `place` (made and removed once): undefined when it
 * can, otherwise why not.
 *
 * @since 0.1.0
 * @category constructors
 */
export const probe = (place: Place): string | undefined => {
  try {
    NodeFs.rmdirSync(make(place, 1))
    return undefined
  } catch (error) {
    return `a cgroup cannot be made in ${place.directory} (${error instanceof Error ? error.message : String(error)})`
  }
}

const members = (directory: string): ReadonlyArray<number> =>
  readOr(path.join(directory, "cgroup.procs"), "").split("\n").flatMap((line) => (line === "" ? [] : [Number(line)]))

/** One attempt: what is left is killed, then the directory removed; false while a task remains (EBUSY). */
const removeOnce = (directory: string): boolean => {
  try {
    if (NodeFs.existsSync(path.join(directory, "cgroup.kill"))) NodeFs.writeFileSync(path.join(directory, "cgroup.kill"), "1")
    else {
      for (const pid of members(directory)) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {
          // Gone already.
        }
      }
    }
    NodeFs.rmdirSync(directory)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT"
  }
}

const RETRY_MS = 5
const RETRIES = 400

/**
 * Kills what is left in a command's cgroup and removes it. Killed tasks leave the group once the
 * kernel has reaped them, which no event announces on v1: the removal is tried again every few
 * milliseconds, for up to two seconds (on the host's timers: this waits on the kernel, not on
 * the program's clock); a group still busy then is left behind (empty soon after).
 *
 * @since 0.1.0
 * @category destructors
 */
export const remove = (directory: string): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    let tries = 0
    const attempt = () => {
      if (removeOnce(directory) || ++tries >= RETRIES) resume(Effect.void)
      else timer = setTimeout(attempt, RETRY_MS)
    }
    attempt()
    return Effect.sync(() => clearTimeout(timer))
  })

/**
 * Launcher — one long-lived confined process per sandbox that starts its commands, so a burst of
 * confined commands pays for one bubblewrap sandbox, not one each (docs/decisions/0070: a bwrap
 * costs a user and a mount namespace, which a thousand concurrent ones serialise on in the kernel).
 *
 * Started on the first confined command (inside one bwrap with the sandbox's namespaces, mounts,
 * seccomp filter and network, the allow list's forwarder included: `launcherScript.ts`), stopped
 * when the last scope that holds the sandbox closes (`retain`/`release`), started again by the
 * next command after it died. Per command:
 *
 * - the host makes the command's control group (`Cgroup`, its `pids.max`), asks the launcher to
 *   spawn the shell, finds the shell's host pid (it waits in the launcher's own control group,
 *   read by its pid in the sandbox: `NSpid`) and moves it into the command's group; only then may
 *   the shell run the script, so nothing it forks is ever outside that group. Nothing inside can
 *   write a control group (the root stays read-only): a command cannot leave its own;
 * - the launcher streams its output back (`maxOutputBytes`, cut there and by the host again) and
 *   its exit status once the shell exited, its group was killed and its pipes drained;
 * - the call's end kills what is left in its group from the host (`Cgroup.remove`: a `setsid`
 *   child too), timeout and interruption SIGTERM the group's members from the host, SIGKILL after
 *   the grace period: none of it needs the launcher to answer;
 * - a launcher that dies (killed from inside, say) fails its running commands with a typed
 *   `SpawnFailed` naming it, and everything it started dies with its pid namespace.
 *
 * What a command shares with the others of its sandbox: the pid namespace (it sees, and may
 * signal, them and the launcher), the private `/tmp`, the network namespace, and `/dev/shm` and
 * SysV IPC while another command runs (the launcher empties them before a command that starts
 * alone: `launcherScript`). The host's processes
 * stay out of sight, as before. It cannot attach to the launcher, which runs non-dumpable
 * (`setup.node` is an execute-only copy: `Undumpable`), and the host reads the launcher's channel
 * as hostile (`ChannelGuard`).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as NodeFs from "node:fs"
import * as path from "node:path"
import { Deferred, Effect, Exit, Option } from "effect"
import * as ProcessRunner from "@condukt/core/ProcessRunner"
import * as ProcessGroup from "../internal/processGroup.ts"
import * as Cgroup from "./Cgroup.ts"
import * as ChannelGuard from "./ChannelGuard.ts"
import { LAUNCHER } from "./launcherScript.ts"
import type * as NetworkProxy from "./NetworkProxy.ts"

/** What starting a launcher needs: the bwrap command line before the program, and where its groups go. */
export interface Setup {
  readonly bwrap: string
  readonly seccomp: string
  /** The bwrap arguments up to (not including) `--seccomp`: namespaces and mounts. */
  readonly mounts: ReadonlyArray<string>
  readonly directory: string
  /** The Node it runs: an execute-only copy (`Undumpable`, shown in `mounts`), so it runs non-dumpable. */
  readonly node: string
  readonly proxy: NetworkProxy.Proxy | undefined
  readonly place: Cgroup.Place
  /** A command's process limit: the launcher's own group gets it too, with room for its threads. */
  readonly maxProcesses: number
}

/**
 * Room in the launcher's group beyond a command's limit: bwrap, its init and Node's threads (a
 * dozen), and the shells waiting to be moved. The group is bounded even so: a command that took
 * the launcher over (same user, same namespace) could fork there.
 */
const LAUNCHER_TASKS = 64

interface Pending {
  readonly output: ProcessGroup.Collector
  readonly done: Deferred.Deferred<number, ProcessGroup.RunError>
  readonly cgroup: string
  /** Set once the shell is in its group and told to go. */
  went: boolean
}

interface Live {
  readonly child: ChildProcess
  readonly pgid: number
  /** The launcher's own control group, where each shell waits until it is moved. */
  readonly cgroup: string
  readonly ready: Deferred.Deferred<void, ProcessGroup.RunError>
  readonly pending: Map<number, Pending>
  /** The host pids of the launcher's own processes (bwrap, its init, Node): never a command's. */
  fixed: ReadonlySet<number>
  /** The host pid of the sandbox's init (pid 1 there), once ready. */
  init: number | undefined
  stderr: string
  gone: boolean
}

/** A sandbox's launcher: none running until the first command. Its state is this module's. */
export interface Launcher {
  readonly setup: Setup
}

/** What a launcher holds: the running process, the scopes holding it, the last command's id. */
interface State {
  readonly setup: Setup
  live: Live | undefined
  users: number
  ids: number
}

const states = new WeakMap<Launcher, State>()

/** @since 0.1.0 @category constructors */
export const make = (setup: Setup): Launcher => {
  const launcher: Launcher = { setup }
  states.set(launcher, { setup, live: undefined, users: 0, ids: 0 })
  return launcher
}

const stateOf = (launcher: Launcher): State => states.get(launcher)!

const failed = (description: string): ProcessGroup.RunError =>
  new ProcessRunner.ProcessRunnerError({ file: "bash", reason: new ProcessRunner.SpawnFailed({ description }) })

const members = (cgroup: string): ReadonlyArray<number> => {
  try {
    return NodeFs.readFileSync(path.join(cgroup, "cgroup.procs"), "utf8").split("\n").flatMap((line) => (line === "" ? [] : [Number(line)]))
  } catch {
    return []
  }
}

/** The sandbox pid of host process `pid` (the last of its `NSpid`), or undefined. */
const innerPid = (pid: number): number | undefined => {
  try {
    const line = /^NSpid:\s*(.*)$/m.exec(NodeFs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]
    return line === undefined ? undefined : Number(line.trim().split(/\s+/).at(-1))
  } catch {
    return undefined
  }
}

const signal = (pid: number, name: "SIGTERM" | "SIGKILL") => {
  try {
    process.kill(pid, name)
  } catch {
    // Gone already.
  }
}

/**
 * Ends the sandbox: its init killed, the kernel kills everything in its pid namespace, and bwrap
 * exits once init has reaped them all, so its exit means they are all gone (before it is ready, its
 * whole process group).
 */
const kill = (live: Live) => {
  if (live.init === undefined) ProcessGroup.signalGroup(live.pgid, "SIGKILL")
  else signal(live.init, "SIGKILL")
}

/** Every pending command fails, the launcher is forgotten: the next command starts another. */
const lost = (launcher: State, live: Live, why: string) => {
  if (live.gone) return
  live.gone = true
  if (launcher.live === live) launcher.live = undefined
  const error = failed(`the sandbox's launcher ${why}${live.stderr.trim() === "" ? "" : `: ${live.stderr.trim()}`}`)
  Deferred.doneUnsafe(live.ready, Effect.fail(error))
  for (const pending of live.pending.values()) Deferred.doneUnsafe(pending.done, Effect.fail(error))
  live.pending.clear()
  kill(live)
  Effect.runFork(Cgroup.remove(live.cgroup))
}

/** The shell `id` started as sandbox pid `inner`: moved into its group, then told to go. */
const place = (live: Live, id: number, inner: number) => {
  const pending = live.pending.get(id)
  if (pending === undefined) return
  const host = members(live.cgroup).find((pid) => !live.fixed.has(pid) && innerPid(pid) === inner)
  if (host === undefined) {
    live.child.send({ t: "kill", id, signal: "SIGKILL" }, ignore)
    return Deferred.doneUnsafe(pending.done, Effect.fail(failed("the command's shell could not be found to join its cgroup")))
  }
  NodeFs.writeFile(path.join(pending.cgroup, "cgroup.procs"), String(host), (error) => {
    if (live.pending.get(id) !== pending) return
    if (error !== null) {
      live.child.send({ t: "kill", id, signal: "SIGKILL" }, ignore)
      return Deferred.doneUnsafe(pending.done, Effect.fail(failed(`cannot join its cgroup (${error.message})`)))
    }
    pending.went = true
    live.child.send({ t: "go", id }, ignore)
  })
}

const ignore = (): void => {}

const onMessage = (launcher: State, live: Live) => (message: unknown, handle: unknown) => {
  if (typeof message !== "object" || message === null || !("t" in message)) return
  const m = message as { readonly t: unknown; readonly id?: unknown; readonly pid?: unknown; readonly data?: unknown; readonly code?: unknown; readonly message?: unknown }
  if (m.t === "ready") {
    live.fixed = new Set(members(live.cgroup))
    live.init = [...live.fixed].find((pid) => pid !== live.pgid && innerPid(pid) === 1)
    if (live.pending.size === 0) live.child.channel?.unref()
    return Deferred.doneUnsafe(live.ready, Effect.void)
  }
  if (m.t === "connection") return launcher.setup.proxy?.accept(handle)
  if (typeof m.id !== "number") return
  const pending = live.pending.get(m.id)
  if (pending === undefined) return
  if (m.t === "started" && typeof m.pid === "number") return place(live, m.id, m.pid)
  if (m.t === "out" && typeof m.data === "string") return pending.output.push(Buffer.from(m.data, "base64"))
  if (m.t === "done" && typeof m.code === "number") return Deferred.doneUnsafe(pending.done, Effect.succeed(m.code))
  if (m.t === "failed") {
    const description = typeof m.message === "string" ? m.message : "it could not start"
    Deferred.doneUnsafe(pending.done, Effect.fail(ProcessGroup.spawnFailed({ file: "bash", cwd: launcher.setup.directory }, typeof m.code === "string" ? m.code : undefined, description)))
  }
}

const STDERR_BYTES = 4096

/**
 * The arguments of the `bash` that starts a bwrap, up to the bwrap command line that follows them:
 * it closes every descriptor it inherited beyond its stdio, the program's word (3) and the IPC
 * channel (4, when `NODE_CHANNEL_FD` says it is one), so nothing the program holds reaches the
 * sandbox (a socket it inherited from its own parent, say, which the sandbox's filter would never let
 * it make); joins `procs` (a `cgroup.procs`), when given, before anything forks; opens the seccomp
 * filter on descriptor 3 for bwrap; then becomes bwrap. The paths are positional parameters, never
 * parsed; `$0` is what bash names its own errors after.
 *
 * @since 0.1.0
 * @category constructors
 */
export const startBwrap = (seccomp: string, procs: string | undefined): ReadonlyArray<string> => [
  "-c",
  'for fd in /proc/$$/fd/*; do fd=${fd##*/}; case $fd in [0-3]) ;; 4) [ "$NODE_CHANNEL_FD" = 4 ] || exec 4>&- ;; *) exec {fd}>&- ;; esac; done; ' +
  '{ [ -z "$2" ] || echo $$ > "$2"; } && exec 3<"$1" && shift 2 && exec "$@"',
  "confine",
  seccomp,
  procs ?? ""
]

/**
 * The longest message the launcher may send (characters, before its newline): its largest is a
 * pipe read (64 KiB) of output in base64. A launcher sending more, or a line that is not JSON, is
 * hostile (taken over from inside): its channel is cut and it is stopped (`ChannelGuard`).
 */
const MESSAGE_LENGTH = 1024 * 1024

/** Starts the launcher: its shell joins the launcher's group, opens the filter, becomes bwrap. */
const start = (launcher: State): Effect.Effect<Live, ProcessGroup.RunError> =>
  Effect.suspend(() => {
    const { setup } = launcher
    let cgroup: string
    try {
      cgroup = Cgroup.make(setup.place, setup.maxProcesses + LAUNCHER_TASKS, "-launcher")
    } catch (cause) {
      return Effect.fail(failed(`cannot make the launcher's cgroup (${cause instanceof Error ? cause.message : String(cause)})`))
    }
    const child = spawn("bash", [
      ...startBwrap(setup.seccomp, path.join(cgroup, "cgroup.procs")),
      setup.bwrap,
      ...setup.mounts,
      "--seccomp",
      "3",
      "--chdir",
      setup.directory,
      "--",
      setup.node,
      "-e",
      LAUNCHER,
      ...(setup.proxy === undefined ? [] : ["proxy"])
    ], { cwd: setup.directory, env: ProcessGroup.baseEnv(), detached: true, stdio: ["ignore", "ignore", "pipe", "ignore", "ipc"] })
    const live: Live = {
      child,
      pgid: child.pid ?? 0,
      cgroup,
      ready: Deferred.makeUnsafe(),
      pending: new Map(),
      fixed: new Set(),
      init: undefined,
      stderr: "",
      gone: false
    }
    child.on("error", (error) => lost(launcher, live, `did not start (${error.message})`))
    child.stderr?.on("data", (chunk: Buffer) => {
      if (live.stderr.length < STDERR_BYTES) live.stderr += chunk.toString("utf8").slice(0, STDERR_BYTES - live.stderr.length)
    })
    child.stderr?.on("error", ignore)
    child.on("message", onMessage(launcher, live))
    ChannelGuard.guard(child, MESSAGE_LENGTH, (why) => lost(launcher, live, why))
    child.once("exit", (code, signalName) => lost(launcher, live, `exited (${signalName ?? `exit code ${code}`})`))
    // An idle launcher keeps nothing alive: the channel is held only while it starts or a command runs.
    child.unref()
    ;(child.stderr as { unref?: () => void } | null)?.unref?.()
    launcher.live = live
    return Effect.as(Deferred.await(live.ready), live)
  })

/** The running launcher, started when there is none. */
const running = (launcher: State): Effect.Effect<Live, ProcessGroup.RunError> =>
  Effect.suspend(() => {
    const live = launcher.live
    return live === undefined ? start(launcher) : Effect.as(Deferred.await(live.ready), live)
  })

/** SIGTERM to every task of the command's group, from the host; SIGKILL comes with its removal. */
const terminate = (live: Live, id: number, pending: Pending): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (!pending.went) {
      if (!live.gone) live.child.send({ t: "kill", id, signal: "SIGKILL" }, ignore)
      return Effect.void
    }
    for (const pid of members(pending.cgroup)) signal(pid, "SIGTERM")
    return Effect.asVoid(Effect.timeoutOption(Effect.exit(Deferred.await(pending.done)), ProcessGroup.TERMINATE_GRACE_MS))
  })

/** Options of a command run through the launcher. */
export interface RunOptions {
  readonly directory: string
  readonly script: string
  readonly argv: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly timeoutMs?: number | undefined
  readonly maxOutputBytes?: number | undefined
  /** The command's own cgroup (made by the caller, removed by it afterwards). */
  readonly cgroup: string
}

const command = (launcher: State, live: Live, options: RunOptions): Effect.Effect<ProcessGroup.RunResult, ProcessGroup.RunError> => {
  const id = ++launcher.ids
  const max = options.maxOutputBytes ?? ProcessGroup.DEFAULT_MAX_OUTPUT_BYTES
  return Effect.acquireUseRelease(
    Effect.sync(() => {
      const pending: Pending = { output: ProcessGroup.makeCollector(max), done: Deferred.makeUnsafe(), cgroup: options.cgroup, went: false }
      // Lost between being found and this command: it fails as those it was running did.
      if (live.gone) {
        Deferred.doneUnsafe(pending.done, Effect.fail(failed("the sandbox's launcher exited before the command started")))
        return pending
      }
      live.pending.set(id, pending)
      if (live.pending.size === 1) live.child.channel?.ref()
      live.child.send({ t: "run", id, script: options.script, argv: options.argv, cwd: options.directory, env: options.env, max }, ignore)
      return pending
    }),
    (pending) => {
      const done = Deferred.await(pending.done)
      const result = (code: number): ProcessGroup.RunResult => ({ output: pending.output.text(), exitCode: code, truncated: pending.output.truncated(), pid: 0, stderr: "" })
      const timeoutMs = options.timeoutMs
      if (timeoutMs === undefined || !Number.isFinite(timeoutMs) || timeoutMs <= 0) return Effect.map(done, result)
      return Effect.flatMap(Effect.timeoutOption(done, timeoutMs), (code) =>
        Option.isSome(code)
          ? Effect.succeed(result(code.value))
          : Effect.andThen(
            terminate(live, id, pending),
            Effect.suspend(() =>
              Effect.fail(
                new ProcessRunner.ProcessRunnerError({
                  file: "bash",
                  reason: new ProcessRunner.TimedOut({ timeoutMs, output: pending.output.text(), truncated: pending.output.truncated() })
                })
              )
            )
          ))
    },
    (pending, exit) =>
      Effect.andThen(
        Exit.isFailure(exit) && !Deferred.isDoneUnsafe(pending.done) ? terminate(live, id, pending) : Effect.void,
        Effect.sync(() => {
          live.pending.delete(id)
          if (live.pending.size === 0) live.child.channel?.unref()
        })
      )
  )
}

/**
 * Runs a command through the sandbox's launcher (started when none runs), in the cgroup the caller made.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = (launcher: Launcher, options: RunOptions): Effect.Effect<ProcessGroup.RunResult, ProcessGroup.RunError> => {
  const state = stateOf(launcher)
  return Effect.flatMap(running(state), (live) => command(state, live, options))
}

/**
 * One more scope holds the sandbox: its launcher lives until the last one releases it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const retain = (launcher: Launcher): Effect.Effect<void> => Effect.sync(() => void stateOf(launcher).users++)

/**
 * A scope that held the sandbox closed: the last one stops its launcher, and with it every
 * command still running (its pid namespace ends), and waits for it to be gone.
 *
 * @since 0.1.0
 * @category destructors
 */
export const release = (launcher: Launcher): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (--stateOf(launcher).users > 0) return Effect.void
    return stop(launcher)
  })

/**
 * Stops the launcher, if one runs, and waits until its processes and its cgroup are gone.
 *
 * @since 0.1.0
 * @category destructors
 */
export const stop = (launcher: Launcher): Effect.Effect<void> =>
  Effect.suspend(() => {
    const live = stateOf(launcher).live
    if (live === undefined) return Effect.void
    const exited = live.child.exitCode !== null || live.child.signalCode !== null
      ? Effect.void
      : Effect.callback<void>((resume) => {
        // Held until it is gone, so that the wait keeps the program alive.
        live.child.ref()
        live.child.once("exit", () => resume(Effect.void))
      })
    kill(live)
    return Effect.andThen(exited, Cgroup.remove(live.cgroup))
  })

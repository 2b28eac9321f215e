/**
 * ConfinedCommand — a command run under a confinement's `Plan` (worked out by `Confine.plan`): its
 * bwrap command line, and its run through the sandbox's launcher (`Launcher`) or in a bwrap of its
 * own, in a cgroup of its own when the plan has a process limit. It decides no mount and no limit:
 * those are the plan's.
 */
import * as path from "node:path"
import * as NodeFs from "node:fs"
import { Effect } from "effect"
import * as ProcessGroup from "../internal/processGroup.ts"
import * as Cgroup from "./Cgroup.ts"
import * as Launcher from "./Launcher.ts"
import type * as NetworkProxy from "./NetworkProxy.ts"

/**
 * A confinement ready to wrap commands: the executable and the mounts, worked out once.
 *
 * @since 0.1.0
 * @category models
 */
export interface Plan {
  readonly bwrap: string
  /** The seccomp filter's file, handed to bwrap on descriptor 3. */
  readonly seccomp: string
  /** The arguments before the working directory and the command: the mounts up to the writable roots… */
  readonly prefix: ReadonlyArray<string>
  /** …then the hidden paths, over everything. */
  readonly hidden: ReadonlyArray<string>
  /** The writable roots (real paths). */
  readonly writable: ReadonlyArray<string>
  /** What the shell runs before the command (its limits). */
  readonly preamble: string
  /** The allow list's proxy, when the network is one. */
  readonly proxy: NetworkProxy.Proxy | undefined
  /**
   * The Node the launcher and the forwarder run: an execute-only copy of the program's
   * (`Undumpable`), so that they run non-dumpable and no command attaches to them; bound at its
   * path in the prefix. Undefined when neither runs.
   */
  readonly node: string | undefined
  /** Where each command's cgroup is made, and its `pids.max`; undefined: no process limit. */
  readonly processes: { readonly place: Cgroup.Place; readonly max: number } | undefined
  /**
   * The sandbox's launcher, which starts its commands inside one bwrap (`Launcher`): there when
   * each command can have a cgroup of its own, which binds it and takes what it leaves behind.
   */
  readonly launcher: Launcher.Launcher | undefined
}

/**
 * The Node running this program, by its real path: the network forwarder runs it, and the plan
 * copies it for the launcher (`Undumpable`).
 *
 * @internal
 */
export const NODE = NodeFs.realpathSync(process.execPath)

/**
 * The command line that runs `script` with bash in `directory`, confined; `cgroup`, when given, is
 * the cgroup the starting shell moves itself into before it becomes bwrap (before anything forks).
 *
 * @since 0.1.0
 * @category constructors
 */
export const command = (
  confined: Plan,
  directory: string,
  script: string,
  cgroup?: string | undefined,
  argv: ReadonlyArray<string> = []
): { readonly file: string; readonly args: ReadonlyArray<string> } => ({
  file: "bash",
  args: [
    ...Launcher.startBwrap(confined.seccomp, cgroup === undefined ? undefined : path.join(cgroup, "cgroup.procs")),
    confined.bwrap,
    ...confined.prefix,
    ...visible(confined, directory),
    ...confined.hidden,
    "--seccomp",
    "3",
    "--chdir",
    directory,
    "--",
    "bash",
    "-c",
    `${confined.proxy === undefined ? "" : forwarding(confined.node ?? NODE)}${confined.preamble}${script}`,
    ...argv
  ]
})

/**
 * The forwarder: listens on the namespace's loopback, prints its port, and hands each connection
 * (unread) to the host over the IPC channel.
 */
const FORWARDER = 'const s = require("net").createServer({ pauseOnConnect: true }, (c) => process.send("connection", c));' +
  's.listen(0, "127.0.0.1", () => process.stdout.write(s.address().port + "\\n"))'

/**
 * Before the command: the forwarder started (the execute-only copy of the Node running this
 * program: `Plan.node`), its port read, the channel closed for the command, the proxy variables set.
 */
const forwarding = (node: string) =>
  `exec 5< <(exec ${JSON.stringify(node)} -e '${FORWARDER}') && read -r port <&5 || ` +
  `{ echo "Cannot start the sandbox's network proxy" >&2; exit 125; }; exec 5<&- 4>&-; unset NODE_CHANNEL_FD NODE_CHANNEL_SERIALIZATION_MODE; ` +
  `export HTTP_PROXY=http://127.0.0.1:$port HTTPS_PROXY=http://127.0.0.1:$port ALL_PROXY=http://127.0.0.1:$port; ` +
  `export http_proxy=$HTTP_PROXY https_proxy=$HTTPS_PROXY all_proxy=$ALL_PROXY NODE_USE_ENV_PROXY=1; unset port; `

const within = (inner: string, outer: string): boolean => inner === outer || inner.startsWith(outer.endsWith("/") ? outer : `${outer}/`)

/**
 * A directory a command runs in that the private `/tmp` would hide (a program's own, for
 * `runConfined`) is shown read-only; the hidden paths are mounted after it, so it shows none of them.
 */
const visible = (confined: Plan, directory: string): ReadonlyArray<string> =>
  within(directory, "/tmp") && !confined.writable.some((root) => within(directory, root)) ? ["--ro-bind", directory, directory] : []

/**
 * How `run` and `runOnce` run `script` (its positional parameters `argv`: `$0`, `$1`…) confined by
 * the plan in `directory`, with `ProcessGroup.run`'s other options as given.
 */
type Run = (
  confined: Plan,
  directory: string,
  script: string,
  options: Omit<ProcessGroup.RunOptions, "file" | "args">,
  argv?: ReadonlyArray<string>
) => Effect.Effect<ProcessGroup.RunResult, ProcessGroup.RunError>

/**
 * Runs `script` confined, in a cgroup of its own when the plan has a process limit, killed and
 * removed when the run ends, however it ends: through the sandbox's launcher when it has one and
 * `directory` is in its view, otherwise in a bwrap of its own (`runOnce`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const run: Run = (confined, directory, script, options, argv = []) => {
  const { launcher, processes } = confined
  if (launcher === undefined || processes === undefined || visible(confined, directory).length > 0) {
    return runOnce(confined, directory, script, options, argv)
  }
  return withCgroup(directory, processes, (cgroup) =>
    Launcher.run(launcher, {
      directory,
      script: `${confined.preamble}${script}`,
      argv,
      env: options.env,
      timeoutMs: options.timeoutMs,
      maxOutputBytes: options.maxOutputBytes,
      cgroup
    }))
}

/** A cgroup of the plan's limit for `use`, killed and removed afterwards. */
const withCgroup = <A, E>(
  directory: string,
  processes: NonNullable<Plan["processes"]>,
  use: (cgroup: string) => Effect.Effect<A, E>
): Effect.Effect<A, E | ProcessGroup.RunError> =>
  Effect.acquireUseRelease(
    Effect.try({
      try: () => Cgroup.make(processes.place, processes.max),
      catch: (cause) => ProcessGroup.spawnFailed({ file: "bash", cwd: directory }, undefined, `cannot make its cgroup (${cause instanceof Error ? cause.message : String(cause)})`)
    }),
    use,
    Cgroup.remove
  )

/**
 * Runs `script` as `run` does, in a bwrap of its own (the build's probe; a directory the
 * launcher's mounts do not show).
 *
 * @since 0.1.0
 * @category constructors
 */
export const runOnce: Run = (confined, directory, script, options, argv = []) => {
  const processes = confined.processes
  const proxy = confined.proxy
  const withProxy = proxy === undefined ? options : {
    ...options,
    onMessage: (_message: unknown, handle: unknown) => {
      proxy.accept(handle)
    }
  }
  const start = (cgroup?: string) => ProcessGroup.run({ ...command(confined, directory, script, cgroup, argv), ...withProxy })
  return processes === undefined ? start() : withCgroup(directory, processes, start)
}
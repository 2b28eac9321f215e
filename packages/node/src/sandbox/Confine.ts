/**
 * Confine — the OS fence around the commands a LocalSandbox runs (`LocalSandbox.layer({ confine })`).
 *
 * `allowedPaths` fences the paths a tool names; a command the model writes can still reach
 * anything the user can. Confined, each command runs inside bubblewrap (`bwrap`, Linux user
 * namespaces), which the kernel enforces:
 *
 * - the filesystem is the host's, read-only, but for the sandbox's cwd and `allowedPaths` (and
 *   `writable`), a private `/tmp`, and a fresh `/dev` (read-only but for its own `/dev/shm`); the
 *   `denyRead` paths (credentials under the home directory by default) and the `.env` files of the
 *   directories above the cwd are hidden (a directory shows empty, a file cannot be read) — those
 *   that exist when the sandbox is built;
 * - its own pid namespace with a fresh `/proc`: the host's processes — the program itself, other
 *   sessions' commands — are invisible, so neither signalled nor read (`/proc/<pid>/environ`);
 * - no network (`network: "none"`, the default: a loopback of its own, nothing listening), the
 *   hosts of an allow list through the program's proxy (`{ allow }`, `NetworkProxy`), or the
 *   host's (`"host"`);
 * - its own IPC, UTS and cgroup namespaces; the command dies with the sandbox (`--die-with-parent`),
 *   and everything it started dies with its namespace, `setsid` or not;
 * - no Unix sockets (a seccomp filter, `Seccomp`, refuses them however asked for: `socket`,
 *   io_uring, a datagram `socketpair`): the host's (`docker.sock`, D-Bus, the journal) stay out of
 *   reach even though the root they sit on is readable; nor the descriptors the program inherited
 *   (closed before bwrap starts);
 * - no attaching to another process (the filter refuses `ptrace`, `process_vm_*`, `kcmp`,
 *   `pidfd_getfd`), no keyring, and no capability, even for a program run as root (`--cap-drop ALL`).
 *
 * Where each command can have a cgroup of its own, the sandbox's commands run through one bwrap
 * per sandbox whose launcher starts them (`Launcher`, docs/decisions/0070); otherwise each command
 * gets a bwrap of its own. Timeouts, output limits, the process budget and the process-group kill
 * work as unconfined. Fail closed: asking for confinement where bwrap cannot run
 * (not installed, user namespaces off) fails the sandbox's build with a typed error naming what is
 * missing (bwrap not installed, named with the package to install), never an unconfined run.
 * macOS (Seatbelt) is typed (`SeatbeltOptions`) but not implemented: the build says so.
 *
 * Bounded: the private `/tmp` (`tmpBytes`, 512 MiB) and `/dev/shm` (a quarter of it, emptied
 * before a command that starts while no other runs: `launcherScript`), the tasks a command holds at once
 * (`maxProcesses`, through a cgroup of its own: `Cgroup`) and, when asked, the size of any file
 * written (`maxFileBytes`). Not stopped (docs/sandbox.md): reading what the user can read outside
 * `denyRead`, CPU and memory use. `Tools.Command` runs confined the same way unless it opts out.
 */
import * as os from "node:os"
import * as path from "node:path"
import * as NodeFs from "node:fs"
import { Result } from "effect"
import * as Cgroup from "./Cgroup.ts"
import { NODE, type Plan } from "./ConfinedCommand.ts"
import * as Launcher from "./Launcher.ts"
import * as NetworkProxy from "./NetworkProxy.ts"
import * as Seccomp from "./Seccomp.ts"
import * as Undumpable from "./Undumpable.ts"

// A plan's commands run through ConfinedCommand; they are named here too, as the public `Confine`
// has always named them.
export { command, type Plan, run, runOnce } from "./ConfinedCommand.ts"

/** @since 0.1.0 @category models */
export interface Options {
  /** Writable directories besides the sandbox's cwd and `allowedPaths` (relative ones join the cwd). */
  readonly writable?: ReadonlyArray<string> | undefined
  /** Paths commands must not read (`~/` is the home directory); default `DEFAULT_DENY_READ`. */
  readonly denyRead?: ReadonlyArray<string> | undefined
  /**
   * `"none"` (default): no network at all; `"host"`: the host's network; `{ allow }`: only the
   * hosts listed (`host`, `host:port`, `*.domain`), through an HTTP proxy the command finds in
   * `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` (`NetworkProxy`); anything else is refused.
   */
  readonly network?: "none" | "host" | { readonly allow: ReadonlyArray<string> } | undefined
  /** The bubblewrap executable; default `bwrap`, found on the program's PATH when the sandbox is built. */
  readonly bwrap?: string | undefined
  /**
   * The size of the private `/tmp` (in memory); default `DEFAULT_TMP_BYTES`. `/dev/shm` gets a
   * quarter of it besides.
   */
  readonly tmpBytes?: number | undefined
  /** The largest file a command may write (`ulimit -f`, rounded up to KiB); default: no limit. */
  readonly maxFileBytes?: number | undefined
  /**
   * The most tasks (processes and threads) a command may hold at once, through a control group of
   * its own (`Cgroup`): asked for where no writable cgroup with the pids controller exists, the
   * build fails. Default: `DEFAULT_MAX_PROCESSES` where such a cgroup exists, no limit elsewhere;
   * `false`: no limit (no cgroup, and so no launcher: each command gets a bwrap of its own, which
   * costs more under a burst: docs/decisions/0070).
   */
  readonly maxProcesses?: number | false | undefined
  /**
   * The cgroup directory the commands' cgroups are made in (v2: a delegated one with the pids
   * controller; v1: a directory of the pids hierarchy); default: found from `/proc/self/cgroup`.
   */
  readonly cgroup?: string | undefined
  /** What the macOS backend (Seatbelt) would take: typed, not implemented — on macOS the build fails. */
  readonly macos?: SeatbeltOptions | undefined
}

/**
 * The options a Seatbelt backend (macOS, `sandbox-exec`) would take besides `Options`, whose
 * writes, reads and network would map onto its profile (`maxProcesses` and `tmpBytes` would not:
 * macOS has no per-command means for them). Not implemented: asking for confinement on macOS
 * fails the sandbox's build.
 *
 * @since 0.1.0
 * @category models
 */
export interface SeatbeltOptions {
  /** The `sandbox-exec` executable; default `/usr/bin/sandbox-exec`. */
  readonly sandboxExec?: string | undefined
  /** SBPL rules appended to the generated profile, e.g. `(allow mach-lookup (global-name "…"))`. */
  readonly extraRules?: ReadonlyArray<string> | undefined
}

/**
 * The process limit a confined command gets where a cgroup can hold it: 1,024 tasks (threads
 * count), far more than a build or a test run holds at once, few enough that a fork bomb stops
 * long before the host's pid table (32,768 by default) fills.
 *
 * @since 0.1.0
 * @category models
 */
export const DEFAULT_MAX_PROCESSES = 1024

/**
 * The private `/tmp`'s size: 512 MiB of memory at most, so a command filling it cannot take the
 * host's memory with it.
 *
 * @since 0.1.0
 * @category models
 */
export const DEFAULT_TMP_BYTES = 512 * 1024 * 1024

/**
 * What commands do not read unless told otherwise: the credentials a home directory usually holds.
 *
 * @since 0.1.0
 * @category models
 */
export const DEFAULT_DENY_READ: ReadonlyArray<string> = [
  "~/.ssh",
  "~/.aws",
  "~/.azure",
  "~/.config/gcloud",
  "~/.config/gh",
  "~/.docker",
  "~/.gnupg",
  "~/.kube",
  "~/.netrc",
  "~/.npmrc",
  "~/.pgpass"
]

/**
 * The size of a sandbox's `/dev/shm` for a private `/tmp` of `tmpBytes`: a quarter of it (128 MiB
 * by default: twice Docker's 64 MiB, which Chromium outgrows). Shared memory is memory too, and
 * bwrap's own `/dev` would hold half the host's.
 */
const shmBytes = (tmpBytes: number): number => Math.ceil(tmpBytes / 4)

/** How to install bubblewrap, said when it is missing. */
export const INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"

/**
 * The absolute path of the executable `given` names — a path (relative ones join `cwd`), or a name
 * found on the program's PATH as a shell would find it — or why there is none, in a sentence
 * naming what to install. Found once, when the sandbox is built: a call's own `PATH` cannot change which bwrap runs.
 */
const bubblewrap = (given: string, cwd: string): Result.Result<string, string> => {
  const searched = process.env["PATH"] ?? ""
  const candidates = given.includes("/")
    ? [path.resolve(cwd, given)]
    : searched.split(":").filter((directory) => path.isAbsolute(directory)).map((directory) => path.join(directory, given))
  for (const candidate of candidates) {
    try {
      NodeFs.accessSync(candidate, NodeFs.constants.X_OK)
      if (NodeFs.statSync(candidate).isFile()) return Result.succeed(candidate)
    } catch {
      // Not there, or not executable: the next one.
    }
  }
  const where = given.includes("/") ? "no executable file there" : `no ${given} on the PATH (${searched})`
  return Result.fail(`${given} is not installed: ${where}; ${INSTALL_HINT}`)
}

const expand = (given: string, home: string, cwd: string): string =>
  given === "~" ? home : given.startsWith("~/") ? path.join(home, given.slice(2)) : path.resolve(cwd, given)

/**
 * The `.env` files (`.env`, `.env.*`) of the directories above `cwd`, up to `/`: a monorepo's or a
 * home's secrets, which a command in the project has no business reading (the project's own stay).
 */
const envFilesAbove = (cwd: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (let directory = path.dirname(cwd); ; directory = path.dirname(directory)) {
    try {
      for (const name of NodeFs.readdirSync(directory)) if (name === ".env" || name.startsWith(".env.")) found.push(path.join(directory, name))
    } catch {
      // An unreadable directory holds nothing we could hide.
    }
    if (directory === path.dirname(directory)) return found
  }
}

/** `given` resolved to its real path when it exists (a mount point must be the real one), undefined otherwise. */
const real = (given: string): string | undefined => {
  try {
    return NodeFs.realpathSync(given)
  } catch {
    return undefined
  }
}


/**
 * That Node shown read-only where the private `/tmp` would hide it (a project checked out under
 * `/tmp`, its Node in `node_modules`): the forwarder needs it, and a command may run it.
 */
const ownNode = (): ReadonlyArray<string> => NODE === "/tmp" || NODE.startsWith("/tmp/") ? ["--ro-bind", NODE, NODE] : []

/**
 * The bwrap arguments for a sandbox at `cwd` whose writable roots are `roots` (its cwd and allowed
 * paths, real paths). Mount order matters: the read-only root first, then the fresh `/dev`,
 * `/proc` and `/tmp`, then the writable roots (one under `/tmp` is mounted over the private one),
 * then the hidden paths over everything.
 *
 * @since 0.1.0
 * @category constructors
 */
export const plan = (options: Options, cwd: string, roots: ReadonlyArray<string>): Result.Result<Plan, string> => {
  const unknown = Seccomp.unsupported(process.arch)
  if (unknown !== undefined) return Result.fail(unknown)
  const installed = bubblewrap(options.bwrap ?? "bwrap", cwd)
  if (Result.isFailure(installed)) return Result.fail(installed.failure)
  const found = options.maxProcesses === false ? "no limit was asked for" : Cgroup.find(options.cgroup)
  if (typeof found !== "string") Cgroup.sweep(found)
  const place = typeof found === "string" ? found : Cgroup.probe(found) ?? found
  if (typeof place === "string" && typeof options.maxProcesses === "number") {
    return Result.fail(`maxProcesses needs a writable cgroup with the pids controller, and ${place}`)
  }
  const home = os.homedir()
  const writable = [...roots, ...(options.writable ?? []).map((given) => expand(given, home, cwd))]
    .flatMap((given) => {
      const found = real(given)
      return found === undefined ? [] : [found]
    })
  const denied = [...(options.denyRead ?? DEFAULT_DENY_READ).map((given) => expand(given, home, cwd)), ...envFilesAbove(cwd)]
  // A path gone between its realpath and its stat is nothing to hide.
  const hidden = [...new Set(denied.flatMap((given) => real(given) ?? []))].flatMap((found): ReadonlyArray<string> => {
    const info = NodeFs.statSync(found, { throwIfNoEntry: false })
    return info === undefined ? [] : info.isDirectory() ? ["--tmpfs", found] : ["--ro-bind", "/dev/null", found]
  })
  const tmpBytes = options.tmpBytes ?? DEFAULT_TMP_BYTES
  const prefix: Array<string> = [
    "--die-with-parent",
    "--unshare-all",
    // No capability inside, even for a program run as root (bwrap keeps them all for root): with
    // CAP_SYS_ADMIN in the sandbox's namespaces a command could unmount what hides a denied path.
    "--cap-drop",
    "ALL",
    ...(options.network === "host" ? ["--share-net"] : []),
    "--ro-bind",
    "/",
    "/",
    // bwrap's /dev is a tmpfs of half the host's memory, writable, /dev/shm a directory in it:
    // read-only here, but for a /dev/shm of its own size.
    "--dev",
    "/dev",
    "--remount-ro",
    "/dev",
    "--size",
    String(shmBytes(tmpBytes)),
    "--tmpfs",
    "/dev/shm",
    "--proc",
    "/proc",
    "--size",
    String(tmpBytes),
    "--tmpfs",
    "/tmp",
    ...ownNode(),
    ...[...new Set(writable)].flatMap((root) => ["--bind", root, root])
  ]
  const bwrap = installed.success
  const seccomp = Seccomp.file()
  const proxy = typeof options.network === "object" ? NetworkProxy.make(options.network.allow) : undefined
  const processes = typeof place === "string" ? undefined : { place, max: typeof options.maxProcesses === "number" ? options.maxProcesses : DEFAULT_MAX_PROCESSES }
  const node = proxy === undefined && processes === undefined ? undefined : Undumpable.node(NODE)
  // Under the host's /tmp, which the private one hides: shown read-only at its path.
  if (node !== undefined) prefix.push("--ro-bind", node, node)
  return Result.succeed({
    bwrap,
    seccomp,
    prefix,
    hidden,
    writable: [...new Set(writable)],
    proxy,
    node,
    preamble: options.maxFileBytes === undefined ? "" : `ulimit -f ${Math.ceil(options.maxFileBytes / 1024)}; `,
    processes,
    launcher: processes === undefined
      ? undefined
      : Launcher.make({ bwrap, seccomp, mounts: [...prefix, ...hidden], directory: cwd, node: node ?? NODE, proxy, place: processes.place, maxProcesses: processes.max })
  })
}

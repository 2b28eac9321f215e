/**
 * ConfinedPaths — what the file methods of a confined LocalSandbox may read and write: exactly
 * what its commands see, read off the confinement's own mounts (the bwrap arguments of
 * `Confine.Plan`), so that Read and Bash follow one set of rules (docs/decisions/0076).
 *
 * A real path (links followed) is readable when the mount that covers it last shows the host's
 * own files there (the read-only root, a writable root, the program's Node shown under `/tmp`),
 * and writable when that mount is a writable one. So it refuses what a confined command could not
 * reach: the `denyRead` paths and the `.env` files above the cwd (hidden over everything), the
 * host's `/tmp` (a command gets a private one: what Write put there would not be what Bash finds),
 * `/proc` and `/dev` (a command gets fresh ones: the program's own `/proc/self/environ` is not its
 * to read), anything else a mount replaces; and, for writes, everything outside the writable roots.
 * A walk (`glob`, `grep`, `list`) skips what it refuses and enters a directory it may not read only
 * on the way to one it may (a cwd under `/tmp`): `fence`.
 *
 * It refuses to guess at a bwrap option it does not know: `make` fails, and so does the sandbox's
 * build, rather than read a mount wrong.
 */
import * as NodeFs from "node:fs"
import { Result } from "effect"
import * as Sandbox from "@condukt/core/Sandbox"
import type * as RegularFile from "../internal/regularFile.ts"
import type * as WalkFiles from "../internal/walkFiles.ts"
import type * as Confine from "./Confine.ts"

/** Why a path is refused, from the mount that decides it. */
type Rule =
  /** Hidden by `denyRead`. */
  | "denyRead"
  /** Hidden as a `.env` file of a directory above the cwd. */
  | "envAbove"
  /** The host's `/tmp`, replaced by a private one. */
  | "tmp"
  /** Replaced by something else (a fresh `/proc` or `/dev`, a file of bwrap's own). */
  | "replaced"
  /** Shown read-only (for a write). */
  | "readOnly"

interface Mount {
  /** The mount point (destination), absolute. */
  readonly path: string
  /** Shows the host's own files at `path`: read-only or writable; or something else, refused for `rule`. */
  readonly shows: "read" | "write" | Exclude<Rule, "readOnly">
}

/** A mount, or a `--remount-ro` of what is mounted under a path so far. */
type Step = Mount | { readonly readOnly: string }

/** What a confined sandbox's file methods may touch, worked out once per sandbox. */
export interface Paths {
  /** The mounts in bwrap's order: a later one covers an earlier one at and below its path. */
  readonly steps: ReadonlyArray<Step>
  /** The writable roots (real paths), as the refusals name them. */
  readonly writable: ReadonlyArray<string>
}

/** What a file method does with a path: read a file, list a directory (or pass through it to one it may read), write. */
export type Access = "read" | "list" | "write"

const within = (inner: string, outer: string): boolean =>
  inner === outer || inner.startsWith(outer.endsWith("/") ? outer : `${outer}/`)

/** bwrap's options that mount nothing, by how many arguments follow them (bwrap 0.11's `--help`). */
const OTHER_OPTIONS: Readonly<Record<string, number>> = {
  "--unshare-all": 0,
  "--share-net": 0,
  "--unshare-user": 0,
  "--unshare-user-try": 0,
  "--unshare-ipc": 0,
  "--unshare-pid": 0,
  "--unshare-net": 0,
  "--unshare-uts": 0,
  "--unshare-cgroup": 0,
  "--unshare-cgroup-try": 0,
  "--disable-userns": 0,
  "--assert-userns-disabled": 0,
  "--clearenv": 0,
  "--new-session": 0,
  "--die-with-parent": 0,
  "--as-pid-1": 0,
  "--level-prefix": 0,
  "--userns": 1,
  "--userns2": 1,
  "--pidns": 1,
  "--uid": 1,
  "--gid": 1,
  "--hostname": 1,
  "--chdir": 1,
  "--unsetenv": 1,
  "--lock-file": 1,
  "--sync-fd": 1,
  "--exec-label": 1,
  "--file-label": 1,
  "--seccomp": 1,
  "--add-seccomp-fd": 1,
  "--block-fd": 1,
  "--userns-block-fd": 1,
  "--info-fd": 1,
  "--json-status-fd": 1,
  "--cap-add": 1,
  "--cap-drop": 1,
  "--perms": 1,
  "--size": 1,
  "--argv0": 1,
  "--overlay-src": 1,
  "--setenv": 2,
  "--chmod": 2
}

/** The host path `source` at `destination`: its own files there only when they are the same path. */
const BINDS: Readonly<Record<string, "read" | "write">> = {
  "--bind": "write",
  "--bind-try": "write",
  "--dev-bind": "write",
  "--dev-bind-try": "write",
  "--ro-bind": "read",
  "--ro-bind-try": "read"
}

/** Something other than the host's files at the last argument (a new filesystem, a copy, a link): by argument count. */
const REPLACES: Readonly<Record<string, number>> = {
  "--proc": 1,
  "--dev": 1,
  "--tmpfs": 1,
  "--mqueue": 1,
  // On an existing directory it changes nothing; counted as replacing, which only refuses more.
  "--dir": 1,
  "--tmp-overlay": 1,
  "--ro-overlay": 1,
  "--bind-fd": 2,
  "--ro-bind-fd": 2,
  "--file": 2,
  "--bind-data": 2,
  "--ro-bind-data": 2,
  "--symlink": 2,
  "--overlay": 3
}

/** The `.env` files the plan hides above `cwd` (`Confine`'s rule), told apart from the `denyRead` paths. */
const isEnvAbove = (path: string, cwd: string): boolean => {
  const slash = path.lastIndexOf("/")
  const name = path.slice(slash + 1)
  const directory = path.slice(0, slash) || "/"
  return (name === ".env" || name.startsWith(".env.")) && directory !== cwd && within(cwd, directory)
}

/** The steps `args` take; `hidden`: they are the plan's hidden paths. Fails on an option it does not know. */
const stepsOf = (args: ReadonlyArray<string>, hidden: boolean, cwd: string): Result.Result<Array<Step>, string> => {
  const steps: Array<Step> = []
  const refused = (path: string): Mount["shows"] =>
    hidden ? (isEnvAbove(path, cwd) ? "envAbove" : "denyRead") : within(path, "/tmp") ? "tmp" : "replaced"
  for (let at = 0; at < args.length;) {
    const option = args[at]!
    const bind = BINDS[option]
    const replaces = REPLACES[option]
    const other = OTHER_OPTIONS[option]
    const count = bind !== undefined ? 2 : replaces ?? (option === "--remount-ro" ? 1 : other)
    // `--args FD` among the unknown: arguments read from a descriptor cannot be read here.
    if (count === undefined) return Result.fail(`unknown bwrap option ${option}`)
    if (at + count >= args.length) return Result.fail(`bwrap option ${option} lacks its arguments`)
    const destination = args[at + count]!
    if (bind !== undefined) {
      steps.push({ path: destination, shows: args[at + 1] === destination && !hidden ? bind : refused(destination) })
    } else if (replaces !== undefined) {
      steps.push({ path: destination, shows: refused(destination) })
    } else if (option === "--remount-ro") {
      steps.push({ readOnly: destination })
    }
    at += 1 + count
  }
  return Result.succeed(steps)
}

/**
 * The rules of the sandbox confined by `plan` at `cwd` (a real path), read off its mounts; a failure
 * names the bwrap argument that could not be read.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (plan: Pick<Confine.Plan, "prefix" | "hidden" | "writable">, cwd: string): Result.Result<Paths, string> =>
  Result.flatMap(stepsOf(plan.prefix, false, cwd), (mounts) =>
    Result.map(stepsOf(plan.hidden, true, cwd), (hidden): Paths => ({ steps: [...mounts, ...hidden], writable: plan.writable })))

const isMount = (step: Step): step is Mount => "shows" in step

/** The mount that decides what is seen at `path` (the last one covering it) and its index; none: -1. */
const deciding = (paths: Paths, path: string): { readonly index: number; readonly mount: Mount | undefined } => {
  for (let index = paths.steps.length - 1; index >= 0; index--) {
    const step = paths.steps[index]!
    if (isMount(step) && within(path, step.path)) return { index, mount: step }
  }
  return { index: -1, mount: undefined }
}

const showsHost = (shows: Mount["shows"]): shows is "read" | "write" => shows === "read" || shows === "write"

/** A mount after `after` strictly below `directory` that shows the host's files: the way to it crosses `directory`. */
const leadsToHost = (paths: Paths, directory: string, after: number): boolean =>
  paths.steps.some((step, index) => index > after && isMount(step) && showsHost(step.shows) && step.path !== directory && within(step.path, directory))

/** Why a path is refused, and the mount point that says so (none: nothing is mounted there). */
interface Refusal {
  readonly rule: Rule
  readonly at: string | undefined
}

/** Why `path` (a real path) is refused for `access`; undefined when it is not. */
const refusal = (paths: Paths, path: string, access: Access): Refusal | undefined => {
  const { index, mount } = deciding(paths, path)
  const shows = mount?.shows ?? "replaced"
  if (!showsHost(shows)) {
    return access === "list" && leadsToHost(paths, path, index) ? undefined : { rule: shows, at: mount?.path }
  }
  if (access !== "write") return undefined
  const remounted = paths.steps.some((step, later) => later > index && !isMount(step) && within(path, step.readOnly))
  return shows === "write" && !remounted ? undefined : { rule: "readOnly", at: mount?.path }
}

/**
 * How a walk treats `path` (a real path, the walk's own: links are not followed): `"all"`, seen
 * with everything below it; `"some"`, a directory whose entries each need asking; `"none"`, skipped.
 *
 * @since 0.1.0
 * @category combinators
 */
export const fence = (paths: Paths, path: string, directory: boolean): "all" | "some" | "none" => {
  const { index, mount } = deciding(paths, path)
  const readable = mount !== undefined && showsHost(mount.shows)
  if (!directory) return readable ? "all" : "none"
  if (!readable) return leadsToHost(paths, path, index) ? "some" : "none"
  const below = paths.steps.some((step, later) => later > index && isMount(step) && step.path !== path && within(step.path, path))
  return below ? "some" : "all"
}

/** "Path <display>", with the real path when links (or `..`) lead elsewhere. */
const named = (display: string, real: string) => display === real ? `Path ${display}` : `Path ${display} (real path ${real})`

const sentence = (paths: Paths, refused: Refusal, display: string, real: string): string => {
  const path = named(display, real)
  switch (refused.rule) {
    case "denyRead":
      return `${path} is denied by the sandbox's confinement (denyRead): its commands cannot read it either`
    case "envAbove":
      return `${path} is denied by the sandbox's confinement (a .env file above the working directory): its commands cannot read it either`
    case "tmp":
      return `${path} is in the host's /tmp, which the sandbox's confinement hides (its commands get a private /tmp): keep the files you need under the working directory`
    case "replaced":
      return refused.at === undefined
        ? `${path} is not visible in the sandbox's confinement: nothing of the host is mounted there`
        : `${path} is not visible in the sandbox's confinement: its commands get their own ${refused.at}`
    case "readOnly":
      return `${path} is outside the writable paths of the sandbox's confinement (${paths.writable.join(", ")}): its commands cannot write there either`
  }
}

/**
 * `real` when `access` to it is allowed, otherwise the refusal `allowedPaths` gives too
 * (`OutsideAllowedPaths`), its sentence naming the rule; `display` is the path as the caller
 * expanded it.
 *
 * @since 0.1.0
 * @category combinators
 */
export const check = (paths: Paths, real: string, display: string, access: Access): Result.Result<string, Sandbox.OutsideAllowedPaths> => {
  const refused = refusal(paths, real, access)
  return refused === undefined
    ? Result.succeed(real)
    : Result.fail(new Sandbox.OutsideAllowedPaths({ path: display, allowed: paths.writable, description: sentence(paths, refused, display, real) }))
}

/**
 * The refusal, if any, of what descriptor `fd` opened, by the path the kernel says it has
 * (`/proc/self/fd`): a command swapping a directory for a link between the check and the open
 * cannot lead the file methods past the rules. A descriptor whose path cannot be read is refused.
 *
 * @since 0.1.0
 * @category combinators
 */
export const checkOpened = (paths: Paths, fd: number, display: string, access: Access): Sandbox.OutsideAllowedPaths | undefined => {
  let opened: string
  try {
    opened = NodeFs.readlinkSync(`/proc/self/fd/${fd}`).replace(/ \(deleted\)$/, "")
  } catch {
    return new Sandbox.OutsideAllowedPaths({
      path: display,
      allowed: paths.writable,
      description: `Path ${display} cannot be checked against the sandbox's confinement: /proc/self/fd is not readable`
    })
  }
  return Result.match(check(paths, opened, display, access), { onFailure: (refused) => refused, onSuccess: () => undefined })
}

/**
 * A walk's fence over `paths` (`fence`); none when the sandbox is not confined.
 *
 * @since 0.1.0
 * @category combinators
 */
export const walkFence = (paths: Paths | undefined): WalkFiles.Fence | undefined =>
  paths === undefined ? undefined : (absolute, directory) => fence(paths, absolute, directory)

/**
 * The check of a descriptor opened for `display` (`checkOpened`); none when the sandbox is not confined.
 *
 * @since 0.1.0
 * @category combinators
 */
export const openedCheck = (paths: Paths | undefined, display: string, access: Access): RegularFile.Check | undefined =>
  paths === undefined ? undefined : (fd) => checkOpened(paths, fd, display, access)

/**
 * The entries of the directory `directory` (a real path) a command would see there: a link is
 * seen (what it leads to is checked when it is opened), a hidden file or folder is not.
 *
 * @since 0.1.0
 * @category combinators
 */
export const visibleEntries = <Entry extends { readonly name: string; isDirectory(): boolean }>(
  paths: Paths | undefined,
  directory: string,
  entries: ReadonlyArray<Entry>
): ReadonlyArray<Entry> => {
  if (paths === undefined || fence(paths, directory, true) === "all") return entries
  const base = directory === "/" ? "" : directory
  return entries.filter((entry) => fence(paths, `${base}/${entry.name}`, entry.isDirectory()) !== "none")
}

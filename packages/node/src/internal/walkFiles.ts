/**
 * walkFiles — the directory walk behind LocalSandbox's `glob` and `grep`: the regular files under
 * a root that a `GlobPattern` admits, as paths relative to the root, sorted.
 *
 * It refuses symlinks (never followed nor reported, as ripgrep and fast-glob without
 * `followSymbolicLinks` do, so a link cannot lead a walk out of an allowed directory) and every
 * other non-regular entry (FIFOs, sockets, devices are never opened by anyone downstream). The
 * pattern prunes: a directory whose state is `undefined` is never read, and a walk starts at the
 * pattern's literal `base`, so a hostile pattern costs one automaton step per entry seen, never
 * an expansion (docs/decisions/0008).
 *
 * Why synchronous I/O: over 21,000 files, `fs.promises` took 570–1,000 ms where `readdirSync`
 * took ~200 ms. The walk is cut into slices of directories with a yield between them, so other
 * fibers run and interruption lands between slices.
 */
import * as NodeFs from "node:fs"
import { Effect } from "effect"
import type * as GlobPattern from "@condukt/core/GlobPattern"
import { Failed, PermissionDenied } from "@condukt/core/Sandbox"

const sliceDirectories = 64

/**
 * Runs `step` until it reports completion, yielding to the event loop between slices.
 *
 * @since 0.1.0
 * @category combinators
 */
export const inSlices = (step: () => boolean): Effect.Effect<void> => {
  let done = false
  return Effect.whileLoop({
    while: () => !done,
    body: () => Effect.andThen(Effect.sync(() => {
      done = step()
    }), Effect.yieldNow),
    step: () => {}
  })
}

/**
 * The errno code of a Node failure, when it has one.
 *
 * @since 0.1.0
 * @category constructors
 */
export const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

/**
 * Which paths a walk may see (a confined sandbox's rules: `sandbox/ConfinedPaths.ts`), asked of an
 * absolute path, and whether it is a directory: `"all"`, it and everything below it; `"some"`, a
 * directory whose entries are each asked; `"none"`, skipped.
 *
 * @since 0.1.0
 * @category models
 */
export type Fence = (absolute: string, directory: boolean) => "all" | "some" | "none"

interface Directory {
  readonly absolute: string
  readonly relative: string
  readonly state: GlobPattern.State
  /** Its entries are asked of the fence. */
  readonly fenced: boolean
}

/**
 * Regular files under the directory `root` admitted by `glob` from `state` (and by `fence`, when
 * given), relative to `root` (each prefixed with `prefix/` when a prefix is given), sorted. Only
 * `root` itself failing to be listed is an error (named `display`); a directory below that vanished
 * or cannot be listed holds nothing we can search.
 *
 * @since 0.1.0
 * @category combinators
 */
export const walk = (
  root: string,
  display: string,
  glob: GlobPattern.GlobPattern,
  state: GlobPattern.State = glob.root,
  prefix = "",
  fence?: Fence
): Effect.Effect<Array<string>, PermissionDenied | Failed> =>
  Effect.suspend(() => {
    const files: Array<string> = []
    const pending: Array<Directory> = []
    const visit = (directory: Directory): void => {
      // `root` is "/" or has no trailing slash.
      const base = directory.absolute === "/" ? "" : directory.absolute
      for (const entry of NodeFs.readdirSync(directory.absolute, { withFileTypes: true })) {
        const relative = directory.relative === "" ? entry.name : `${directory.relative}/${entry.name}`
        if (entry.isDirectory()) {
          const inside = glob.enter(directory.state, entry.name)
          if (inside === undefined) continue
          const absolute = `${base}/${entry.name}`
          const seen = directory.fenced ? fence!(absolute, true) : "all"
          if (seen !== "none") pending.push({ absolute, relative, state: inside, fenced: seen === "some" })
        } else if (entry.isFile() && glob.matches(directory.state, entry.name)) {
          if (!directory.fenced || fence!(`${base}/${entry.name}`, false) !== "none") files.push(relative)
        }
      }
    }
    const fenced = fence === undefined ? false : fence(root, true)
    const start = Effect.try({
      // A root the fence refuses holds nothing it may see.
      try: () => fenced === "none" ? undefined : visit({ absolute: root, relative: prefix, state, fenced: fenced === "some" }),
      catch: (error) => {
        const code = errorCode(error)
        return code === "EACCES" || code === "EPERM"
          ? new PermissionDenied({ path: display })
          : new Failed({ description: `Cannot search ${display}: ${code ?? String(error)}`, cause: error })
      }
    })
    const rest = inSlices(() => {
      for (let n = 0; n < sliceDirectories && pending.length > 0; n++) {
        try {
          visit(pending.pop()!)
        } catch {
          // A directory that vanished or cannot be listed holds nothing we can search.
        }
      }
      return pending.length === 0
    })
    return Effect.as(Effect.andThen(start, rest), files)
  }).pipe(Effect.map((files) => files.sort()))
